"""Python frames in the stacks of a Python program whose allocation sites
sit at known lines (known_lines.py, run by Debian 12's CPython 3.11 with
PYTHONMALLOC=malloc): each site keeps one block of its own size a batch,
so its stack is the one growing by that many bytes a batch, and its
Python frames must be the chain the test expects, innermost first: the
script's own frames at the lines its marker comments (`# SITE:x`,
`# CALL:x`) are on, the standard library's (asyncio's event loop,
threading's bootstrap) by name, at the lines the interpreter itself gave
(known_lines.py writes its sys._getframe chains; they must agree with the
markers first).  Checked in the three --python-frames modes, with
--group-by-site, and on a recording made with --no-python; and a
deterministic Python program makes the same calls with and without
Python frames.

Expected to fail until heapslope records Python frames: every test
fails (none skips) saying what is missing.

Environment (set by tests/python/meson.build), besides pyframes_common's:
  HEAPSLOPE_PY_KNOWN_LINES  known_lines.py
"""
import json
import os
import re

from pyframes_common import (EVAL_FRAME, PYTHON, PY_ENV, analyze,
                             analyze_mode, check, check_eq, check_kinds,
                             counts, fail, has_python, main,
                             native_functions, python_frames, record,
                             report_text, stack_text, tmpdir)
from common import check_complete, dump_stats  # noqa: E402 (its path)

SCRIPT = os.path.abspath(os.environ.get("HEAPSLOPE_PY_KNOWN_LINES", ""))
BATCHES = 12
# The sites and more: a Python trace has ~30,000 stacks, and analyze
# takes minutes to report them all
TOP = "60"
# bytearray(n) mallocs n + 1 bytes, and its object header comes from the
# same line; the sizes are 17% apart
REL = 0.01

MODULE = ("<module>", "CALL:one_batch")


def via(call):
    """one_batch's call to the site's function, and the module's loop."""
    return [("one_batch", "CALL:" + call), MODULE]


# Each site's Python frames, innermost first: (qualname, marker) for the
# script's frames, (qualname, file name) for the standard library's.
# asyncio: the task's step is C (_asyncio), so the coroutine is called
# by Handle._run's context.run(); threading: Thread.run calls the target.
EXPECTED = {
    "module": [("<module>", "SITE:module")],
    "plain": [("plain", "SITE:plain")] + via("plain"),
    "ctypes": [("c_call", "SITE:ctypes")] + via("ctypes"),
    "gen": [("generate", "SITE:gen"), ("drive_generator", "CALL:gen")]
    + via("drive_generator"),
    "coro_send": [("coroutine", "SITE:coro_send"),
                  ("drive_coroutine", "CALL:coro_send")]
    + via("drive_coroutine"),
    "asyncio": [("async_leaf", "SITE:asyncio"),
                ("async_task", "CALL:asyncio"),
                ("Handle._run", "events.py"),
                ("BaseEventLoop._run_once", "base_events.py"),
                ("BaseEventLoop.run_forever", "base_events.py"),
                ("BaseEventLoop.run_until_complete", "base_events.py"),
                ("drive_asyncio", "CALL:asyncio_loop")]
    + via("drive_asyncio"),
    "except_direct": [("except_direct", "SITE:except_direct")]
    + via("except_direct"),
    "except_callee": [("except_callee", "SITE:except_callee"),
                      ("except_calls", "CALL:except_callee")]
    + via("except_calls"),
    # raiser's frame is gone when the finally block runs
    "finally_direct": [("unwinds", "SITE:finally_direct"),
                       ("catches_unwind", "CALL:unwinds")]
    + via("catches_unwind"),
    "finally_callee": [("finally_callee", "SITE:finally_callee"),
                       ("unwinds", "CALL:finally_callee"),
                       ("catches_unwind", "CALL:unwinds")]
    + via("catches_unwind"),
    "thread": [("thread_body", "SITE:thread"),
               ("Thread.run", "threading.py"),
               ("Thread._bootstrap_inner", "threading.py"),
               ("Thread._bootstrap", "threading.py")],
    "native_thread": [],
    "shared_1": [("shared", "SITE:shared")] + via("shared_1"),
    "shared_2": [("shared", "SITE:shared")] + via("shared_2"),
    "method": [("Model.step", "SITE:method")] + via("method"),
    "nested": [("outer.<locals>.inner", "SITE:nested"),
               ("outer", "CALL:nested")] + via("outer"),
    # 3.11: a comprehension is a function of its own, on the same line
    "listcomp": [("comprehension.<locals>.<listcomp>", "SITE:listcomp"),
                 ("comprehension", "SITE:listcomp")] + via("comprehension"),
}


def markers():
    """marker -> line number, from the script's comments."""
    found = {}
    with open(SCRIPT) as f:
        for n, text in enumerate(f, 1):
            for m in re.finditer(r"#\s*((?:SITE|CALL):\w+)", text):
                check(m.group(1) not in found,
                      f"{SCRIPT}: marker {m.group(1)} twice")
                found[m.group(1)] = n
    return found


def expected_chains(truth):
    """site -> [(function, file, line)], from EXPECTED and the markers;
    the standard library's lines from the interpreter's chain, which
    must agree with the markers on the script's own frames."""
    lines = markers()
    chains = {}
    for site, spec in EXPECTED.items():
        got = [tuple(f) for f in truth["chains"].get(site, [])]
        want = []
        for i, (fn, where) in enumerate(spec):
            if where.endswith(".py"):
                f = got[i] if i < len(got) else (fn, where, None)
                check(f[0] == fn and os.path.basename(f[1]) == where,
                      f"test bug: site {site}: frame {i} of the "
                      f"interpreter's chain is {f}, expected {fn} in "
                      f"{where}: {got}")
                want.append(f)
            else:
                check(where in lines, f"{SCRIPT}: no marker {where}")
                want.append((fn, SCRIPT, lines[where]))
        check_eq(got, want, f"test bug: site {site}: the interpreter's own "
                 "chain (sys._getframe) against the markers")
        chains[site] = want
    return chains


class Recording:
    """known_lines.py recorded once per test run (with or without Python
    frames): the trace, the sizes and the expected chains."""
    cache = {}

    @classmethod
    def get(cls, python=True):
        if python not in cls.cache:
            check(os.path.isfile(SCRIPT),
                  f"HEAPSLOPE_PY_KNOWN_LINES={SCRIPT!r} is not a file")
            d = tmpdir()
            name = "py" if python else "nopy"
            truth_path = os.path.join(d.name, name + ".json")
            # with Python frames, each capture is also checked against
            # a full read of the frames (test_shortcuts)
            env = dict(PY_ENV, HEAPSLOPE_TEST_PY_VERIFY="1") if python \
                else PY_ENV
            r = record([PYTHON, SCRIPT, str(BATCHES), truth_path], d.name,
                       opts=() if python else ("--no-python",),
                       output=name + ".hst", env=env)
            with open(truth_path) as f:
                truth = json.load(f)
            rec = cls()
            rec.dir, rec.trace = d, r.trace()
            rec.sizes = truth["sizes"]
            rec.chains = expected_chains(truth)
            cls.cache[python] = rec
        return cls.cache[python]


def site_stack(report, site, size, what):
    """The one stack growing by size bytes a batch."""
    found = [s for s in report["stacks"]
             if abs(s["bytes_per_batch"] - size) <= REL * size]
    if len(found) != 1:
        fail(f"{what}: site {site}: {len(found)} stacks grow by ~{size} "
             f"B/batch, expected one; the fastest-growing stacks:\n" +
             report_text(report))
    return found[0]


def chain_text(chain):
    return "\n".join(f"    {fn} {file}:{line}" for fn, file, line in chain)


def check_chain(stack, want, site, what):
    got = python_frames(stack)
    if got != want:
        i = next(i for i, (a, b) in enumerate(zip(got + [None] * len(want),
                                                  want + [None] * len(got)))
                 if a != b)
        fail(f"{what}: site {site}: Python frames (first difference: "
             f"frame {i})\n{chain_text(got)}\n"
             f"  expected\n{chain_text(want)}\n  the stack:\n" +
             stack_text(stack))


def runs(stack):
    """The stack's functions with each run of Python frames as one
    EVAL_FRAME: what the native stack was before merging."""
    out = []
    for f in stack["frames"]:
        if f.get("kind") != "python":
            out.append(f.get("function"))
        elif not out or out[-1] is not EVAL_FRAME:
            out.append(EVAL_FRAME)
    return out


def test_merged():
    rec = Recording.get()
    rep = analyze_mode(rec.trace, "merged", top=TOP)
    default = analyze(rec.trace, "--top", TOP)
    check_kinds(default, "default mode")
    check(default["stacks"] == rep["stacks"],
          "the default mode's stacks are not --python-frames=merged's")
    check_eq(rep["batches"]["count"], BATCHES, "batches.count")
    for site, chain in rec.chains.items():
        s = site_stack(rep, site, rec.sizes[site], "merged")
        check_chain(s, chain, site, "merged")
        fr = s["frames"]
        check(fr and fr[0]["kind"] == "native",
              f"merged: site {site}: the innermost frame is not the "
              f"allocator's (native)\n" + stack_text(s))
        check(EVAL_FRAME not in native_functions(s),
              f"merged: site {site}: a {EVAL_FRAME} frame is left in place "
              f"of its Python frames\n" + stack_text(s))
        if chain:
            # the innermost Python frame is the marked line, under native
            # frames only
            first = next(i for i, f in enumerate(fr) if f["kind"] == "python")
            check(all(f["kind"] == "native" for f in fr[:first]) and
                  first > 0, f"merged: site {site}: native frames are not "
                  f"all inside the Python frames\n" + stack_text(s))


def test_python_only():
    rec = Recording.get()
    rep = analyze_mode(rec.trace, "python", top=TOP)
    for site, chain in rec.chains.items():
        s = site_stack(rep, site, rec.sizes[site], "python")
        # a thread that never ran Python keeps its native frames
        kind = "python" if chain else "native"
        check(s["frames"] and all(f["kind"] == kind for f in s["frames"]),
              f"python: site {site}: not all frames {kind}\n" +
              stack_text(s))
        check_chain(s, chain, site, "python")


def merged_from_native(frames):
    """What merging makes of a native stack, as runs() shows it: each
    eval frame one run of Python frames; outside the innermost, the
    interpreter's own frames (those the recorder kept) and the C
    library's start-up frames left out."""
    out, interp = [], None
    for f in frames:
        fn, mod = f.get("function"), os.path.basename(f.get("module") or "")
        if fn == EVAL_FRAME:
            interp = mod
            if not out or out[-1] is not EVAL_FRAME:
                out.append(EVAL_FRAME)
        elif interp is None or (mod != interp and
                                not mod.startswith("libc.so")):
            out.append(fn)
    return out


def test_native_only():
    """No Python frame; the same totals and growth (stacks the same but
    for their Python frames may be one here); and where a site's
    native stack is its own, the merged stack is that stack with each
    _PyEval_EvalFrameDefault replaced by Python frames, native frames
    between them in place."""
    rec = Recording.get()
    nat = analyze_mode(rec.trace, "native", top=TOP)
    merged = analyze_mode(rec.trace, "merged", top=TOP)
    check(not has_python(nat), "native: Python frames in the report:\n" +
          report_text(nat))
    check_eq(nat["totals"], merged["totals"], "native vs merged: totals")
    check_eq(nat["growth"], merged["growth"], "native vs merged: growth")
    compared = []
    for site, size in rec.sizes.items():
        own = [s for s in nat["stacks"]
               if abs(s["bytes_per_batch"] - size) <= REL * size]
        if len(own) != 1:
            continue  # its native stack is shared with other sites
        m = site_stack(merged, site, size, "merged")
        want = merged_from_native(own[0]["frames"])
        if runs(m) != want:
            fail(f"site {site}: the merged stack is not the native one "
                 f"with each {EVAL_FRAME} replaced by Python frames\n"
                 f"  native:\n{stack_text(own[0])}\n  merged:\n" +
                 stack_text(m))
        compared.append(site)
    # ctypes, gen, coro_send, asyncio, thread and native_thread have C
    # paths of their own
    check(len(compared) >= 5, f"only sites {compared} have a native stack "
          "of their own in --python-frames=native:\n" + report_text(nat))


def test_group_by_site():
    """Sites are the innermost Python line: shared's two callers are one
    site, with both callers' paths under it."""
    rec = Recording.get()
    rep = analyze_mode(rec.trace, "merged", "--group-by-site",
                       top=TOP)
    for sites in (("shared_1", "shared_2"), ("plain",), ("asyncio",),
                  ("thread",)):
        inner = rec.chains[sites[0]][0]
        size = sum(rec.sizes[s] for s in sites)
        found = [s for s in rep["stacks"] if python_frames(s)[:1] == [inner]]
        if len(found) != 1:
            fail(f"--group-by-site: {len(found)} sites at {inner}, "
                 f"expected one:\n" + report_text(rep))
        got = found[0]["bytes_per_batch"]
        check(abs(got - size) <= REL * size,
              f"--group-by-site: the site at {inner} grows by {got} "
              f"B/batch, expected ~{size} (sites {sites})\n" +
              stack_text(found[0]))
        paths = found[0].get("paths")
        check(isinstance(paths, list) and paths,
              f"--group-by-site: no paths under the site at {inner}")
        for s in sites:
            check(any(python_frames(p) == rec.chains[s] for p in paths),
                  f"--group-by-site: site {inner}: no path is site {s}'s "
                  f"chain\n{chain_text(rec.chains[s])}\n  paths:\n" +
                  "\n".join(stack_text(p) for p in paths))
    size = rec.sizes["native_thread"]
    s = site_stack(rep, "native_thread", size, "--group-by-site")
    check(not python_frames(s), "--group-by-site: the native thread's "
          "site has Python frames\n" + stack_text(s))


def test_no_python():
    """record --no-python: native frames only, the same sites."""
    rec = Recording.get(python=False)
    rep = analyze_mode(rec.trace, "merged", top=TOP)
    check(not has_python(rep), "record --no-python: Python frames in the "
          "report:\n" + report_text(rep))
    for site in ("ctypes", "thread", "native_thread"):
        s = site_stack(rep, site, rec.sizes[site], "--no-python")
        check(EVAL_FRAME in native_functions(s) or site == "native_thread",
              f"--no-python: site {site}: no {EVAL_FRAME} frame\n" +
              stack_text(s))
    with_py = analyze_mode(Recording.get().trace, "merged", top=TOP)
    for r, frames in ((rep, False), (with_py, True)):
        prog = r["program"]
        check(prog["python"] and prog["python_frames"] == frames and
              (prog["python_version"] or "").startswith("3.11.") == frames,
              f"program.python_frames/python_version: {prog}")
    a, b = (r["growth"]["live_bytes_per_batch"] for r in (rep, with_py))
    check(abs(a - b) <= REL * b, f"live_bytes_per_batch: {a} with "
          f"--no-python, {b} without")


# deterministic: the same calls every run (PYTHONHASHSEED fixed)
COUNTED = '''import ctypes
mark = getattr(ctypes.CDLL(None), "heapslope_mark_batch", lambda: None)


def f(n):
    return [bytearray(16 + k) for k in range(n)]


kept = []
for i in range(12):
    kept.append([f(k % 50) for k in range(40)])
    mark()
'''


def batch_counts(rep):
    return [(b["allocations"], b["frees"], b["allocated_bytes"])
            for b in rep["batches"]["series"][1:]]


def test_counts():
    """Taking Python frames makes the program call malloc no more and no
    less: the same counts with and without --no-python."""
    with tmpdir() as d:
        reps = {}
        # trace names of one length: the program's environment holds
        # the trace's path, and a longer one can cost an allocation more
        for name, opts in (("py-on", ()), ("py-no", ("--no-python",))):
            r = record([PYTHON, "-S", "-c", COUNTED], d, opts=opts,
                       output=name + ".hst", env=PY_ENV)
            reps[name] = analyze_mode(r.trace(), "merged", top=TOP)
        # the batches' counts: the start-up's depend on the environment
        # (the recorder's variables hold a pid and an inode number, whose
        # digits can cost Python an allocation more or less)
        check_eq(batch_counts(reps["py-on"]), batch_counts(reps["py-no"]),
                 "the same Python program with and without --no-python: "
                 "allocations and frees of each batch")
        lines = COUNTED.splitlines()
        comp = next(i for i, t in enumerate(lines, 1) if "bytearray" in t)
        loop = next(i for i, t in enumerate(lines, 1) if "kept.append" in t)
        want = [("f.<locals>.<listcomp>", "<string>", comp),
                ("f", "<string>", comp), ("<listcomp>", "<string>", loop),
                ("<module>", "<string>", loop)]
        top = reps["py-on"]["stacks"][:4]
        check(any(python_frames(s) == want for s in top),
              "python3 -c: no stack of the first four allocates in f's "
              f"list comprehension:\n{chain_text(want)}\n" +
              "\n".join(stack_text(s) for s in top))
        check(not has_python(reps["py-no"]), "--no-python: Python frames")


def test_shortcuts():
    """A capture at the place of the thread's previous one, or one
    instruction further on in the same frames, or that meets the previous
    one's frames further out, takes them without reading them anew: in
    the recording of known_lines.py each capture was also checked against
    a full read (HEAPSLOPE_TEST_PY_VERIFY), which stops recording at the
    first difference."""
    stats = dump_stats(Recording.get(python=True).trace, allow_error=True)
    check("stopped" not in stats,
          f"recording stopped: {stats.get('stopped')}")
    check_eq(stats["_rc"], 0, "dump --stats of the Python recording")
    check_complete(stats, "the Python recording")


if __name__ == "__main__":
    main([test_merged, test_python_only, test_native_only,
          test_group_by_site, test_no_python, test_counts, test_shortcuts])
