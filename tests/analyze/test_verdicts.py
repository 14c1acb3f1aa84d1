"""The verdict of small programs with batch marks (av_growth.c): growth
freed at exit is retention, the same growth never freed is a leak, a
steady working set is stable."""
from analyze_common import (analyze, check, check_eq, functions, leak_totals,
                            baseline_report, main, near, one_stack_at, prog,
                            record_trace, tmpdir, validate_report)

BATCHES = 20
BLOCK = 64 * 1024


def growth_report(mode):
    with tmpdir() as d:
        t = record_trace([prog("av_growth"), mode, str(BATCHES)], d)
        rep = analyze(t)
    validate_report(rep, f"av_growth {mode}")
    check_eq(rep["trace"]["complete"], True, f"{mode}: trace.complete")
    check_eq(rep["batches"]["source"], "marker", f"{mode}: batches.source")
    check_eq(rep["batches"]["count"], BATCHES, f"{mode}: batches.count")
    check_eq(rep["totals"]["unmatched_frees"], 0, f"{mode}: unmatched_frees")
    return rep


def test_retention():
    rep = growth_report("retention")
    check_eq(rep["verdict"], "retention", "retention: verdict")
    near(rep["growth"]["live_bytes_per_batch"], BLOCK, 0.01,
         "retention: growth.live_bytes_per_batch")
    top = rep["stacks"][0]
    check_eq(functions(top)[0], "remember_batch", "retention: top stack")
    near(top["bytes_per_batch"], BLOCK, 0.01, "retention: top bytes_per_batch")
    check_eq(top["live_bytes_at_end"], BATCHES * BLOCK,
             "retention: top live_bytes_at_end")
    check_eq(top["leaked_bytes"], 0, "retention: top leaked_bytes")
    check_eq(top["leaked_blocks"], 0, "retention: top leaked_blocks")
    check_eq(leak_totals(rep), leak_totals(baseline_report()),
             "retention: totals leaked (bytes, blocks) vs the empty victim")


def test_leak():
    rep = growth_report("leak")
    check_eq(rep["verdict"], "leak", "leak: verdict")
    near(rep["growth"]["live_bytes_per_batch"], BLOCK, 0.01,
         "leak: growth.live_bytes_per_batch")
    top = one_stack_at(rep, "remember_batch")
    check_eq(top["rank"], 1, "leak: rank of remember_batch's stack")
    check_eq(top["leaked_bytes"], BATCHES * BLOCK, "leak: leaked_bytes")
    check_eq(top["leaked_blocks"], BATCHES, "leak: leaked_blocks")


def test_steady():
    rep = growth_report("steady")
    check_eq(rep["verdict"], "stable", "steady: verdict")
    check(abs(rep["growth"]["live_bytes_per_batch"]) < 1,
          f"steady: growth.live_bytes_per_batch "
          f"{rep['growth']['live_bytes_per_batch']}")
    series = rep["batches"]["series"]
    lives = {e["live_bytes"] for e in series}
    check_eq(len(lives), 1, "steady: distinct live_bytes at the marks")
    for s in rep["stacks"]:
        check(abs(s["bytes_per_batch"]) < 1,
              f"steady: stack {functions(s)[:2]} grows {s['bytes_per_batch']}")
    # the 8 blocks of 1000 B kept from the start are live at every mark
    check(series[0]["live_bytes"] >= 8000,
          f"steady: live_bytes {series[0]['live_bytes']} < the 8000 B kept")


if __name__ == "__main__":
    main([test_retention, test_leak, test_steady])
