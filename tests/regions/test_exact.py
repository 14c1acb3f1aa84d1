#!/usr/bin/env python3
"""Growth by region on a C victim with exactly known growth per region
(tests/regions/regions.c): two threads with nested regions open at once;
the name "leaky" leaks 4 KiB a batch (2 KiB on each thread), "cache" keeps
1 KiB a batch that is freed before exit, "stable" holds 3000 B throughout,
and 512 B a batch leak outside any region.  The slopes, the leaked bytes
and the per-batch figures are exact, the rows add up to the live heap's
slope and series, and regions change no event count."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (HEAPSLOPE, analyze, analyze_run,  # noqa: E402
                            check, check_eq, dump_stats, functions, main,
                            record, run, tmpdir, validate_report)

VICTIM = os.path.join(os.environ.get("HEAPSLOPE_PROGRAMS", ""), "regions")
BATCHES = 20


def exact(got, want, what):
    check(abs(got - want) < 1e-6, f"{what}: {got} != {want}")


def rows(rep, kind, key):
    return {key(w): w for w in rep["regions"][kind]}


def recorded(d, *args, name="trace.hst"):
    return record([VICTIM, str(BATCHES), *args], d, output=name).trace()


def test_exact():
    with tmpdir() as d:
        trace = recorded(d)
        rep = analyze(trace)
        validate_report(rep)
        check("regions" in rep, "no regions in the report")
        names = rows(rep, "by_name", lambda w: w["name"])
        check_eq(sorted(names), sorted(["leaky", "cache", "stable", "step",
                                        "worker", "(outside any region)"]),
                 "region names")
        want = {"leaky": (4096, 40 * 2048, 40), "cache": (1024, 0, 0),
                "stable": (0, 3000, 3), "step": (0, 0, 0),
                "worker": (0, 0, 0)}
        for n, (slope, leaked, blocks) in want.items():
            w = names[n]
            exact(w["bytes_per_batch"], slope, f"{n}: bytes_per_batch")
            check_eq((w["leaked_bytes"], w["leaked_blocks"]),
                     (leaked, blocks), f"{n}: leaked bytes, blocks")
            check_eq(w["outside"], False, f"{n}: outside")
        exact(names["leaky"]["r2"], 1, "leaky: r2")
        exact(names["(outside any region)"]["bytes_per_batch"], 512,
              "outside: bytes_per_batch")
        check(names["(outside any region)"]["outside"], "outside: flag")
        check_eq(names["cache"]["live_bytes_at_end"], BATCHES * 1024,
                 "cache: live at the last batch")
        exact(names["stable"]["allocated_bytes_per_batch"], 3000,
              "stable: allocated per batch")
        check_eq(rep["regions"]["by_name"][0]["name"], "leaky",
                 "the region that grows most comes first")
        paths = rows(rep, "by_path", lambda w: " > ".join(w["path"]))
        for p, (slope, leaked) in {"worker > leaky": (2048, 20 * 2048),
                                   "step > leaky": (2048, 20 * 2048),
                                   "step > cache": (1024, 0),
                                   "worker > stable": (0, 3000),
                                   "step": (0, 0), "worker": (0, 0)}.items():
            check(p in paths, f"no path {p!r} in {sorted(paths)}")
            exact(paths[p]["bytes_per_batch"], slope, f"{p}: slope")
            check_eq(paths[p]["leaked_bytes"], leaked, f"{p}: leaked")
        check_eq(paths["step"]["allocated_bytes"], 256 * BATCHES,
                 "step: allocated bytes")
        live = rep["growth"]["live_bytes_per_batch"]
        exact(live, 4096 + 1024 + 512, "live heap slope")
        for kind in ("by_name", "by_path"):
            total = sum(w["bytes_per_batch"] for w in rep["regions"][kind])
            check(abs(total - live) < 1e-6 * max(1, abs(live)),
                  f"{kind}: rows add up to {total}, live slope {live}")
            leaked = sum(w["leaked_bytes"] for w in rep["regions"][kind])
            check_eq(leaked, rep["totals"]["leaked_bytes"],
                     f"{kind}: leaked bytes add up")
        # the batch series: per path, exact, adding up to the batch's
        series = rep["batches"]["series"]
        check_eq(len(series), BATCHES, "batches")
        for i, b in enumerate(series):
            by = {" > ".join(r["path"]): r for r in b["regions"]}
            check_eq(sum(r["live_bytes"] for r in b["regions"]),
                     b["live_bytes"], f"batch {i}: live bytes add up")
            check_eq(sum(r["allocated_bytes"] for r in b["regions"]),
                     b["allocated_bytes"],
                     f"batch {i}: allocated bytes add up")
            check_eq((by["step > leaky"]["allocated_bytes"],
                      by["step > leaky"]["live_bytes"]),
                     (2048, 2048 * (i + 1)), f"batch {i}: step > leaky")
            check_eq(by["worker > stable"]["live_bytes"], 3000,
                     f"batch {i}: worker > stable")
        r = rep["regions"]
        check_eq((r["unmatched_ends"], r["open_at_end"], r["folded_begins"]),
                 (1, 0, 0), "unmatched ends, open at the end, folded")
        # the stacks that grow inside "leaky": one per thread
        st = names["leaky"]["stacks"]
        check_eq(len(st), 2, "leaky: growing stacks")
        fns = [functions(s) for s in st]
        check(any("worker" in f for f in fns) and
              any("main" in f for f in fns),
              f"leaky: stacks from worker and main: {fns}")
        for s in st:
            exact(s["bytes_per_batch"], 2048, "leaky: a stack's slope")
        check_eq(names["(outside any region)"]["stacks"], [],
                 "outside: no stacks")
        # time windows, some closed before the first region record
        tw = analyze(trace, "--batches", "time:200us")
        check(tw["batches"]["count"] >= 2, "time windows: batches")
        for i, b in enumerate(tw["batches"]["series"]):
            check_eq(sum(r["live_bytes"] for r in b["regions"]),
                     b["live_bytes"], f"window {i}: live bytes add up")
        total = sum(w["bytes_per_batch"] for w in tw["regions"]["by_name"])
        live = tw["growth"]["live_bytes_per_batch"]
        check(abs(total - live) < 1e-6 * max(1, abs(live)),
              f"time windows: rows add up to {total}, live slope {live}")
        text = analyze_run(trace).out.decode()
        check("Growth by region" in text and "step > leaky" in text,
              "text report: no 'Growth by region' section with paths:\n" +
              text)
        check("80.0 KiB / 4.0 KiB" in text,
              "text report: no per-batch line of leaky's last batch:\n" +
              text)


def test_counts():
    """The same victim without calling the region API: the same events."""
    with tmpdir() as d:
        keys = ("allocations", "frees", "reallocs", "failed_allocations")
        a = dump_stats(recorded(d, name="with.hst"))
        b = dump_stats(recorded(d, "--no-regions", name="without.hst"))
        check_eq([a.get(k) for k in keys], [b.get(k) for k in keys],
                 "event counts with and without regions")
        check(a.get("allocations", 0) >= BATCHES * 7,
              f"allocations counted: {a}")
        ra = analyze(os.path.join(d, "with.hst"))
        rb = analyze(os.path.join(d, "without.hst"))
        check_eq(ra["totals"]["allocations"], rb["totals"]["allocations"],
                 "analyzed allocations with and without regions")
        check("regions" not in rb, "a report without regions has none")


def test_many_names():
    """Past 4095 distinct names, the others share "(other regions)";
    past 1024 paths, begins are folded into their parent."""
    with tmpdir() as d:
        trace = recorded(d, "--names", "5000")
        r = run([HEAPSLOPE, "dump", trace])
        check_eq(r.rc, 0, "dump")
        names = [line for line in r.out.decode().splitlines()
                 if " region-name " in line]
        check_eq(len(names), 4096, "region-name records")
        check('name="(other regions)"' in names[-1],
              f"the last name: {names[-1]}")
        rep = analyze(trace)
        g = rep["regions"]
        # 1023 paths besides the outside one, then every begin is folded:
        # the other names, and 6 a batch (3 on each thread)
        check_eq(g["folded_begins"], 5000 - 1023 + 6 * BATCHES,
                 "folded begins")
        check_eq(len(g["by_path"]), 1024, "paths")
        by = {w["name"]: w for w in g["by_name"]}
        check("leaky" not in by, "leaky's paths came after the 1024th")
        exact(by["(outside any region)"]["bytes_per_batch"], 4096 + 1024 + 512,
              "outside: the folded regions' growth")


if __name__ == "__main__":
    main([test_exact, test_counts, test_many_names])
