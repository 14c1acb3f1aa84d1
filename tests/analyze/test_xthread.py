"""Cross-thread frees: 2 producers malloc, 2 consumers free (every 4th
after a realloc).  Replayed in order there is no unmatched free and
nothing leaked but the same per-thread libc blocks as a run of the same
four threads that allocate nothing."""
from analyze_common import (analyze, check_eq, dump_stats, main, prog,
                            record_trace, tmpdir, validate_report)

N = 100000


def report(n):
    with tmpdir() as d:
        t = record_trace([prog("av_xthread"), str(n)], d)
        rep = analyze(t, "--top", "1000")
        stats = dump_stats(t)
    validate_report(rep, f"av_xthread {n}")
    check_eq(rep["trace"]["complete"], True, f"xthread {n}: trace.complete")
    for k in ("allocations", "frees", "reallocs"):
        check_eq(rep["totals"][k], stats[k], f"xthread {n}: totals.{k} vs dump")
    return rep


def test_cross_thread_frees():
    base = report(0)["totals"]
    check_eq(base["unmatched_frees"], 0, "xthread 0: unmatched_frees")
    for run in range(2):
        rep = report(N)
        t = rep["totals"]
        what = f"xthread {N} (run {run + 1})"
        check_eq(t["unmatched_frees"], 0, f"{what}: unmatched_frees")
        check_eq(t["replaced_allocations"] if "replaced_allocations" in t
                 else 0, 0, f"{what}: replaced_allocations")
        check_eq(t["allocations"] - base["allocations"], N,
                 f"{what}: allocations beyond the baseline")
        check_eq(t["frees"] - base["frees"], N,
                 f"{what}: frees beyond the baseline")
        check_eq(t["reallocs"] - base["reallocs"], N // 4,
                 f"{what}: reallocs beyond the baseline")
        check_eq(t["leaked_blocks"], base["leaked_blocks"],
                 f"{what}: leaked_blocks (libc's own per-thread blocks)")
        check_eq(t["leaked_bytes"], base["leaked_bytes"],
                 f"{what}: leaked_bytes (libc's own per-thread blocks)")
        for s in rep["stacks"]:
            fns = [f["function"] for f in s["frames"]]
            if "producer" in fns or "consumer" in fns:
                check_eq(s["leaked_blocks"], 0,
                         f"{what}: leaked blocks of stack {fns[:3]}")


if __name__ == "__main__":
    main([test_cross_thread_frees])
