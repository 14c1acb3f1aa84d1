#!/usr/bin/env python3
"""1. Exact counts: every successful allocation-API call is one event,
nothing sampled, nothing dropped, none of the recorder's own allocations.

The baseline is measured with the empty victim (main returns 0).  Measured
on Debian 12 (glibc 2.36): 0 allocations, 0 frees, 0 reallocs, 0 failed:
glibc's start-up allocations all happen before the recorder's constructor
runs, so the recorded image starts clean.  The tests add the baseline
anyway, so that they stay exact on a libc that does allocate at start-up.
"""
import collections
import json
import os
import re

from common import (HEAPSLOPE, baseline, check, check_complete, check_counts,
                    check_eq, dump_lines, dump_stats, fail, load, main, prog,
                    record, run, tmpdir)


def expected(n, fn):
    """(allocations, frees, reallocs, allocated_bytes) of `counts FN n`."""
    sizes = [16 + i % 64 for i in range(n)]
    per = {
        "malloc": sum(sizes), "calloc": 3 * sum(sizes), "realloc": sum(sizes),
        "reallocarray": 2 * sum(sizes), "posix_memalign": sum(sizes),
        "aligned_alloc": 64 * n, "memalign": sum(sizes), "valloc": sum(sizes),
        "pvalloc": sum(sizes), "free": 8 * n,
    }
    return n, n, 0, per[fn]


def with_baseline(want):
    b = baseline()
    return {k: v + b[k] for k, v in want.items()}


def line_names(path):
    """Number of dump lines per record name (failed ones as 'failed X')."""
    c = collections.Counter()
    for line in dump_lines(path):
        parts = line.split(" ", 4)
        name = parts[2] if parts[2] != "failed" else "failed " + parts[3]
        c[name] += 1
    return c


def test_baseline():
    b = baseline()
    print(f"   baseline (empty victim): allocations={b['allocations']} "
          f"frees={b['frees']} reallocs={b['reallocs']} "
          f"failed={b['failed_allocations']} bytes={b['allocated_bytes']}")
    check_eq(b.get("end_reason"), "exit", "empty victim: end_reason")
    check_eq(b.get("exit_status"), 0, "empty victim: exit_status")
    # a start-up allocation libc frees itself would be replayed too: the
    # baseline must at least be consistent
    check(b["frees"] <= b["allocations"] + b["reallocs"],
          f"empty victim frees more than it allocates: {b}")


def test_each_function():
    fns = ["malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
           "aligned_alloc", "memalign", "valloc", "pvalloc", "free"]
    base_lines = None
    with tmpdir() as d:
        r = record([prog("empty")], d, output="base.hst")
        base_lines = line_names(r.trace())
        for i, fn in enumerate(fns):
            n = 101 + 37 * i  # a different number for every function
            r = record([prog("counts"), fn, str(n)], d, output=f"{fn}.hst")
            s = dump_stats(r.trace())
            a, f, re_, nbytes = expected(n, fn)
            want = with_baseline({"allocations": a, "frees": f,
                                  "reallocs": re_, "failed_allocations": 0,
                                  "allocated_bytes": nbytes})
            check_counts(s, want, f"counts {fn} {n}")
            check_complete(s, f"counts {fn} {n}")
            # the calls are recorded under their own names
            names = line_names(r.trace())
            rec = "malloc" if fn == "free" else fn
            check_eq(names[rec] - base_lines[rec], n,
                     f"counts {fn} {n}: number of '{rec}' lines")
            check_eq(names["free"] - base_lines["free"], n,
                     f"counts {fn} {n}: number of 'free' lines")


def test_mix():
    rounds = 1000
    with tmpdir() as d:
        r = record([prog("counts"), "mix", str(rounds)], d)
        s = dump_stats(r.trace())
        # per round: malloc 16, calloc 4x8, realloc ->64, reallocarray
        # ->8x16, realloc(NULL,32), reallocarray(NULL,4,4),
        # posix_memalign 100, aligned_alloc 128, memalign 48, valloc 10,
        # pvalloc 10; then 9 frees
        want = with_baseline({
            "allocations": 9 * rounds, "frees": 9 * rounds,
            "reallocs": 2 * rounds, "failed_allocations": 0,
            "allocated_bytes": (16 + 32 + 64 + 128 + 32 + 16 + 100 + 128 +
                                48 + 10 + 10) * rounds})
        check_counts(s, want, "counts mix")
        check_complete(s, "counts mix")
        check_eq(s.get("exit_status"), 0, "counts mix: exit_status")
        check_eq(s.get("end_reason"), "exit", "counts mix: end_reason")
        check_eq(s.get("threads"), 1, "counts mix: threads")


def test_realloc_chain():
    n = 5000
    with tmpdir() as d:
        r = record([prog("counts"), "realloc-grow", str(n)], d)
        s = dump_stats(r.trace())
        want = with_baseline({"allocations": 1, "frees": 1, "reallocs": n,
                              "failed_allocations": 0,
                              "allocated_bytes": 1 + sum(2 + i * 8
                                                         for i in range(n))})
        check_counts(s, want, "counts realloc-grow")
        check_complete(s, "counts realloc-grow")


def test_many_chunks():
    """600k events: several buffers and chunks, none lost."""
    n = 300000
    with tmpdir() as d:
        r = record([prog("counts"), "free", str(n)], d)
        s = dump_stats(r.trace())
        want = with_baseline({"allocations": n, "frees": n, "reallocs": 0,
                              "allocated_bytes": 8 * n})
        check_counts(s, want, "counts free 300000")
        check_complete(s, "counts free 300000")
        check(s["chunks"] >= 2, f"expected several chunks, got {s['chunks']}")


def test_depth_limit():
    with tmpdir() as d:
        r = record([prog("counts"), "malloc", "50"], d, opts=["--depth", "2"])
        evs, st = load(r.trace())
        s = dump_stats(r.trace())
        check_counts(s, with_baseline({"allocations": 50, "frees": 50}),
                     "--depth 2")
        allocs = [e for e in evs if e.rec == "malloc"]
        check(allocs, "--depth 2: no malloc lines")
        for e in allocs:
            fr = st.frames(e.int("stack"))
            check(1 <= len(fr) <= 2,
                  f"--depth 2: stack of {len(fr)} frames: {e}")


def exe_code(evs, path):
    """[(lo, hi)] of the executable segments of the module at path."""
    for e in evs:
        if e.rec == "module" and os.path.realpath(e.kv.get("path", "")) == \
                os.path.realpath(path):
            base = e.int("base")
            out = []
            for seg in e.kv.get("seg", []):
                rng, _, flags = seg.partition(":")
                vaddr, _, memsz = rng.partition("+")
                if "x" in flags:
                    out.append((base + int(vaddr, 16),
                                base + int(vaddr, 16) + int(memsz, 16)))
            return out
    fail(f"no module line for {path}")


def test_stacks():
    """Stacks start at the caller of malloc (no recorder frame), hold every
    level of a recursion, and are cut at --depth."""
    with tmpdir() as d:
        r = record([prog("counts"), "deep", "5"], d, output="deep5.hst")
        evs, st = load(r.trace())
        code = exe_code(evs, prog("counts"))
        allocs = [e for e in evs if e.rec == "malloc" and e.int("size") == 777]
        check_eq(len(allocs), 1, "counts deep 5: malloc(777) lines")
        fr = st.frames(allocs[0].int("stack"))
        inside = [any(lo <= ip < hi for lo, hi in code) for ip in fr]
        check(len(fr) >= 7 and all(inside[:7]),
              f"counts deep 5: the 6 levels of deep() and main must be the "
              f"7 innermost frames, all in the program: "
              f"{[hex(ip) for ip in fr]} (code {code})")
        check(len(set(fr[1:6])) == 1 and fr[0] != fr[1],
              f"counts deep 5: 5 recursive return addresses expected after "
              f"the innermost frame: {[hex(ip) for ip in fr]}")
        for opts, want in (([], 128), (["--depth", "256"], 256),
                           (["--depth", "1"], 1)):
            r = record([prog("counts"), "deep", "1000"], d, opts=opts,
                       output=f"deep{want}.hst")
            evs, st = load(r.trace())
            code = exe_code(evs, prog("counts"))
            allocs = [e for e in evs if e.rec == "malloc" and
                      e.int("size") == 777]
            check_eq(len(allocs), 1, "counts deep 1000: malloc(777) lines")
            fr = st.frames(allocs[0].int("stack"))
            check_eq(len(fr), want, f"counts deep 1000 {opts}: frames")
            check(all(any(lo <= ip < hi for lo, hi in code) for ip in fr),
                  f"counts deep 1000 {opts}: frames outside the program")


def test_marks():
    """Marks are counted exactly, each with its sample, and allocate
    nothing; natively they are no-ops."""
    n = 250
    with tmpdir() as d:
        r = record([prog("counts"), "marks", str(n)], d,
                   opts=["--interval", "0"])
        s = dump_stats(r.trace())
        check_complete(s, "counts marks")
        check_counts(s, with_baseline({"allocations": 0, "frees": 0}),
                     "counts marks")
        check_eq(s["marks"], 2 * n, "counts marks: marks")
        check_eq(s["samples"], 2 * n, "counts marks: samples (one per mark, "
                 "--interval 0)")
        names = line_names(r.trace())
        check_eq(names["mark"], 2 * n, "counts marks: mark lines")
        labels = sum(1 for ln in dump_lines(r.trace())
                     if ln.endswith(' mark label="a label"'))
        check_eq(labels, n, "counts marks: labelled marks")


def test_mmap_counts():
    """The program's mappings are recorded by default, exactly: n + 1
    anonymous mmaps, m mremaps and one file mapping, each given back;
    --no-mmap records none of them and leaves the heap's counts alone."""
    n, m = 100, 5
    with tmpdir() as d:
        r = record([prog("maps"), str(n), str(m)], d, output="plain.hst",
                   opts=["--no-mmap"])
        s = dump_stats(r.trace())
        check_complete(s, "maps --no-mmap")
        check_counts(s, with_baseline({"allocations": n, "frees": n,
                                       "mmaps": 0, "munmaps": 0}),
                     "maps --no-mmap")
        r = record([prog("maps"), str(n), str(m)], d)
        s = dump_stats(r.trace())
        check_complete(s, "maps")
        check_counts(s, with_baseline({"allocations": n, "frees": n}),
                     "maps")
        check_eq(s["mmaps"], n + 1 + m + 1,
                 "maps: mmaps (anonymous, mremap, the file's)")
        names = line_names(r.trace())
        check_eq(names["map"], n + 2, "maps: map lines")
        check_eq(names["remap"], m, "maps: remap lines")
        check_eq(s["munmaps"], n + 2, "maps: munmaps")
        check_eq(names["unmap"], n + 2, "maps: unmap lines")


def test_signal_storm():
    """A timer signal every 50 us, no SA_RESTART: nothing is lost or
    doubled, the program's own calls are not disturbed."""
    n = 300000
    with tmpdir() as d:
        r = record([prog("signals"), str(n)], d, opts=["--interval", "1"])
        s = dump_stats(r.trace())
        check_complete(s, "signals")
        check_counts(s, with_baseline({"allocations": n, "frees": n,
                                       "failed_allocations": 0}), "signals")


def test_before_start():
    """allocations made before recording started (a library constructor
    runs before the recorder's) are counted in the header: the report
    says how many, next to the unmatched frees they explain; a forked
    child's trace has no such count (its unmatched frees are inherited
    blocks)"""
    b = baseline()
    check_eq(b.get("allocations_before_start"), 0,
             "empty victim: allocations before the recorder's start "
             "(the recorder's own lookups must not count)")
    with tmpdir() as d:
        r = record([prog("prestart")], d)
        check_eq(r.out, b"prestart: released, child done\n",
                 "prestart: stdout")
        check_eq(len(r.traces), 2, "prestart: traces of parent and child")
        parent, child = sorted(r.traces, key=len)
        s = dump_stats(parent)
        check_complete(s, "prestart")
        check_eq(s.get("allocations_before_start"), 3,
                 "prestart: allocations before start")
        check_eq(s.get("bytes_before_start"), 3 * 4321,
                 "prestart: bytes before start")
        a = run([HEAPSLOPE, "analyze", "--json", "-", parent])
        check_eq(a.rc, 0, "analyze --json prestart\n" + a.describe())
        t = json.loads(a.out)["totals"]
        check_eq((t["unmatched_frees"], t["allocations_before_start"],
                  t["bytes_before_start"]), (3, 3, 3 * 4321),
                 "prestart report: unmatched frees, allocations and bytes "
                 "before start")
        a = run([HEAPSLOPE, "analyze", parent])
        check(re.search(r"3 unmatched frees; 3 allocations \(12\.7 KiB\) "
                        r"made before recording started, not recorded",
                        a.out.decode()),
              "prestart text report: the events line\n" + a.describe())
        s = dump_stats(child)
        check_complete(s, "prestart's child")
        check("allocations_before_start" not in s,
              f"prestart's child: a count before start in a forked "
              f"child's trace: {s.get('allocations_before_start')}")
        a = run([HEAPSLOPE, "analyze", "--json", "-", child])
        check_eq(json.loads(a.out)["totals"]["allocations_before_start"],
                 None, "prestart's child report: allocations before start")


if __name__ == "__main__":
    main([test_baseline, test_each_function, test_mix, test_realloc_chain,
          test_many_chunks, test_depth_limit, test_stacks, test_marks,
          test_signal_storm,
          test_mmap_counts, test_before_start])
