"""The training-loop simulator (data/trainsim.c), whose growth is known
exactly: per batch 102,400 B leaked from leak_activation_history and
10,240 B cached by cache_batch_stats (freed at exit).  The report must find
both, with the right sizes, stacks and verdict."""
import os

from analyze_common import (CACHE_PER_BATCH, LEAK_PER_BATCH, LIVE_PER_BATCH,
                            analyze, analyze_run, baseline_report, check,
                            check_eq, dump_stats, functions, leak_totals,
                            main, near, record_trace, tmpdir, trainsim,
                            validate_report)

BATCHES = 30
OPS = 8000


def test_leak_and_cache():
    base_bytes, base_blocks = leak_totals(baseline_report())
    with tmpdir() as d:
        t = record_trace([trainsim(), "--batches", str(BATCHES), "--ops",
                          str(OPS)], d)
        rep = analyze(t)
        validate_report(rep, "trainsim report")
        check_eq(rep["trace"]["complete"], True, "trace.complete")
        b = rep["batches"]
        check_eq(b["source"], "marker", "batches.source")
        check_eq(b["count"], BATCHES, "batches.count")
        # the live heap at mark b is b x 112,640 over the first mark's
        series = b["series"]
        for i, e in enumerate(series):
            check_eq(e["live_bytes"] - series[0]["live_bytes"],
                     i * LIVE_PER_BATCH, f"series[{i}].live_bytes - series[0]'s")
        g = rep["growth"]
        near(g["live_bytes_per_batch"], LIVE_PER_BATCH, 0.01,
             "growth.live_bytes_per_batch")
        check(g["live_r2"] > 0.99, f"growth.live_r2 {g['live_r2']}")
        check_eq(rep["verdict"], "leak", "verdict")

        st = rep["stacks"]
        check(len(st) >= 2, f"only {len(st)} stacks reported")
        top = st[0]
        near(top["bytes_per_batch"], LEAK_PER_BATCH, 0.01,
             "stacks[0].bytes_per_batch")
        check("leak_activation_history" in functions(top),
              f"stacks[0] frames {functions(top)} lack leak_activation_history")
        check_eq(functions(top)[0], "leak_activation_history",
                 "stacks[0] innermost function")
        f0 = top["frames"][0]
        check(f0["file"] and os.path.basename(f0["file"]) == "trainsim.c",
              f"stacks[0].frames[0].file {f0['file']!r}: not trainsim.c")
        check(isinstance(f0["line"], int) and f0["line"] > 0,
              f"stacks[0].frames[0].line {f0['line']!r}")
        check_eq(top["leaked_bytes"], BATCHES * LEAK_PER_BATCH,
                 "stacks[0].leaked_bytes")
        check_eq(top["leaked_blocks"], BATCHES * 100, "stacks[0].leaked_blocks")
        check_eq(top["allocations"], BATCHES * 100, "stacks[0].allocations")

        cache = st[1]
        near(cache["bytes_per_batch"], CACHE_PER_BATCH, 0.01,
             "stacks[1].bytes_per_batch")
        check_eq(cache["leaked_bytes"], 0, "stacks[1].leaked_bytes")
        check_eq(cache["leaked_blocks"], 0, "stacks[1].leaked_blocks")
        check_eq(cache["live_bytes_at_end"], BATCHES * CACHE_PER_BATCH,
                 "stacks[1].live_bytes_at_end")
        check("cache_batch_stats" in functions(cache),
              f"stacks[1] frames {functions(cache)} lack cache_batch_stats")
        for s in st[2:]:
            check(abs(s["bytes_per_batch"]) < 1,
                  f"stack {s['rank']} {functions(s)[:3]} grows "
                  f"{s['bytes_per_batch']} B/batch; only two stacks grow")

        # the totals are the trace's: equal to dump --stats
        stats = dump_stats(t)
        tot = rep["totals"]
        for k in ("allocations", "frees", "reallocs", "failed_allocations",
                  "allocated_bytes"):
            check_eq(tot[k], stats[k], f"totals.{k} vs dump --stats")
        check_eq(rep["trace"]["events"], stats["events"],
                 "trace.events vs dump --stats")
        # and the simulator's own arithmetic (its header comment)
        check_eq(tot["allocations"], BATCHES * (OPS + 106) +
                 baseline_report()["totals"]["allocations"], "totals.allocations")
        check_eq(tot["reallocs"], BATCHES * 8, "totals.reallocs")
        check_eq(tot["unmatched_frees"], 0, "totals.unmatched_frees")
        check_eq(tot["leaked_bytes"] - base_bytes, BATCHES * LEAK_PER_BATCH,
                 "totals.leaked_bytes minus libc's")
        check_eq(tot["leaked_blocks"] - base_blocks, BATCHES * 100,
                 "totals.leaked_blocks minus libc's")

        # the text report names the leak and the verdict
        r = analyze_run(t)
        check_eq(r.rc, 0, "text report exit status")
        text = r.out.decode(errors="replace")
        check("leak_activation_history" in text,
              "text report does not name leak_activation_history")
        check("Verdict: leak" in text, "text report lacks 'Verdict: leak'")
        check("cache_batch_stats" in text,
              "text report does not name cache_batch_stats")


def test_no_leak():
    with tmpdir() as d:
        t = record_trace([trainsim(), "--batches", "20", "--ops", "4000",
                          "--no-leak"], d)
        rep = analyze(t)
        validate_report(rep, "trainsim --no-leak report")
        check_eq(rep["batches"]["count"], 20, "batches.count")
        check_eq(rep["verdict"], "stable", "verdict with --no-leak")
        check(abs(rep["growth"]["live_bytes_per_batch"]) < 1,
              f"growth.live_bytes_per_batch "
              f"{rep['growth']['live_bytes_per_batch']} with --no-leak")
        for s in rep["stacks"]:
            check(abs(s["bytes_per_batch"]) < 1,
                  f"stack {functions(s)[:3]} grows {s['bytes_per_batch']} "
                  f"B/batch with --no-leak")
            check("leak_activation_history" not in functions(s),
                  "leak_activation_history allocates with --no-leak")
        base_bytes, base_blocks = leak_totals(baseline_report())
        check_eq(rep["totals"]["leaked_bytes"], base_bytes,
                 "totals.leaked_bytes with --no-leak")
        check_eq(rep["totals"]["leaked_blocks"], base_blocks,
                 "totals.leaked_blocks with --no-leak")


def test_regions():
    """trainsim --regions: region "step" around each batch, one named
    after its phase around each operation and each leak ("forward",
    "backward", "optimizer"): the same events as without regions, and
    growth by region exact: forward 102,400 B/batch (the leaks), step
    10,240 (the cache, allocated in the batch's region only), the others
    and the outside 0; the rows add up to the live heap's slope."""
    args = ["--batches", "20", "--ops", "4000"]
    with tmpdir() as d:
        plain = record_trace([trainsim()] + args, d, "plain.hst")
        with_regions = record_trace([trainsim()] + args + ["--regions"], d,
                                    "regions.hst")
        a, b = dump_stats(plain), dump_stats(with_regions)
        for k in ("allocations", "frees", "reallocs", "allocated_bytes"):
            check_eq(b[k], a[k], f"{k} with --regions")
        rep = analyze(with_regions)
        validate_report(rep, "trainsim --regions report")
        rows = {r["name"]: r for r in rep["regions"]["by_name"]}
        want = {"forward": LEAK_PER_BATCH, "step": CACHE_PER_BATCH,
                "backward": 0, "optimizer": 0, "(outside any region)": 0}
        for name, slope in want.items():
            check(name in rows, f"no region row {name!r}: {sorted(rows)}")
            check(abs(rows[name]["bytes_per_batch"] - slope) < 1,
                  f"region {name}: {rows[name]['bytes_per_batch']} B/batch, "
                  f"want {slope}")
        total = sum(r["bytes_per_batch"] for r in rows.values())
        check(abs(total - rep["growth"]["live_bytes_per_batch"]) < 1,
              f"region rows add up to {total}, the live heap grows "
              f"{rep['growth']['live_bytes_per_batch']} B/batch")
        check_eq(rows["forward"]["leaked_bytes"], 20 * LEAK_PER_BATCH,
                 "forward's leaked bytes")


if __name__ == "__main__":
    main([test_leak_and_cache, test_no_leak, test_regions])
