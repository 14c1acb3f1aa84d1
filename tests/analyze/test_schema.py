"""The JSON report against the contract of DESIGN.md: every field and
type, on the simulator's report, on a time-window report, on a report
written with --json FILE, grouped by site, and on a program without
marks or allocations.  The checker itself must reject broken reports."""
import copy
import json
import os

from analyze_common import (TestFailure, analyze, analyze_run, check,
                            check_eq, fail, main, prog, record_trace, tmpdir,
                            trainsim, validate_report)

_sim = None


def sim_report():
    global _sim
    if _sim is None:
        with tmpdir() as d:
            t = record_trace([trainsim(), "--batches", "12", "--ops", "3000"], d)
            _sim = analyze(t)
    return _sim


def test_simulator_report():
    rep = sim_report()
    validate_report(rep, "trainsim report")
    check_eq(rep["batches"]["source"], "marker", "batches.source")
    check(len(rep["stacks"]) == 10, f"{len(rep['stacks'])} stacks, not the "
          "default --top 10")
    check(rep["program"]["command"][0].endswith("trainsim"),
          f"program.command {rep['program']['command']}")
    check_eq(rep["program"]["command"][1:], ["--batches", "12", "--ops", "3000"],
             "program.command arguments")
    check_eq(rep["program"]["exit_status"], 0, "program.exit_status")
    # samples at the marks: RSS per batch, and an RSS slope
    for e in rep["batches"]["series"]:
        check(isinstance(e["rss_bytes"], int) and e["rss_bytes"] > 0,
              f"series[{e['index']}].rss_bytes {e['rss_bytes']!r}")
    check(rep["growth"]["rss_bytes_per_batch"] is not None,
          "growth.rss_bytes_per_batch is null with RSS samples")


def test_time_windows_and_json_file():
    with tmpdir() as d:
        t = record_trace([prog("av_growth"), "timed", "700"], d)
        rep = analyze(t, "--batches", "time:200ms")
        validate_report(rep, "--batches time:200ms report")
        b = rep["batches"]
        check_eq(b["source"], "time", "batches.source")
        dur_ns = round(rep["totals"]["duration_s"] * 1e9)
        check_eq(b["count"], dur_ns // 200_000_000,
                 f"batches.count for {dur_ns} ns in 200 ms windows")
        for e in b["series"]:
            check(abs(e["end_s"] - 0.2 * (e["index"] + 1)) < 1e-9,
                  f"series[{e['index']}].end_s {e['end_s']}: not the end of "
                  f"its window")
        # --json FILE: the same report as on stdout, and the text report
        # on stdout
        out = os.path.join(d, "report.json")
        r = analyze_run(t, "--batches", "time:200ms", "--json", out)
        check_eq(r.rc, 0, "--json FILE exit status:\n" + r.describe())
        with open(out) as f:
            from_file = json.load(f)
        validate_report(from_file, "--json FILE report")
        check_eq(from_file, rep, "--json FILE report vs --json - report")
        check("Verdict:" in r.out.decode(errors="replace"),
              "--json FILE: no text report on stdout")
        # a file that cannot be created: one line, nonzero exit
        r = analyze_run(t, "--json", os.path.join(d, "no", "such", "dir.json"))
        check(r.rc != 0, "--json into a missing directory exited 0")
        check_eq(len(r.err.decode().splitlines()), 1,
                 f"--json into a missing directory: stderr lines: {r.err!r}")


def test_grouped_and_empty():
    with tmpdir() as d:
        t = record_trace([trainsim(), "--batches", "8", "--ops", "2000"], d)
        validate_report(analyze(t, "--group-by-site"), "--group-by-site report")
        t = record_trace([prog("av_empty")], d, "empty.hst")
        rep = analyze(t)
        validate_report(rep, "empty program report")
        check_eq(rep["batches"]["count"], 0, "empty program: batches.count")
        check_eq(rep["verdict"], "stable", "empty program: verdict")


def test_checker_rejects():
    """Broken copies of a good report must each be rejected."""
    good = sim_report()
    s0 = lambda r: r["stacks"][0]  # noqa: E731

    def edit(f):
        r = copy.deepcopy(good)
        f(r)
        return r
    broken = {
        "schema": lambda r: r.update(schema="heapslope.report/2"),
        "no tool.version": lambda r: r["tool"].pop("version"),
        "command str": lambda r: r["program"].update(command="trainsim"),
        "pid str": lambda r: r["program"].update(pid="1"),
        "complete int": lambda r: r["trace"].update(complete=1),
        "events bool": lambda r: r["trace"].update(events=True),
        "leaked float": lambda r: r["totals"].update(leaked_bytes=1.5),
        "duration str": lambda r: r["totals"].update(duration_s="1"),
        "source": lambda r: r["batches"].update(source="marks"),
        "count": lambda r: r["batches"].update(count=r["batches"]["count"] + 1),
        "rss float": lambda r: r["batches"]["series"][0].update(rss_bytes=1.5),
        "index": lambda r: r["batches"]["series"][1].update(index=0),
        "rss_r2 null only": lambda r: r["growth"].update(rss_r2=None),
        "verdict": lambda r: r.update(verdict="leaking"),
        "rank": lambda r: s0(r).update(rank=2),
        "order": lambda r: s0(r).update(bytes_per_batch=-1),
        "no frames": lambda r: s0(r).pop("frames"),
        "address int": lambda r: s0(r)["frames"][0].update(address=4096),
        "line str": lambda r: s0(r)["frames"][0].update(line="12"),
        "no file": lambda r: s0(r)["frames"][0].pop("file"),
    }
    for name, f in broken.items():
        try:
            validate_report(edit(f), name)
        except TestFailure:
            continue
        fail(f"the schema checker accepted a broken report ({name})")


if __name__ == "__main__":
    main([test_simulator_report, test_time_windows_and_json_file,
          test_grouped_and_empty, test_checker_rejects])
