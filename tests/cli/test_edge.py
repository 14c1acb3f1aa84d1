#!/usr/bin/env python3
"""2. Edge cases of the allocation API, read from the dump lines, and the
program sees the same results and errno as natively."""
from common import (ALLOC_RECS, SIZE_MAX, Replay, baseline, check,
                    check_complete, check_eq, dump_stats, fail, load, main,
                    prog, record, run, tmpdir)

# what glibc does natively; the victim prints it, the recorder must not
# change it
NATIVE_EXPECT = [
    "realloc0: NULL",
    "reallocarray0: NULL",
    "malloc-0: ptr errno=0",
    "malloc-max: NULL errno=12",
    "calloc-overflow: NULL errno=12",
    "realloc-null-max: NULL errno=12",
    "reallocarray-overflow: NULL errno=12",
    "realloc-grow-max: NULL errno=12",
    "posix_memalign-3: rc=22 p-unchanged=1",
    "posix_memalign-4096: rc=0 aligned=1",
    "memalign-bad: NULL errno=22",
    "aligned_alloc-64 aligned=1",
    "valloc aligned=1",
    "errno kept by malloc: 12345",
    "errno kept by free: 12345",
]


def addrs(run_):
    out = {}
    for line in run_.victim_err.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "addr":
            out[parts[1]] = 0 if parts[2] == "(nil)" else int(parts[2], 16)
    return out


def test_edge():
    with tmpdir() as d:
        native = run([prog("edge")], cwd=d)
        check_eq(native.rc, 0, "edge natively: exit status")
        nat_lines = native.out.decode().splitlines()
        for want in NATIVE_EXPECT:
            check(want in nat_lines,
                  f"edge natively does not print {want!r} (test assumption "
                  f"about glibc broken):\n{native.out.decode()}")
        r = record([prog("edge")], d)
        check_eq(r.out.decode(), native.out.decode(),
                 "edge: stdout under record vs natively")
        a = addrs(r)
        s = dump_stats(r.trace())
        check_complete(s, "edge")
        b = baseline()
        check_eq(s["failed_allocations"] - b["failed_allocations"], 7,
                 "edge: failed_allocations (malloc, calloc, realloc x2, "
                 "reallocarray, posix_memalign, memalign)")
        # no realloc of a non-NULL pointer succeeded in this program
        check_eq(s["reallocs"] - b["reallocs"], 0, "edge: reallocs")

        evs, _ = load(r.trace())
        ev_index = {}

        def find(pred, what, after=-1):
            for i, e in enumerate(evs):
                if i > after and pred(e):
                    return i
            fail(f"edge: no {what} in the trace (after event {after})")

        def alloc_line(rec, ptr, size):
            return lambda e: (e.rec == rec and "old" not in e.kv and
                              e.int("ptr") == ptr and e.int("size") == size)

        # realloc(p, 0) frees p: a realloc-free line, p never live after
        p = a["realloc0-old"]
        i0 = find(alloc_line("malloc", p, 4321), "malloc size=4321")
        i1 = find(lambda e: e.rec == "realloc-free" and e.int("ptr") == p,
                  "realloc-free of the realloc(p, 0) block", i0)
        rp = Replay()
        for e in evs[:i1 + 1]:
            rp.feed(e)
        check(p not in rp.live, "edge: realloc(p, 0): p still live after "
              "the realloc-free")
        for e in evs:
            if e.kv.get("old") and e.int("old") == p:
                fail(f"edge: realloc(p, 0) recorded as a realloc: {e}")
            if e.rec == "failed realloc" and e.int("size") == 0:
                fail(f"edge: realloc(p, 0) recorded as failed: {e}")
        # between the realloc-free and the next allocation at p, nothing
        # touches p
        nxt = next((i for i in range(i1 + 1, len(evs))
                    if evs[i].rec in ALLOC_RECS and
                    evs[i].int("ptr") == p), len(evs))
        for e in evs[i1 + 1:nxt]:
            if e.kv.get("ptr") and e.int("ptr") == p:
                fail(f"edge: p touched after realloc(p, 0): {e}")

        # reallocarray(p, 0, 8) frees p too
        p = a["reallocarray0-old"]
        i0 = find(alloc_line("malloc", p, 1234), "malloc size=1234")
        find(lambda e: e.rec == "realloc-free" and e.int("ptr") == p,
             "realloc-free of the reallocarray(p, 0, 8) block", i0)

        # realloc(NULL, n) and reallocarray(NULL, n, m) are allocations
        find(alloc_line("realloc", a["realloc-null"], 777),
             "'realloc ptr=.. size=777' without old=")
        find(alloc_line("reallocarray", a["reallocarray-null"], 77),
             "'reallocarray ptr=.. size=77' without old=")
        # malloc(0) is an allocation of size 0
        find(alloc_line("malloc", a["malloc-0"], 0), "malloc size=0")

        def failed(rec, pred, what):
            find(lambda e: e.rec == "failed " + rec and pred(e.int("size")),
                 what)

        failed("malloc", lambda s_: s_ == SIZE_MAX,
               "failed malloc size=SIZE_MAX")
        failed("calloc", lambda s_: s_ >= 2**63,
               "failed calloc with the overflowing size")
        failed("realloc", lambda s_: s_ == SIZE_MAX - 4096,
               "failed realloc(NULL, SIZE_MAX-4096)")
        failed("reallocarray", lambda s_: s_ >= 2**63,
               "failed reallocarray with the overflowing size")
        failed("realloc", lambda s_: s_ == SIZE_MAX - 8192,
               "failed realloc(p, SIZE_MAX-8192)")
        failed("posix_memalign", lambda s_: s_ == 8,
               "failed posix_memalign size=8 (alignment 3: EINVAL)")
        failed("memalign", lambda s_: s_ == 8,
               "failed memalign size=8 (alignment SIZE_MAX: EINVAL)")

        # successful aligned allocations, with their requested sizes
        pm = a["posix_memalign-4096"]
        check(pm and pm % 4096 == 0, f"posix_memalign address {pm:#x}")
        find(alloc_line("posix_memalign", pm, 5000),
             "posix_memalign size=5000")
        find(alloc_line("memalign", a["memalign-256"], 300),
             "memalign size=300")
        find(alloc_line("aligned_alloc", a["aligned_alloc-64"], 640),
             "aligned_alloc size=640")
        find(alloc_line("valloc", a["valloc"], 3000), "valloc size=3000")
        find(alloc_line("pvalloc", a["pvalloc"], 5000), "pvalloc size=5000")

        # failed calls never make live blocks; the whole trace replays
        rp = Replay()
        for e in evs:
            rp.feed(e)
            if e.rec in ("malloc", "calloc", "realloc", "reallocarray") and \
                    e.int("size") >= 2**62:
                fail(f"edge: a failed call recorded as an allocation: {e}")
        check(not rp.errors, "edge: " + rp.error_text())
        check(a["realloc-grow-max-old"] not in rp.live,
              "edge: block kept by a failed realloc was not freed by its free")
        check(0 not in rp.live, "edge: a NULL pointer is live")


if __name__ == "__main__":
    main([test_edge])
