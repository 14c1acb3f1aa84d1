#!/usr/bin/env python3
"""3. Cross-thread order: 2 producers allocate 1M blocks, 2 consumers free
them (a quarter after growing them with realloc), the allocator reuses the
same addresses all the time.  Replayed in
trace order with a live map, the trace must never free an unknown address
nor allocate an already-live one, and must end with no victim block live.
The dump is read line by line: memory stays proportional to live blocks."""
from common import (check, check_complete, check_eq, dump_lines, dump_stats,
                    fail, main, prog, record, tmpdir)

N = 1000000


def replay(path):
    """(live map, error lines, allocations, reallocs, address reuses,
    cross-thread frees, producer tids, consumer tids) of a trace,
    streamed."""
    live = {}       # ptr -> (size, tid)
    seen = set()
    errors = []
    allocs = reallocs = reuses = cross = 0
    alloc_tids, free_tids = set(), set()
    for line in dump_lines(path):
        parts = line.split(" ")
        rec = parts[2]
        if rec == "free" or rec == "realloc-free":
            ptr = int(parts[3][4:], 16)
            got = live.pop(ptr, None)
            tid = int(parts[1])
            if got is None:
                if len(errors) < 10:
                    errors.append("free of unknown address: " + line)
                else:
                    errors.append(None)
            elif got[1] != tid:
                cross += 1
                free_tids.add(tid)
                alloc_tids.add(got[1])
        elif rec in ("malloc", "calloc", "realloc", "reallocarray",
                     "posix_memalign", "aligned_alloc", "memalign", "valloc",
                     "pvalloc"):
            if parts[3].startswith("old="):
                old = int(parts[3][4:], 16)
                got = live.pop(old, None)
                tid = int(parts[1])
                if got is None:
                    if len(errors) < 10:
                        errors.append("realloc of unknown address: " + line)
                    else:
                        errors.append(None)
                elif got[1] != tid:
                    cross += 1
                ptr, size = int(parts[4][4:], 16), int(parts[5][5:])
                reallocs += 1
            else:
                ptr, size = int(parts[3][4:], 16), int(parts[4][5:])
                allocs += 1
            if ptr in live:
                if len(errors) < 10:
                    errors.append("allocation of an already-live address: "
                                  + line)
                else:
                    errors.append(None)
            if ptr in seen:
                reuses += 1
            else:
                seen.add(ptr)
            live[ptr] = (size, int(parts[1]))
    return (live, errors, allocs, reallocs, reuses, cross, alloc_tids,
            free_tids)


def test_cross_thread_order():
    with tmpdir() as d:
        r0 = record([prog("xthread"), "0"], d, output="base.hst")
        s0 = dump_stats(r0.trace())
        check_complete(s0, "xthread 0")
        live0 = replay(r0.trace())[0]

        r = record([prog("xthread"), str(N)], d, timeout=240)
        s = dump_stats(r.trace())
        check_complete(s, f"xthread {N}")
        check_eq(s["allocations"], s0["allocations"] + N,
                 "xthread: allocations (xthread 0 plus N)")
        check_eq(s["frees"], s0["frees"] + N,
                 "xthread: frees (xthread 0 plus N)")
        check_eq(s["reallocs"], s0["reallocs"] + N // 4,
                 "xthread: reallocs (xthread 0 plus N/4)")
        check_eq(s["threads"], 5, "xthread: threads")

        live, errors, allocs, reallocs, reuses, cross, atids, ftids = \
            replay(r.trace())
        if errors:
            shown = "\n  ".join(e for e in errors if e)
            fail(f"xthread: {len(errors)} order errors in the trace, first "
                 f"ones:\n  {shown}")
        check_eq(allocs, s["allocations"], "xthread: allocations replayed")
        check_eq(reallocs, s["reallocs"], "xthread: reallocs replayed")
        # the test means something only if addresses were reused and freed
        # by other threads than the allocating ones
        check(reuses >= N * 0.9,
              f"xthread: only {reuses} of {N} allocations reused an address")
        check(cross >= N, f"xthread: only {cross} frees or reallocs on "
              "another thread than the allocation")
        check_eq(len(atids), 2, "xthread: threads allocating blocks freed "
                 "elsewhere")
        check_eq(len(ftids), 2, "xthread: threads freeing blocks allocated "
                 "elsewhere")
        # what is left is what the same program leaves with no blocks at
        # all (libc's thread bookkeeping), never a victim block
        left = sorted(sz for sz, _ in live.values())
        left0 = sorted(sz for sz, _ in live0.values())
        check(len(left) <= len(left0),
              f"xthread: {len(left)} blocks live at the end (sizes "
              f"{left[:20]}), xthread 0 leaves {len(left0)} ({left0[:20]})")
        print(f"   {allocs} allocations, {reuses} address reuses, {cross} "
              f"cross-thread frees, {len(left)} blocks live at the end "
              f"(baseline {len(left0)})")


if __name__ == "__main__":
    main([test_cross_thread_order])
