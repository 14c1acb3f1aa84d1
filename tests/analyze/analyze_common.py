"""Helpers of the analyzer tests: record a victim, run `heapslope analyze
--json -` on the trace, and check a report against the JSON contract of
DESIGN.md (heapslope-report(5)).

Builds on tests/cli/common.py (record, run, dump_stats, check...).

Environment (set by tests/analyze/meson.build):
  HEAPSLOPE             the heapslope CLI
  HEAPSLOPE_PROGRAMS    directory of the built analyzer victims (av_*)
  HEAPSLOPE_LIB         recorder library; if unset, HEAPSLOPE_LIB_DEFAULT
  HEAPSLOPE_TRAINSIM    the training-loop simulator (data/trainsim)
"""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cli"))

from common import (HEAPSLOPE, TestFailure, check, check_eq,  # noqa: E402,F401
                    dump_stats, fail, main, prog, record, run,
                    sanitizer_report, tmpdir, trace_chunks, write_file)

TRAINSIM = os.environ.get("HEAPSLOPE_TRAINSIM", "")

# The simulator's growth (data/trainsim.c)
LEAK_PER_BATCH = 102400
CACHE_PER_BATCH = 10240
LIVE_PER_BATCH = LEAK_PER_BATCH + CACHE_PER_BATCH

VERDICTS = ("leak", "retention", "fragmentation", "mixed", "stable",
            "mapped", "touching", "other")
ALL_STACKS = "1000000"  # --top: every stack


def trainsim():
    check(TRAINSIM and os.access(TRAINSIM, os.X_OK),
          f"HEAPSLOPE_TRAINSIM={TRAINSIM!r} is not an executable")
    return TRAINSIM


def no_crash(r, what):
    """The command ended by itself (no signal) and no sanitizer spoke."""
    err = r.err.decode(errors="replace")
    check(0 <= r.rc < 128, f"{what}: killed by a signal:\n" + r.describe())
    check(not sanitizer_report(err),
          f"{what}: a sanitizer or crash report on stderr:\n" + r.describe())


TORCH_PYTHON = os.environ.get("HEAPSLOPE_TORCH_PYTHON", "/usr/bin/python3")


def torch_python(script, env_name):
    """The Python the PyTorch tests record (HEAPSLOPE_TORCH_PYTHON, else
    Debian's /usr/bin/python3), once script (given by env_name) is a
    file and that Python imports torch."""
    check(script and os.path.isfile(script),
          f"{env_name}={script!r} is not a file")
    r = run([TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"])
    if r.rc != 0:
        fail(f"{TORCH_PYTHON} cannot import torch (install python3-torch, "
             f"or point HEAPSLOPE_TORCH_PYTHON at a Python that has it):\n"
             + r.describe())
    return TORCH_PYTHON


def check_usage_error(r, what, word):
    """A bad option or argument of heapslope analyze: exit 2, nothing on
    stdout, one line on stderr naming word, then at most argp's hint."""
    err = r.err.decode(errors="replace").splitlines()
    check_eq(r.rc, 2, f"{what}: exit status ({err})")
    check_eq(r.out, b"", f"{what}: stdout")
    check(err and err[0].startswith("heapslope analyze: ") and
          word in err[0],
          f"{what}: first stderr line should name {word!r}: {err}")
    # after the error line, only argp's hint to --help
    rest = " ".join(err[1:])
    check(not rest or rest.startswith("Try `heapslope analyze --help'"),
          f"{what}: more than the error on stderr: {err}")


def analyze_run(trace, *opts, timeout=120, cwd=None):
    """heapslope analyze OPTS TRACE: the Run, checked for crashes only."""
    r = run([HEAPSLOPE, "analyze", *opts, trace], timeout=timeout, cwd=cwd)
    no_crash(r, f"analyze {' '.join(opts)} {trace}")
    return r


def analyze(trace, *opts, timeout=120, cwd=None, quiet=True):
    """heapslope analyze --json - OPTS TRACE: exit 0, stdout is the JSON
    report alone (parsed and returned); with quiet, nothing on stderr."""
    r = analyze_run(trace, "--json", "-", *opts, timeout=timeout, cwd=cwd)
    if r.rc != 0:
        fail("analyze failed:\n" + r.describe())
    if quiet and r.err.strip():
        fail("analyze wrote to stderr:\n" + r.describe())
    try:
        return json.loads(r.out.decode())
    except ValueError as e:
        fail(f"analyze --json - printed no valid JSON ({e}):\n" + r.describe())


def slope(ys, first=0):
    """Least-squares slope of ys[first:] against the index, as the analyzer
    fits a series against the batch number (the x offset does not change
    it)."""
    ys = ys[first:]
    n = len(ys)
    mx, my = (n - 1) / 2, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in range(n))
    return sum((x - mx) * (y - my) for x, y in enumerate(ys)) / sxx


def record_trace(cmd, d, name="trace.hst"):
    return record(cmd, d, output=name).trace()


def functions(stack):
    return [f.get("function") for f in stack["frames"]]


def stacks_at(report, fn):
    """The stacks whose innermost frame is function fn."""
    return [s for s in report["stacks"]
            if s["frames"] and s["frames"][0].get("function") == fn]


def one_stack_at(report, fn):
    found = stacks_at(report, fn)
    if len(found) != 1:
        fail(f"expected exactly one stack allocating in {fn}, found "
             f"{len(found)}; innermost functions of the stacks: "
             f"{sorted(set(str(functions(s)[:1]) for s in report['stacks']))}")
    return found[0]


def near(got, want, rel, what):
    check(isinstance(got, (int, float)) and not isinstance(got, bool),
          f"{what}: {got!r} is not a number")
    if abs(got - want) > rel * abs(want):
        fail(f"{what}: got {got}, expected {want} within {rel:.0%}")


def leak_totals(report):
    t = report["totals"]
    return t["leaked_bytes"], t["leaked_blocks"]


def sum_leaks(stacks):
    return (sum(s["leaked_bytes"] for s in stacks),
            sum(s["leaked_blocks"] for s in stacks))


_baseline = None


def baseline_report():
    """The report of the empty victim: libc's own blocks."""
    global _baseline
    if _baseline is None:
        with tmpdir() as d:
            t = record_trace([prog("av_empty")], d)
            _baseline = analyze(t, "--top", ALL_STACKS)
            validate_report(_baseline, "empty victim")
            check(_baseline["trace"]["complete"] is True,
                  "empty victim: trace not complete")
    return _baseline


# ---- the JSON contract -------------------------------------------------

def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


class Schema:
    """Checks one report; every problem is collected, then reported."""

    def __init__(self, what):
        self.what = what
        self.errors = []

    def err(self, path, msg):
        self.errors.append(f"{path}: {msg}")

    def obj(self, v, path, keys):
        """v is an object holding at least `keys`; returns whether it is
        an object."""
        if not isinstance(v, dict):
            self.err(path, f"not an object: {v!r:.80}")
            return False
        for k in keys:
            if k not in v:
                self.err(path, f"missing key {k!r}")
        return True

    def int_(self, o, k, path, minimum=0, null=False):
        if k not in o:
            return None
        v = o[k]
        if v is None and null:
            return None
        if not _is_int(v):
            self.err(f"{path}.{k}", f"not an integer{' or null' if null else ''}: {v!r}")
            return None
        if minimum is not None and v < minimum:
            self.err(f"{path}.{k}", f"{v} < {minimum}")
        return v

    def num(self, o, k, path, null=False, lo=None, hi=None):
        if k not in o:
            return None
        v = o[k]
        if v is None and null:
            return None
        if not _is_num(v):
            self.err(f"{path}.{k}", f"not a finite number{' or null' if null else ''}: {v!r}")
            return None
        if lo is not None and v < lo:
            self.err(f"{path}.{k}", f"{v} < {lo}")
        if hi is not None and v > hi:
            self.err(f"{path}.{k}", f"{v} > {hi}")
        return v

    def str_(self, o, k, path, null=False, nonempty=False):
        if k not in o:
            return None
        v = o[k]
        if v is None and null:
            return None
        if not isinstance(v, str):
            self.err(f"{path}.{k}", f"not a string{' or null' if null else ''}: {v!r}")
            return None
        if nonempty and not v:
            self.err(f"{path}.{k}", "empty string")
        return v

    def bool_(self, o, k, path):
        if k in o and not isinstance(o[k], bool):
            self.err(f"{path}.{k}", f"not a boolean: {o[k]!r}")


R2_EPS = 1e-9

FRAME_KEYS = ("kind", "address", "module", "function", "file", "line")


def _frames(s, fr, path):
    if not isinstance(fr, list):
        s.err(f"{path}.frames", f"not a list: {fr!r:.80}")
        return
    for j, f in enumerate(fr):
        fp = f"{path}.frames[{j}]"
        if not s.obj(f, fp, FRAME_KEYS):
            continue
        kind = f.get("kind")
        if kind not in ("native", "python"):
            s.err(f"{fp}.kind", f"{kind!r} is not 'native' or 'python'")
        python = kind == "python"
        # a Python frame has no address or module; its function is the
        # code's qualified name, its file the code's file
        a = s.str_(f, "address", fp, null=python)
        if a is not None and not re.fullmatch(r"0x[0-9a-f]+", a):
            s.err(f"{fp}.address", f"{a!r} is not a hex address")
        if python and (a is not None or f.get("module") is not None):
            s.err(fp, "a Python frame with an address or a module")
        s.str_(f, "module", fp, null=python)
        s.str_(f, "function", fp, null=not python, nonempty=True)
        s.str_(f, "file", fp, null=not python, nonempty=True)
        s.int_(f, "line", fp, minimum=1, null=True)


# The heap's shape in each series entry: footprint always, the glibc
# layout's figures and mallinfo2's null where unknown.
SHAPE_KEYS = ("footprint_bytes", "span_bytes", "holes_bytes",
              "releasable_bytes", "top_bytes", "heap_in_use_bytes", "heap_arena_bytes",
              "heap_mmapped_bytes", "heap_top_releasable_bytes")


def _fragmentation(s, f, verdict):
    """The fragmentation object of heapslope-report(5)."""
    path = "$.fragmentation"
    keys = ("allocator", "layout", "heap_start", "footprint_bytes",
            "span_bytes", "holes_bytes", "releasable_bytes", "mmapped_bytes",
            "regions", "top_bytes", "footprint_bytes_per_batch",
            "span_bytes_per_batch", "top_bytes_per_batch",
            "holes_bytes_per_batch", "releasable_bytes_per_batch",
            "retained_bytes_per_batch", "allocator_state", "decomposition",
            "pinned_bytes", "pinning_matters", "pinning_stacks")
    if not s.obj(f, path, keys):
        return
    s.str_(f, "allocator", path, nonempty=True)
    layout = f.get("layout")
    if layout not in ("glibc", "pages"):
        s.err(f"{path}.layout", f"{layout!r} is not glibc|pages")
    hs = s.str_(f, "heap_start", path, null=True)
    if hs is not None and not re.fullmatch(r"0x[0-9a-f]+", hs):
        s.err(f"{path}.heap_start", f"{hs!r} is not a hex address")
    for k in ("footprint_bytes", "span_bytes", "holes_bytes",
              "releasable_bytes", "mmapped_bytes", "regions", "pinned_bytes",
              "top_bytes"):
        s.int_(f, k, path, null=True)
    for k in ("footprint_bytes_per_batch", "span_bytes_per_batch",
              "holes_bytes_per_batch", "releasable_bytes_per_batch",
              "retained_bytes_per_batch", "top_bytes_per_batch"):
        s.num(f, k, path, null=True)
    if layout == "pages":
        for k in ("span_bytes", "holes_bytes", "retained_bytes_per_batch",
                  "decomposition", "pinned_bytes"):
            if f.get(k) is not None:
                s.err(f"{path}.{k}", "not null for an allocator whose "
                      "layout is unknown")
    # retained = holes + the brk heap's free top, when the top is known
    ret, holes = f.get("retained_bytes_per_batch"), f.get("holes_bytes_per_batch")
    top = f.get("top_bytes_per_batch")
    if ret is not None and holes is not None:
        want = holes + (top or 0)
        # doubles: the error grows with the largest term, not the sum
        if abs(ret - want) > 1e-6 * max(1.0, abs(holes), abs(top or 0)):
            s.err(f"{path}.retained_bytes_per_batch", f"{ret} is not holes "
                  f"{holes} + top {top}")
    elif (ret is None) != (holes is None):
        s.err(f"{path}.retained_bytes_per_batch", "null unlike holes")
    a = f.get("allocator_state")
    ap = f"{path}.allocator_state"
    if s.obj(a, ap, ("in_use_bytes_per_batch", "free_bytes_per_batch",
                     "footprint_bytes_per_batch")):
        for k in a:
            s.num(a, k, ap, null=True)
    dec = f.get("decomposition")
    if dec is not None:
        dp = f"{path}.decomposition"
        dk = ("rss_bytes_per_batch", "live_bytes_per_batch",
              "retained_bytes_per_batch", "other_bytes_per_batch")
        if s.obj(dec, dp, dk):
            v = [s.num(dec, k, dp) for k in dk]
            # + what the program mapped itself, when the trace has it
            mapped = dec.get("mapped_bytes_per_batch") or 0
            if None not in v and abs(v[0] - v[1] - v[2] - v[3] - mapped) > \
                    1e-6 * max([1.0] + [abs(x) for x in v]):
                s.err(dp, f"rss {v[0]} != live {v[1]} + retained {v[2]} "
                      f"+ mapped {mapped} + other {v[3]}")
    if not isinstance(f.get("pinning_matters"), bool):
        s.err(f"{path}.pinning_matters", "not a boolean")
    elif f["pinning_matters"] != (verdict in ("fragmentation", "mixed")):
        s.err(f"{path}.pinning_matters", f"{f['pinning_matters']} with "
              f"verdict {verdict!r}")
    ps = f.get("pinning_stacks")
    if not isinstance(ps, list):
        s.err(f"{path}.pinning_stacks", f"not a list: {ps!r:.80}")
        return
    prev = None
    total = 0
    for i, e in enumerate(ps):
        ep = f"{path}.pinning_stacks[{i}]"
        if not s.obj(e, ep, ("rank", "pinned_bytes", "blocks", "live_bytes",
                             "stack_id", "frames")):
            continue
        if e.get("rank") != i + 1:
            s.err(f"{ep}.rank", f"{e.get('rank')!r} != {i + 1}")
        pb = s.int_(e, "pinned_bytes", ep, minimum=1)
        if pb is not None and prev is not None and pb > prev:
            s.err(f"{ep}.pinned_bytes", f"{pb} ranked below {prev}")
        prev = pb if pb is not None else prev
        total += pb or 0
        s.int_(e, "blocks", ep, minimum=1)
        s.int_(e, "live_bytes", ep)
        s.int_(e, "stack_id", ep, null=True)
        _frames(s, e.get("frames"), ep)
    pinned = f.get("pinned_bytes")
    if _is_int(pinned) and total > pinned:
        s.err(f"{path}.pinning_stacks", f"pin {total} bytes, more than "
              f"pinned_bytes {pinned}")


def _groups(s, g, growth):
    """analyze --group-by-frame / --operators (heapslope-report(5)
    GROUPS): the rows, ranked, the unmatched one last, adding up to the
    live heap's slope."""
    path = "$.groups"
    if not s.obj(g, path, ("pattern", "preset", "rows_bytes_per_batch",
                           "stacks", "matched_stacks", "rows")):
        return
    s.str_(g, "pattern", path, nonempty=True)
    s.str_(g, "preset", path, null=True, nonempty=True)
    total = s.num(g, "rows_bytes_per_batch", path)
    n = s.int_(g, "stacks", path)
    matched = s.int_(g, "matched_stacks", path)
    if n is not None and matched is not None and matched > n:
        s.err(path, f"matched_stacks {matched} > stacks {n}")
    rows = g.get("rows")
    if not isinstance(rows, list) or not rows:
        s.err(f"{path}.rows", f"not a non-empty list: {rows!r:.80}")
        return
    keys = ("name", "unmatched", "bytes_per_batch", "r2", "live_bytes_at_end",
            "leaked_bytes", "leaked_blocks", "allocations", "stacks",
            "top_stack")
    added, prev, in_rows = 0.0, None, 0
    for i, r in enumerate(rows):
        rp = f"{path}.rows[{i}]"
        if not s.obj(r, rp, keys):
            continue
        s.str_(r, "name", rp, nonempty=True)
        s.bool_(r, "unmatched", rp)
        if r.get("unmatched") is not (i == len(rows) - 1):
            s.err(f"{rp}.unmatched", "the unmatched row is the last, only")
        bpb = s.num(r, "bytes_per_batch", rp)
        if bpb is not None:
            added += bpb
            if not r.get("unmatched") and prev is not None and bpb > prev:
                s.err(f"{rp}.bytes_per_batch", f"{bpb} ranked below {prev}")
            prev = bpb if not r.get("unmatched") else prev
        s.num(r, "r2", rp, lo=-R2_EPS, hi=1 + R2_EPS)
        for k in ("live_bytes_at_end", "leaked_bytes", "leaked_blocks",
                  "allocations"):
            s.int_(r, k, rp)
        k = s.int_(r, "stacks", rp)
        in_rows += k or 0
        top = r.get("top_stack")
        if top is None:
            if k:
                s.err(f"{rp}.top_stack", "null for a row with stacks")
        elif s.obj(top, f"{rp}.top_stack", ("bytes_per_batch", "stack_id",
                                            "frames")):
            _frames(s, top.get("frames"), f"{rp}.top_stack")
    if n is not None and in_rows != n:
        s.err(path, f"the rows have {in_rows} stacks, not {n}")
    if total is not None and abs(total - added) > 1e-6 * max(1, abs(added)):
        s.err(path, f"rows_bytes_per_batch {total} != the rows' {added}")
    live = growth.get("live_bytes_per_batch") if isinstance(growth, dict) \
        else None
    if _is_num(live) and abs(added - live) > 1e-6 * max(1, abs(live)):
        s.err(path, f"the rows add up to {added}, not the live heap's {live}")


def validate_report(d, what="report"):
    """Every field and type of the DESIGN.md contract, and the rules that
    tie them together.  Fails with the list of problems."""
    s = Schema(what)
    top = ("schema", "tool", "program", "trace", "totals", "batches",
           "growth", "verdict", "stacks", "fragmentation")
    if not s.obj(d, "$", top):
        fail(f"{what}: " + "; ".join(s.errors))
    if d.get("schema") != "heapslope.report/1":
        s.err("$.schema", f"{d.get('schema')!r} != 'heapslope.report/1'")

    tool = d.get("tool")
    if s.obj(tool, "$.tool", ("name", "version")):
        if tool.get("name") != "heapslope":
            s.err("$.tool.name", f"{tool.get('name')!r} != 'heapslope'")
        s.str_(tool, "version", "$.tool", nonempty=True)

    p = d.get("program")
    if s.obj(p, "$.program", ("command", "pid", "exit_status")):
        cmd = p.get("command")
        if not isinstance(cmd, list) or not cmd:
            s.err("$.program.command", f"not a non-empty list: {cmd!r:.80}")
        else:
            for i, a in enumerate(cmd):
                if not isinstance(a, str):
                    s.err(f"$.program.command[{i}]", f"not a string: {a!r}")
        s.int_(p, "pid", "$.program", minimum=1)
        s.int_(p, "exit_status", "$.program", null=True)

    t = d.get("trace")
    if s.obj(t, "$.trace", ("path", "format_version", "events", "complete")):
        s.str_(t, "path", "$.trace", nonempty=True)
        s.int_(t, "format_version", "$.trace", minimum=1)
        s.int_(t, "events", "$.trace")
        s.bool_(t, "complete", "$.trace")
        # added: why recording stopped early, what went unrecorded, whose
        # malloc the program called
        for k in ("stopped", "unrecorded", "malloc_owner"):
            if k not in t:
                s.err("$.trace", f"no {k}")
        s.str_(t, "stopped", "$.trace", null=True, nonempty=True)
        s.int_(t, "unrecorded", "$.trace")
        s.str_(t, "malloc_owner", "$.trace", null=True, nonempty=True)

    tot = d.get("totals")
    tkeys = ("allocations", "frees", "reallocs", "failed_allocations",
             "unmatched_frees", "allocated_bytes", "peak_live_bytes",
             "leaked_bytes", "leaked_blocks")
    if s.obj(tot, "$.totals", tkeys + ("duration_s",)):
        for k in tkeys:
            s.int_(tot, k, "$.totals")
        s.num(tot, "duration_s", "$.totals", lo=0)
        lb, pk = tot.get("leaked_bytes"), tot.get("peak_live_bytes")
        if _is_int(lb) and _is_int(pk) and lb > pk:
            s.err("$.totals", f"leaked_bytes {lb} > peak_live_bytes {pk}")

    b = d.get("batches")
    skeys = ("index", "end_s", "live_bytes", "peak_live_bytes", "rss_bytes",
             "heap_free_bytes", "allocations", "frees", "allocated_bytes")
    if s.obj(b, "$.batches", ("source", "count", "warmup", "series")):
        if b.get("source") not in ("marker", "time", "auto"):
            s.err("$.batches.source", f"{b.get('source')!r} is not marker|time|auto")
        count = s.int_(b, "count", "$.batches")
        s.int_(b, "warmup", "$.batches")
        series = b.get("series")
        if not isinstance(series, list):
            s.err("$.batches.series", f"not a list: {series!r:.80}")
        else:
            if count is not None and len(series) != count:
                s.err("$.batches", f"count {count} but {len(series)} series entries")
            prev_end = None
            for i, e in enumerate(series):
                path = f"$.batches.series[{i}]"
                if not s.obj(e, path, skeys):
                    continue
                if e.get("index") != i:
                    s.err(f"{path}.index", f"{e.get('index')!r} != {i}")
                end = s.num(e, "end_s", path, lo=0)
                if end is not None and prev_end is not None and end < prev_end:
                    s.err(f"{path}.end_s", f"{end} before the previous batch's {prev_end}")
                prev_end = end if end is not None else prev_end
                live = s.int_(e, "live_bytes", path)
                peak = s.int_(e, "peak_live_bytes", path)
                if live is not None and peak is not None and peak < live:
                    s.err(path, f"peak_live_bytes {peak} < live_bytes {live}")
                s.int_(e, "rss_bytes", path, null=True)
                s.int_(e, "heap_free_bytes", path, null=True)
                for k in ("allocations", "frees", "allocated_bytes"):
                    s.int_(e, k, path)
                for k in SHAPE_KEYS:
                    if k not in e:
                        s.err(path, f"missing key {k!r}")
                    s.int_(e, k, path, null=True)
            if series and _is_int(tot.get("allocations") if isinstance(tot, dict) else None):
                n = sum(e.get("allocations", 0) for e in series
                        if isinstance(e, dict) and _is_int(e.get("allocations")))
                if n > tot["allocations"] + tot.get("reallocs", 0):
                    s.err("$.batches.series", f"{n} allocations in the batches, "
                          f"more than the totals' {tot['allocations']}")

    g = d.get("growth")
    if s.obj(g, "$.growth", ("live_bytes_per_batch", "live_r2",
                             "rss_bytes_per_batch", "rss_r2")):
        s.num(g, "live_bytes_per_batch", "$.growth")
        s.num(g, "live_r2", "$.growth", lo=-R2_EPS, hi=1 + R2_EPS)
        s.num(g, "rss_bytes_per_batch", "$.growth", null=True)
        s.num(g, "rss_r2", "$.growth", null=True, lo=-R2_EPS, hi=1 + R2_EPS)
        if (g.get("rss_bytes_per_batch") is None) != (g.get("rss_r2") is None):
            s.err("$.growth", "rss_bytes_per_batch and rss_r2: one is null, "
                  "the other not")

    if d.get("verdict") not in VERDICTS:
        s.err("$.verdict", f"{d.get('verdict')!r} is not one of {VERDICTS}")

    st = d.get("stacks")
    if not isinstance(st, list):
        s.err("$.stacks", f"not a list: {st!r:.80}")
        st = []
    prev = None
    for i, e in enumerate(st):
        path = f"$.stacks[{i}]"
        if not s.obj(e, path, ("rank", "bytes_per_batch", "r2",
                               "live_bytes_at_end", "leaked_bytes",
                               "leaked_blocks", "allocations", "frames")):
            continue
        if e.get("rank") != i + 1:
            s.err(f"{path}.rank", f"{e.get('rank')!r} != {i + 1}")
        bpb = s.num(e, "bytes_per_batch", path)
        if bpb is not None and prev is not None and bpb > prev:
            s.err(f"{path}.bytes_per_batch",
                  f"{bpb} ranked below {prev}: not descending")
        prev = bpb if bpb is not None else prev
        s.num(e, "r2", path, lo=-R2_EPS, hi=1 + R2_EPS)
        s.int_(e, "live_bytes_at_end", path)
        lb = s.int_(e, "leaked_bytes", path)
        nb = s.int_(e, "leaked_blocks", path)
        # (no leaked_blocks <= allocations: a block realloc'd onto this
        # stack leaks here, but was allocated by the stack of its malloc)
        s.int_(e, "allocations", path)
        if lb is not None and nb == 0 and lb != 0:
            s.err(path, f"leaked_bytes {lb} without a leaked block")
        _frames(s, e.get("frames"), path)
    _fragmentation(s, d.get("fragmentation"), d.get("verdict"))
    if "groups" in d:
        _groups(s, d["groups"], d.get("growth"))
    if s.errors:
        shown = "\n  ".join(s.errors[:30])
        fail(f"{what}: the report breaks the JSON contract "
             f"({len(s.errors)} problems):\n  {shown}")


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _varint_get(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


HDR_PID, HDR_START_REALTIME, HDR_START_MONOTONIC, HDR_PYMALLOC = 1, 5, 6, 16


def rewrite_header(data, ints):
    """The trace bytes data with its header's integer fields set as the
    dict ints says ({key: value}; fields not there are added), the
    rest of the trace as it was (heapslope-trace(5): a 16-byte preamble
    whose last 4 bytes are the body's length, then key/length/value
    varints)."""
    blen = int.from_bytes(data[12:16], "little")
    body, i, out, seen = data[16:16 + blen], 0, bytearray(), set()
    while i < len(body):
        key, i = _varint_get(body, i)
        n, i = _varint_get(body, i)
        val = body[i:i + n]
        i += n
        if key in ints:
            seen.add(key)
            val = _varint(ints[key])
        out += _varint(key) + _varint(len(val)) + val
    for key, v in ints.items():
        if key not in seen:
            val = _varint(v)
            out += _varint(key) + _varint(len(val)) + val
    return (data[:12] + len(out).to_bytes(4, "little") + bytes(out) +
            data[16 + blen:])
