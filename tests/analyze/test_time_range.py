"""Time ranges (heapslope-analyze(1), --from / --until): a Python cache
leak recorded without marks (cache_leak.py: imports, then a loop that
keeps 16 KiB a step in a dict, then a teardown that frees it) must come
out growing, at the rate the script itself measured, because the
start-up and the teardown are left out automatically; --from 0 --until
end keeps them (and the slope is then wrong: what the cut is for);
explicit bounds are honoured, the EXITING record cuts the teardown, and
bad bounds are refused with exit 2."""
import json
import os
import sys

from analyze_common import (analyze, analyze_run, check, check_eq, main,
                            near, prog, record, record_trace, run, tmpdir)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "cache_leak.py")
APPEND_EXITING = os.environ.get("HEAPSLOPE_APPEND_EXITING", "")
WINDOW = 0.2
STEPS = 300

_rec = {}


def recording():
    """The trace and what the script says it did, recorded once."""
    if not _rec:
        cm = tmpdir()  # kept: the directory lives as long as the test
        d = cm.__enter__()
        env = dict(os.environ, PYTHONMALLOC="malloc")
        r = record([sys.executable, SCRIPT, str(STEPS)], d, env=env,
                   output="leak.hst")
        did = json.loads(r.out.decode().strip().splitlines()[-1])
        _rec.update(cm=cm, dir=d, trace=r.traces[0], did=did)
    return _rec


def truth_per_s():
    did = recording()["did"]
    return did["bytes_each"] * did["iterations"] / (did["end"] - did["start"])


def within(got, want, rel, what):
    check(abs(got - want) <= rel * abs(want),
          f"{what}: {got:.0f}, want {want:.0f} within {rel:.0%}")


def check_growing(rep, window_s, what):
    check(rep["verdict"] in ("leak", "retention"),
          f"{what}: verdict {rep['verdict']!r}, want a growing one "
          f"(why: {rep['verdict_reason']})")
    within(rep["growth"]["live_bytes_per_batch"] / window_s, truth_per_s(),
           0.2, f"{what}: live heap slope per second")


def test_time_windows_cut():
    t = recording()["trace"]
    rep = analyze(t, "--batches", f"time:{int(WINDOW * 1000)}ms")
    rg = rep["range"]
    check_eq(rg["startup_cut"], True, "range.startup_cut")
    check_eq(rg["teardown_cut"], True, "range.teardown_cut")
    check(rg["left_out"] and "--from 0" in rg["left_out"] and
          "--until end" in rg["left_out"],
          f"range.left_out says what was left out and how to keep it: "
          f"{rg['left_out']!r}")
    check(rg["from_s"] >= recording()["did"]["import_s"] * 0.5,
          f"the start-up (imports, {recording()['did']['import_s']:.2f} s) "
          f"is left out: from_s {rg['from_s']}")
    check_growing(rep, WINDOW, "time:200ms")
    text = analyze_run(t, "--batches", "time:200ms").out.decode()
    check("left out automatically" in text and "--from 0" in text,
          "the text report says what was left out:\n" + text[:1200])


def test_auto_windows_cut():
    rep = analyze(recording()["trace"])
    check_eq(rep["batches"]["source"], "auto", "batches.source")
    check(rep["range"]["startup_cut"] and rep["range"]["teardown_cut"],
          f"auto windows: start-up and teardown cut: {rep['range']}")
    check_growing(rep, rep["batches"]["window_s"], "auto windows")


def test_no_cut_is_wrong():
    """What the cut is for: over the whole run the slope is not the
    script's (start-up and teardown dominate)."""
    rep = analyze(recording()["trace"], "--batches", "time:200ms",
                  "--from", "0", "--until", "end")
    rg = rep["range"]
    check(not rg["startup_cut"] and not rg["teardown_cut"] and
          rg["left_out"] is None, f"--from 0 --until end: no cut: {rg}")
    got = rep["growth"]["live_bytes_per_batch"] / WINDOW
    check(abs(got - truth_per_s()) > 0.2 * truth_per_s(),
          f"the whole run's slope {got:.0f} B/s is already the truth "
          f"{truth_per_s():.0f}: the test cannot tell the cut works")


def test_explicit_range():
    t = recording()["trace"]
    full = analyze(t, "--batches", "time:200ms")
    a = full["range"]["from_s"] + 0.3
    b = full["range"]["until_s"] - 0.3
    rep = analyze(t, "--batches", "time:200ms", "--from", f"{a:.3f}",
                  "--until", f"{b:.3f}")
    rg = rep["range"]
    check(abs(rg["from_s"] - a) < 1e-3 and abs(rg["until_s"] - b) < 1e-3,
          f"range {rg}, want {a:.3f} to {b:.3f}")
    check(rg["from_given"] and rg["until_given"] and not rg["startup_cut"]
          and not rg["teardown_cut"], f"explicit bounds override: {rg}")
    for x in rep["batches"]["series"]:
        check(a <= x["end_s"] <= b + 1e-9,
              f"batch ending at {x['end_s']} outside {a:.3f}..{b:.3f}")
    check_growing(rep, WINDOW, "explicit range")
    # batch:N with time windows: window N's start
    rep = analyze(t, "--batches", "time:200ms", "--from", "batch:8",
                  "--until", "batch:14")
    ends = [x["end_s"] for x in rep["batches"]["series"]]
    check(ends and abs(ends[0] - 1.8) < 1e-6 and abs(ends[-1] - 2.8) < 1e-6,
          f"--from batch:8 --until batch:14: batch ends {ends}")


def test_exiting_record():
    """The EXITING record (the process began to exit) ends the range."""
    check(APPEND_EXITING and os.access(APPEND_EXITING, os.X_OK),
          "HEAPSLOPE_APPEND_EXITING is not set")
    with tmpdir() as d:
        t = os.path.join(d, "exiting.hst")
        with open(recording()["trace"], "rb") as f, open(t, "wb") as g:
            g.write(f.read())
        full = analyze(t, "--batches", "time:200ms", "--until", "end")
        at = round(full["batches"]["series"][-1]["end_s"] * 0.7, 1) + 0.05
        r = run([APPEND_EXITING, t, str(at)])
        check_eq(r.rc, 0, "append_exiting")
        rep = analyze(t, "--batches", "time:200ms")
    rg = rep["range"]
    check(rg["exiting_s"] is not None and abs(rg["exiting_s"] - at) < 1e-6,
          f"range.exiting_s {rg['exiting_s']}, want {at}")
    check(rg["teardown_cut"] and abs(rg["until_s"] - at) < 1e-6,
          f"the range ends where the exit began: {rg}")
    check("began to exit" in rg["left_out"], f"left_out: {rg['left_out']}")
    check(rep["batches"]["series"][-1]["end_s"] <= at,
          "a batch ends after the exit began")


def test_batch_marks():
    """--from batch:N --until batch:M with batch marks: batches N to M-1 of
    the run, their slope; batch:N past the last batch is refused; time
    bounds pick the batches whose mark lies within them; marks are never
    cut automatically."""
    with tmpdir() as d:
        t = record_trace([prog("av_growth"), "retention", "20"], d)
        full = analyze(t)
        rep = analyze(t, "--from", "batch:5", "--until", "batch:15")
        check_eq(full["range"]["startup_cut"] or full["range"]["teardown_cut"],
                 False, "marks: no automatic cut")
        check_eq(rep["batches"]["count"], 10, "batch:5..15: batches.count")
        ends = [x["end_s"] for x in rep["batches"]["series"]]
        want = [x["end_s"] for x in full["batches"]["series"][5:15]]
        check_eq(ends, want, "batch:5..15: the batches' ends")
        check_eq((rep["range"]["from_batch"], rep["range"]["until_batch"]),
                 (5, 15), "range.from_batch, until_batch")
        near(rep["growth"]["live_bytes_per_batch"], 65536, 0.01,
             "batch:5..15: live heap slope")
        # the first batch of the range counts its own events only
        check_eq(rep["batches"]["series"][0]["allocations"],
                 full["batches"]["series"][5]["allocations"],
                 "batch:5..15: the first batch's allocations")
        a, b = want[2], want[7]
        rep = analyze(t, "--from", f"{a:.9f}", "--until", f"{b:.9f}")
        check_eq([x["end_s"] for x in rep["batches"]["series"]],
                 want[2:8], "time bounds with marks: the batches kept")
        for opts in (["--from", "batch:20"], ["--until", "batch:21"]):
            r = analyze_run(t, *opts)
            check_eq(r.rc, 2, f"marks: {' '.join(opts)}: exit status")
            check("past the last batch" in r.err.decode(),
                  f"marks: {' '.join(opts)}: the error:\n" + r.describe())


def test_bad_bounds():
    t = recording()["trace"]
    for opts in (["--from", "-1"], ["--until", "abc"], ["--from", "batch:"],
                 ["--from", "3", "--until", "2"], ["--from", "1e9"],
                 ["--until", "999"], ["--from", "batch:100000"],
                 ["--from", "nan"], ["--from", ""]):
        r = analyze_run(t, *opts)
        err = r.err.decode().strip()
        check_eq(r.rc, 2, f"analyze {' '.join(opts)}: exit status")
        check(err and r.out == b"",
              f"analyze {' '.join(opts)}: an error and no report:\n"
              + r.describe())
        check(err.splitlines()[0].startswith("heapslope analyze:"),
              f"analyze {' '.join(opts)}: the error line:\n{err}")


if __name__ == "__main__":
    main([test_time_windows_cut, test_auto_windows_cut, test_no_cut_is_wrong,
          test_explicit_range, test_exiting_record, test_batch_marks,
          test_bad_bounds])
