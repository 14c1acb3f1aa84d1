#!/usr/bin/env python3
"""--allocator: the program runs on glibc, jemalloc, tcmalloc or mimalloc
underneath the recorder, with the same exact counts, the allocator named in
the trace header, and the program unchanged.

The Debian packages libjemalloc2, libtcmalloc-minimal4 and libmimalloc2.0
must be installed: a missing one fails this test (CI installs them).

jemalloc has no pvalloc: glibc's serves the call from glibc's own heap and
jemalloc's free of that block crashes, natively too (measured: counts
pvalloc under LD_PRELOAD=libjemalloc.so.2 dies of SIGSEGV).  pvalloc and
mix (which calls it) are not run under jemalloc.

jemalloc, tcmalloc and mimalloc define C++ operator new and delete
themselves, so a C++ program's new never reaches malloc: the recorder
interposes the operators too.  mimalloc, built as C, aborts where the
others throw bad_alloc (measured: cxxnew 0 throw under
LD_PRELOAD=libmimalloc.so.2 dies of SIGABRT): under mimalloc the throwing
failures are only checked to abort as they do natively.
"""
import collections
import json
import os
import re
import shutil
import subprocess

from common import (ALLOC_RECS, HEAPSLOPE, LIB, PROGRAMS, Replay, check,
                    check_complete, check_counts, check_eq, dump_lines,
                    dump_stats, fail, load, main, no_core, prog, record, run,
                    tmpdir)
from test_counts import expected
from test_dlopen import segments

# name -> (soname, Debian package); glibc preloads nothing
ALLOCATORS = {
    "glibc": (None, None),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    "mimalloc": ("libmimalloc.so.2", "libmimalloc2.0"),
}
FNS = ["malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
       "aligned_alloc", "memalign", "valloc", "pvalloc", "free"]
NO_PVALLOC = {"jemalloc"}
NO_THROW = {"mimalloc"}

# the library each allocator was found at, from the first trace
found = {}


def header(path):
    """The dump's header lines, joined."""
    p = subprocess.run([HEAPSLOPE, "dump", path], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"dump {path} failed: {p.stderr}")
    return "\n".join(ln for ln in p.stdout.splitlines()
                     if ln.startswith("#"))


def modules(path):
    """Paths of the trace's module records, in link-map order."""
    out = []
    for line in dump_lines(path):
        if " module " in line:
            out.append(line.split(' path="', 1)[1].split('"', 1)[0])
    return out


def check_named(path, name, what):
    """The header and --stats name the allocator."""
    s = dump_stats(path)
    check_eq(s.get("allocator"), name, f"{what}: dump --stats allocator")
    h = header(path)
    m = re.search(r"^#.* allocator (\S+)", h, re.M)
    check(m and m.group(1) == name,
          f"{what}: dump header does not name allocator {name}:\n{h}")
    return s


def check_underneath(path, soname, what):
    """The allocator is loaded after the recorder and before libc, so the
    recorder's dlsym(RTLD_NEXT) finds it; returns its path."""
    mods = [os.path.basename(m) for m in modules(path)]
    names = set(s for s, _ in ALLOCATORS.values() if s)
    if soname is None:
        check(not names & set(mods),
              f"{what}: an allocator library is loaded: {mods}")
        return None
    check(soname in mods, f"{what}: {soname} is not loaded: {mods}")
    i = mods.index(soname)
    check("libheapslope.so" in mods[:i] and
          any(m.startswith("libc.so") for m in mods[i + 1:]),
          f"{what}: expected libheapslope.so, then {soname}, then libc: "
          f"{mods}")
    return modules(path)[i]


def baseline(name, d):
    """Counts of the empty victim on this allocator."""
    r = record([prog("empty")], d, opts=["--allocator", name],
               output=f"empty-{name}.hst")
    s = check_named(r.trace(), name, f"empty on {name}")
    check_complete(s, f"empty on {name}")
    return s


def test_exact_counts():
    """Each function, n calls, on each allocator: exact counts, the same
    as on glibc."""
    with tmpdir() as d:
        for name, (soname, package) in ALLOCATORS.items():
            b = baseline(name, d)
            for i, fn in enumerate(FNS):
                if fn == "pvalloc" and name in NO_PVALLOC:
                    continue
                n = 101 + 37 * i
                what = f"counts {fn} {n} on {name}"
                r = record([prog("counts"), fn, str(n)], d,
                           opts=["--allocator", name],
                           output=f"{name}-{fn}.hst")
                check_eq(r.out, b"", f"{what}: stdout")
                s = check_named(r.trace(), name, what)
                a, f, re_, nbytes = expected(n, fn)
                want = {"allocations": a, "frees": f, "reallocs": re_,
                        "failed_allocations": 0, "allocated_bytes": nbytes}
                check_counts(s, {k: v + b[k] for k, v in want.items()}, what)
                check_complete(s, what)
                check_eq(s.get("exit_status"), 0, f"{what}: exit_status")
                if fn == "malloc":
                    found[name] = check_underneath(r.trace(), soname, what)


def test_mix():
    rounds = 500
    with tmpdir() as d:
        for name in ALLOCATORS:
            if name in NO_PVALLOC:
                continue
            r = record([prog("counts"), "mix", str(rounds)], d,
                       opts=["--allocator", name], output=f"mix-{name}.hst")
            s = check_named(r.trace(), name, f"mix on {name}")
            check_counts(s, {"allocations": 9 * rounds, "frees": 9 * rounds,
                             "reallocs": 2 * rounds,
                             "failed_allocations": 0}, f"mix on {name}")
            check_complete(s, f"mix on {name}")


def test_mallinfo_only_glibc():
    """Marks sample mallinfo2 on glibc only, even when asked to at every
    mark: another allocator's blocks are not in glibc's arena."""
    with tmpdir() as d:
        for name in ALLOCATORS:
            r = record([prog("counts"), "marks", "5"], d,
                       opts=["--allocator", name, "--interval", "0",
                             "--mallinfo=always"],
                       output=f"marks-{name}.hst")
            samples = [ln for ln in dump_lines(r.trace())
                       if " sample " in ln]
            check_eq(len(samples), 10, f"marks on {name}: samples")
            with_mi = sum(1 for ln in samples if " arena=" in ln)
            check_eq(with_mi, 10 if name == "glibc" else 0,
                     f"marks on {name}: samples with mallinfo2")


def test_output_unchanged():
    stdin = b"a line\nanother\n"
    with tmpdir() as d:
        nat = run([prog("io"), "3", "x y"], cwd=d, stdin=stdin)
        check_eq(nat.rc, 3, "io 3 natively (test assumption)")
        for name in ALLOCATORS:
            r = record([prog("io"), "3", "x y"], d, stdin=stdin, ok=False,
                       opts=["--allocator", name], output=f"io-{name}.hst",
                       preexec=no_core)
            what = f"io 3 on {name}"
            check_eq(r.rc, 3, f"{what}: exit status\n" + r.describe())
            check_eq(r.out, nat.out, f"{what}: stdout")
            check_eq(r.victim_err, nat.err, f"{what}: stderr")
            s = check_named(r.trace(), name, what)
            check_complete(s, what)


def test_children_keep_allocator():
    """An exec'd program runs on the same allocator, recorded or not
    (--no-follow); the user's LD_PRELOAD comes after ours."""
    user = os.environ["HEAPSLOPE_VICTIM_LIB"]
    # the CLI starts with the user's LD_PRELOAD too: a sanitizer build of
    # it must not insist on coming first
    asan = [o for o in os.environ.get("ASAN_OPTIONS", "").split(":") if o]
    env = dict(os.environ, LD_PRELOAD=user,
               ASAN_OPTIONS=":".join(asan + ["verify_asan_link_order=0"]))
    env.pop("HEAPSLOPE_ALLOCATOR", None)
    envprog = shutil.which("env")
    check(envprog, "no env program")
    with tmpdir() as d:
        for name in ("jemalloc", "glibc"):
            for follow in (True, False):
                what = f"execer env on {name}" + ("" if follow else
                                                  " --no-follow")
                opts = ["--allocator", name] + ([] if follow else
                                                ["--no-follow"])
                out = f"exec-{name}-{int(follow)}.hst"
                r = record([prog("execer"), "2", envprog], d, opts=opts,
                           output=out, env=env)
                vars_ = dict(ln.split("=", 1) for ln in
                             r.out.decode().splitlines() if "=" in ln)
                pre = vars_.get("LD_PRELOAD", "").split()
                want = [LIB] if follow else []
                if name != "glibc":
                    want.append(found.get(name) or fail(
                        f"{what}: test_exact_counts found no {name}"))
                want.append(user)
                check_eq([os.path.realpath(p) for p in pre],
                         [os.path.realpath(p) for p in want],
                         f"{what}: LD_PRELOAD of the exec'd program")
                check_eq(vars_.get("HEAPSLOPE_ALLOCATOR"), name,
                         f"{what}: HEAPSLOPE_ALLOCATOR")
                check_eq(len(r.traces), 2 if follow else 1,
                         f"{what}: traces {r.traces}")
                for t in r.traces:
                    s = check_named(t, name, what)
                    check_complete(s, what)


def test_path():
    """A path, relative or absolute, is preloaded as given; the header
    names its file."""
    lib = found.get("mimalloc") or fail("test_exact_counts found no "
                                        "mimalloc")
    with tmpdir() as d:
        for arg in (lib, os.path.relpath(lib, d)):
            check("/" in arg, f"{arg}: not a path")
            base = os.path.basename(lib)
            r = record([prog("counts"), "malloc", "300"], d,
                       opts=["--allocator", arg], output="path.hst")
            s = check_named(r.trace(), base, f"--allocator {arg}")
            check_counts(s, {"allocations": 300, "frees": 300},
                         f"--allocator {arg}")
            check_complete(s, f"--allocator {arg}")
            check_underneath(r.trace(), "libmimalloc.so.2",
                             f"--allocator {arg}")
            os.unlink(os.path.join(d, "path.hst"))


# cxxnew: per round 15 allocations and 15 frees, 8 malloc (new, new[],
# their nothrow forms, a new-expression of 24 bytes and one of 4 n), 7
# aligned_alloc (aligned new, 128 bytes for an over-aligned type)
CXX_ROUNDS = 37
CXX_PER_ROUND = {"malloc": 8, "aligned_alloc": 7, "free": 15}
# failures: (failed malloc, failed aligned_alloc, exception blocks)
CXX_FAILURES = {"": (0, 0, 0), "throw": (3, 1, 4), "nothrow": (2, 1, 0)}
SITE_RECS = {"malloc", "aligned_alloc", "failed malloc",
             "failed aligned_alloc"}


def cxx_bytes(rounds):
    return sum(16 * n + 152 for n in (16 + i % 64 for i in range(rounds)))


def code_of(evs, path):
    """Executable ranges of the module at path."""
    mods = [e for e in evs if e.rec == "module" and
            os.path.realpath(e.kv.get("path", "")) == os.path.realpath(path)]
    check_eq(len(mods), 1, f"module lines for {path}")
    code = [(lo, hi) for lo, hi, fl in segments(mods[0]) if "x" in fl]
    check(code, f"{path}: no executable segment")
    return code


def sites_in(evs, st, code):
    """Allocation and failure events whose innermost frame is in code."""
    out = []
    for e in evs:
        if e.rec in SITE_RECS:
            f = st.frames(e.int("stack"))
            if f and any(lo <= f[0] < hi for lo, hi in code):
                out.append(e)
    return out


def cxx_trace(path, what):
    """Record counts, sites in the program and the replay of a cxxnew
    trace."""
    evs, st = load(path)
    names = collections.Counter(e.rec for e in evs)
    sites = sites_in(evs, st, code_of(evs, prog("cxxnew")))
    r = Replay()
    for e in evs:
        r.feed(e)
    check(not r.errors, f"{what}: " + r.error_text())
    return evs, names, sites


# Allocators whose own operator new/delete the recorder records.  Under
# glibc, libstdc++'s operators call malloc and free, where the events are
# recorded (test_cxx_glibc).
CXX_RECORDED = [a for a in ALLOCATORS if a != "glibc"]


def test_cxx_glibc():
    """Under glibc, C++ new and delete reach malloc and free: every
    round's blocks are recorded and freed, the trace replays cleanly, and
    each new's stack begins at its caller in cxxnew, as on the allocators
    whose operators the recorder records: libstdc++'s operator new frames
    (nothrow new calls new) are not part of it."""
    with tmpdir() as d:
        b = record([prog("cxxnew"), "0"], d, output="cxx-glibc-0.hst")
        _, _, bsites = cxx_trace(b.trace(), "cxxnew 0 on glibc")
        for mode in ("", "nothrow", "throw"):
            argv = [prog("cxxnew"), str(CXX_ROUNDS)] + ([mode] if mode else [])
            what = f"cxxnew {CXX_ROUNDS} {mode} on glibc"
            r = record(argv, d, output=f"cxx-glibc-{mode or 'plain'}.hst")
            s = check_named(r.trace(), "glibc", what)
            check_complete(s, what)
            check_eq(s.get("exit_status"), 0, f"{what}: exit_status")
            k = 2 if mode else 1
            check(s["allocations"] >= 15 * CXX_ROUNDS * k,
                  f"{what}: {s['allocations']} allocations, fewer than the "
                  f"{15 * CXX_ROUNDS * k} news")
            _, _, sites = cxx_trace(r.trace(), what)
            check(len(sites) - len(bsites) >= 15 * CXX_ROUNDS * k,
                  f"{what}: {len(sites) - len(bsites)} allocations whose "
                  f"innermost frame is in cxxnew, fewer than the "
                  f"{15 * CXX_ROUNDS * k} news")


def test_cxx():
    """Every C++ operator new and delete, recorded once on each allocator:
    C++ new counts as malloc (aligned new as aligned_alloc), delete as
    free; a new that throws bad_alloc is a failed allocation, and the
    exception object's block is recorded with the same stack (its free
    follows); the innermost frame is the caller of the operator."""
    with tmpdir() as d:
        for name in CXX_RECORDED:
            b = record([prog("cxxnew"), "0"], d, opts=["--allocator", name],
                       output=f"cxx0-{name}.hst")
            bs = check_named(b.trace(), name, f"cxxnew 0 on {name}")
            _, bnames, bsites = cxx_trace(b.trace(), f"cxxnew 0 on {name}")
            for mode, (fm, fa, exc) in CXX_FAILURES.items():
                what = f"cxxnew {CXX_ROUNDS} {mode} on {name}".replace(
                    "  ", " ")
                argv = [prog("cxxnew"), str(CXX_ROUNDS)] + \
                    ([mode] if mode else [])
                if mode == "throw" and name in NO_THROW:
                    nat = run(argv, env=dict(os.environ, LD_PRELOAD=found.get(
                        name) or fail(f"test_exact_counts found no {name}")),
                        preexec=no_core)
                    check_eq(nat.rc, -6, f"{what} natively (test assumption)")
                    r = record(argv, d, opts=["--allocator", name], ok=False,
                               output=f"cxx-{name}-{mode}.hst",
                               preexec=no_core)
                    check_eq(r.rc, 128 + 6, f"{what}: exit status")
                    continue
                r = record(argv, d, opts=["--allocator", name],
                           output=f"cxx-{name}-{mode}.hst")
                s = check_named(r.trace(), name, what)
                check_complete(s, what)
                check_eq(s.get("exit_status"), 0, f"{what}: exit_status")
                k = 2 if mode else 1
                n = 15 * CXX_ROUNDS * k
                want = {"allocations": n + exc, "frees": n + exc,
                        "reallocs": 0, "failed_allocations": fm + fa}
                check_counts(s, {x: v + bs[x] for x, v in want.items()},
                             what)
                evs, names, sites = cxx_trace(r.trace(), what)
                per = {x: v * CXX_ROUNDS * k
                       for x, v in CXX_PER_ROUND.items()}
                per["malloc"] += exc
                per["free"] += exc
                per["failed malloc"] = fm
                per["failed aligned_alloc"] = fa
                for rec, v in per.items():
                    check_eq(names[rec] - bnames[rec], v,
                             f"{what}: {rec} records")
                check_eq(len(sites) - len(bsites), n + fm + fa + exc,
                         f"{what}: allocations whose innermost frame is "
                         f"in cxxnew")
                exc_bytes = 0
                for i, e in enumerate(evs):
                    if not e.rec.startswith("failed"):
                        continue
                    nxt = next((x for x in evs[i + 1:]
                                if x.rec in SITE_RECS), None)
                    if mode == "throw":
                        check(nxt is not None and nxt.rec == "malloc" and
                              nxt.kv["stack"] == e.kv["stack"],
                              f"{what}: {e} is not followed by its "
                              f"exception's block: {nxt}")
                        exc_bytes += nxt.int("size")
                check_eq(s.get("allocated_bytes") - bs["allocated_bytes"],
                         k * cxx_bytes(CXX_ROUNDS) + exc_bytes,
                         f"{what}: allocated_bytes")


def no_recorder_frames(evs, st, what):
    """The recorder's lookups of the operators are its own: nothing they
    allocate is the program's."""
    own = code_of(evs, LIB)
    mine = [e for e in evs if e.rec in ALLOC_RECS and
            any(lo <= ip < hi for ip in st.frames(e.int("stack"))
                for lo, hi in own)]
    check(not mine, f"{what}: {len(mine)} allocations with the recorder's "
          f"frames in their stacks, first {mine[:1]}")


def test_cxx_dlopen():
    """A C program dlopens a C++ library RTLD_LOCAL (as Python loads an
    extension): libstdc++ is not in the global scope, yet its operators
    are what the library's new binds to, through the recorder.  The first
    is a new[] that throws (libstdc++'s jumps to its new, which must be
    found too), except under mimalloc."""
    lib = os.path.join(PROGRAMS, "libhscxxnew.so")
    check(os.path.isfile(lib), f"{lib} is not built (no C++ compiler?)")
    n = 11
    with tmpdir() as d:
        # glibc: libstdc++'s operators call malloc, recorded there
        r = record([prog("dlopener"), lib, str(n)], d, output="dl.hst")
        check_complete(dump_stats(r.trace()), "dlopener on glibc")
        no_recorder_frames(*load(r.trace()), "dlopener on glibc")
        for name in CXX_RECORDED:
            what = f"dlopener libhscxxnew.so {n} on {name}"
            s0 = dump_stats(record([prog("dlopener"), lib, "0"], d,
                                   opts=["--allocator", name],
                                   output=f"dl0-{name}.hst").trace())
            throw = name not in NO_THROW
            env = dict(os.environ)
            if throw:
                env["CXXNEW_THROW"] = "1"
            r = record([prog("dlopener"), lib, str(n)], d, env=env,
                       opts=["--allocator", name], output=f"dl-{name}.hst")
            s = check_named(r.trace(), name, what)
            check_complete(s, what)
            check_eq(s["allocations"] - s0["allocations"], 16 * n + throw,
                     f"{what}: allocations")
            check_eq(s["failed_allocations"] - s0["failed_allocations"],
                     int(throw), f"{what}: failed_allocations")
            evs, st = load(r.trace())
            no_recorder_frames(evs, st, what)
            sites = sites_in(evs, st, code_of(evs, lib))
            check_eq(len(sites), 16 * n + 2 * throw,
                     f"{what}: allocations and failures whose innermost "
                     f"frame is in the library")
            sites = [e for e in sites if e.rec != "failed malloc"]
            rp = Replay()
            pending = set()
            ids = {id(e) for e in sites}
            for e in evs:
                rp.feed(e)
                if id(e) in ids:
                    pending.add(e.int("ptr"))
                elif e.rec == "free":
                    pending.discard(e.int("ptr"))
            check(not rp.errors, f"{what}: " + rp.error_text())
            check(not pending, f"{what}: blocks of the library not freed")


def refused(opts, what, want_in, d, wrap=()):
    """record refuses before the program runs: status 2, one line on
    stderr, no trace, the program did not touch its file."""
    argv = list(wrap) + [HEAPSLOPE, "record", "-o", "t.hst"] + opts + \
        ["--", "touch", "ran"]
    r = run(argv, cwd=d)
    err = r.err.decode(errors="replace")
    check_eq(r.rc, 2, f"{what}: exit status\n" + r.describe())
    check(err.count("\n") == 1 and err.startswith("heapslope record: "),
          f"{what}: expected one 'heapslope record:' line, got {err!r}")
    check(want_in in err, f"{what}: {want_in!r} not in {err!r}")
    check(not os.path.exists(os.path.join(d, "ran")),
          f"{what}: the program ran")
    check(not os.path.exists(os.path.join(d, "t.hst")),
          f"{what}: a trace was created")


def test_refused():
    with tmpdir() as d:
        refused(["--allocator", "nosuch"], "unknown name", "'nosuch'", d)
        refused(["--allocator", "/nonexistent/libnosuch.so.1"],
                "missing path", "No such file", d)
        refused(["--allocator", "./libnosuch.so"], "missing relative path",
                "No such file", d)
        with open(os.path.join(d, "libtext.so"), "w") as f:
            f.write("not an ELF file\n")
        refused(["--allocator", "./libtext.so"], "not a library",
                "not a shared library", d)
        refused(["--allocator", d], "a directory", "Is a directory", d)


def test_package_missing():
    """With the library hidden (a private mount namespace binds /dev/null
    over it), the error names the package.  Needs root."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare or \
            subprocess.run([unshare, "-m", "true"]).returncode != 0:
        print("   note: not run (needs root and unshare -m)")
        return
    with tmpdir() as d:
        for name, (soname, package) in ALLOCATORS.items():
            if not soname:
                continue
            lib = os.path.realpath(found.get(name) or
                                   fail(f"test_exact_counts found no {name}"))
            script = ('mount --bind /dev/null "$1" && shift && '
                      'exec "$@"')
            refused(["--allocator", name], f"{name} hidden",
                    f"allocator {name} not found: install {package}", d,
                    wrap=[unshare, "-m", "sh", "-c", script, "sh", lib])


def test_cxx_before_start():
    """a library's constructor news 3 blocks of 4321 bytes before the
    recorder starts: counted once on every allocator (through malloc on
    glibc, at the operator where a preloaded allocator's new does not
    reach malloc), against the same run with none"""
    with tmpdir() as d:
        for name in ALLOCATORS:
            got = {}
            for n in (0, 3):
                r = record([prog("prestartcxx")], d,
                           opts=["--allocator", name],
                           output=f"before-{name}-{n}.hst",
                           env=dict(os.environ, HS_PRESTART_N=str(n)))
                check_eq(r.out, b"prestartcxx: released\n",
                         f"prestartcxx {n} on {name}: stdout")
                s = dump_stats(r.trace())
                check_complete(s, f"prestartcxx {n} on {name}")
                a = run([HEAPSLOPE, "analyze", "--json", "-", r.trace()])
                check_eq(a.rc, 0, f"analyze prestartcxx {n} on {name}\n" +
                         a.describe())
                t = json.loads(a.out)["totals"]
                got[n] = (s.get("allocations_before_start", -1),
                          s.get("bytes_before_start", -1),
                          t["unmatched_frees"])
            check_eq(tuple(x - y for x, y in zip(got[3], got[0])),
                     (3, 3 * 4321, 3),
                     f"prestartcxx on {name}: allocations and bytes before "
                     f"start, unmatched frees (3 blocks against none: "
                     f"{got})")


if __name__ == "__main__":
    main([test_exact_counts, test_mix, test_mallinfo_only_glibc,
          test_output_unchanged, test_children_keep_allocator, test_path,
          test_cxx_glibc, test_cxx, test_cxx_dlopen, test_cxx_before_start,
          test_refused, test_package_missing])
