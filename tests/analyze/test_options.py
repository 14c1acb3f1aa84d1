"""Options of `heapslope analyze`: --top, --group-by-site, --warmup,
--batches, --format, and bad values (one error line, exit 2)."""
import json
import os
import shutil

from analyze_common import (ALL_STACKS, HEAPSLOPE, analyze, analyze_run,
                            check_usage_error,
                            check, check_eq, functions, main, no_crash, prog,
                            record_trace, run, stacks_at, tmpdir, trainsim,
                            validate_report)

def sim_trace(d):
    return record_trace([trainsim(), "--batches", "20", "--ops", "3000"], d,
                        "trainsim.hst")


def test_top():
    with tmpdir() as d:
        t = sim_trace(d)
        rep = analyze(t, "--top", "1")
        validate_report(rep, "--top 1")
        check_eq(len(rep["stacks"]), 1, "--top 1: number of stacks")
        check_eq(functions(rep["stacks"][0])[0], "leak_activation_history",
                 "--top 1: the stack")
        check_eq(len(analyze(t, "--top", "0")["stacks"]), 0,
                 "--top 0: number of stacks")
        check_eq(len(analyze(t)["stacks"]), 10, "default --top: stacks")
        every = analyze(t, "--top", ALL_STACKS)
        validate_report(every, "--top all")
        n = every["trace"].get("distinct_stacks")
        # 30 sites x 11 depths + 5 fixed stacks (data/trainsim.c); clang
        # builds unroll two loops into more call sites
        check(len(every["stacks"]) in (335, 345),
              f"--top {ALL_STACKS}: {len(every['stacks'])} stacks, "
              f"trace has {n}")
        check_eq(sum(s["allocations"] for s in every["stacks"]),
                 every["totals"]["allocations"],
                 "allocations summed over every stack vs totals.allocations")


def check_paths(site, what):
    paths = site.get("paths")
    check(isinstance(paths, list) and paths,
          f"{what}: no 'paths' list under a site")
    for j, p in enumerate(paths):
        check_eq(p["rank"], j + 1, f"{what}: path {j} rank")
        check(p["frames"] and p["frames"][0]["address"] ==
              site["frames"][0]["address"],
              f"{what}: path {j} does not start at the site's frame")
    for j in range(1, len(paths)):
        check(paths[j]["bytes_per_batch"] <= paths[j - 1]["bytes_per_batch"],
              f"{what}: paths not ranked by bytes_per_batch")
    return paths


def test_group_by_site():
    with tmpdir() as d:
        t = record_trace([prog("av_leaks"), "paths", "ones"], d)
        flat = analyze(t, "--top", ALL_STACKS)
        check_eq(len(stacks_at(flat, "leak_via_paths")), 3,
                 "without grouping: stacks allocating in leak_via_paths")
        rep = analyze(t, "--top", ALL_STACKS, "--group-by-site")
        validate_report(rep, "--group-by-site")
        sites = stacks_at(rep, "leak_via_paths")
        check_eq(len(sites), 1, "grouped: entries for leak_via_paths")
        site = sites[0]
        check_eq(len(site["frames"]), 1, "grouped: frames of a site")
        check_eq((site["leaked_bytes"], site["leaked_blocks"],
                  site["allocations"]), (720, 30, 30),
                 "grouped: leak_via_paths (leaked_bytes, blocks, allocations)")
        paths = check_paths(site, "leak_via_paths")
        check_eq(len(paths), 3, "grouped: paths of leak_via_paths")
        callers = sorted(functions(p)[1] for p in paths)
        check_eq(callers, ["path_a", "path_b", "path_b"],
                 "grouped: the callers of the three paths")
        check(any(functions(p)[2] == "path_c" for p in paths),
              "grouped: no path through path_c")
        for p in paths:
            check_eq((p["leaked_bytes"], p["leaked_blocks"]), (240, 10),
                     f"grouped: path {functions(p)[:3]} leaks")
        ones = stacks_at(rep, "leak_one_byte")
        check_eq(len(ones), 1, "grouped: entries for leak_one_byte")
        check_eq(len(check_paths(ones[0], "leak_one_byte")), 1,
                 "grouped: paths of leak_one_byte")
        check_eq(sum(s["leaked_blocks"] for s in rep["stacks"]),
                 rep["totals"]["leaked_blocks"],
                 "grouped: leaked_blocks summed over the sites")
        # the text report shows no path without its frames (--top 2: the
        # two sites, leak_via_paths with three paths)
        r = analyze_run(t, "--group-by-site", "--top", "2")
        check_eq(r.rc, 0, "--group-by-site text report exit status")
        text = r.out.decode()
        check("leak_via_paths" in text and "path_a" in text,
              "--group-by-site --top 2 text report lacks leak_via_paths")
        check("no frames recorded" not in text,
              "--group-by-site --top 2 text report shows paths without "
              "frames:\n" + text[-1500:])
        # the simulator: 30 sites reached at 11 depths each, + 5 fixed
        t = sim_trace(d)
        sim = analyze(t, "--top", ALL_STACKS, "--group-by-site")
        validate_report(sim, "trainsim --group-by-site")
        check_eq(functions(sim["stacks"][0]), ["leak_activation_history"],
                 "trainsim grouped: first site")
        site = stacks_at(sim, "embedding_lookup")
        check_eq(len(site), 1, "trainsim grouped: embedding_lookup sites")
        check_eq(len(check_paths(site[0], "embedding_lookup")), 11,
                 "trainsim grouped: paths of embedding_lookup")
        # --top also bounds the sites
        check_eq(len(analyze(t, "--top", "2", "--group-by-site")["stacks"]), 2,
                 "--group-by-site --top 2: sites")


def test_warmup():
    with tmpdir() as d:
        t = sim_trace(d)
        auto = analyze(t)
        check_eq(auto["batches"]["warmup"], 2, "automatic warm-up of 20 batches "
                 "(10%, at most 5)")
        for w in (0, 5, 19):
            rep = analyze(t, "--warmup", str(w))
            validate_report(rep, f"--warmup {w}")
            check_eq(rep["batches"]["warmup"], w, f"--warmup {w}: batches.warmup")
            if w < 18:
                slope = rep["growth"]["live_bytes_per_batch"]
                check(abs(slope - 112640) <= 1126,
                      f"--warmup {w}: live_bytes_per_batch {slope}")
                check_eq(rep["verdict"], "leak", f"--warmup {w}: verdict")
            if "batches_fitted" in rep["growth"]:
                check_eq(rep["growth"]["batches_fitted"], 20 - w,
                         f"--warmup {w}: growth.batches_fitted")
        # one batch left after the warm-up: too few to tell
        check_eq(analyze(t, "--warmup", "19")["verdict"], "stable",
                 "--warmup 19 of 20: verdict")


def test_batches():
    with tmpdir() as d:
        t = record_trace([prog("av_growth"), "timed", "1100"], d)
        dur_ns = None
        for opt, source, window in (("time:1s", "time", 1.0),
                                    ("time:250ms", "time", 0.25),
                                    (None, "auto", None),
                                    ("marker", "marker", None)):
            rep = analyze(t, *(("--batches", opt) if opt else ()))
            validate_report(rep, f"--batches {opt}")
            b = rep["batches"]
            check_eq(b["source"], source, f"--batches {opt}: batches.source")
            dur_ns = round(rep["totals"]["duration_s"] * 1e9)
            check(dur_ns >= 1_050_000_000, f"duration {dur_ns} ns")
            if window:
                check_eq(b["count"], dur_ns // round(window * 1e9),
                         f"--batches {opt}: batches.count ({dur_ns} ns)")
            elif source == "auto":
                check(3 <= b["count"] <= 25,
                      f"automatic windows: {b['count']} batches")
            else:
                check_eq(b["count"], 0, "--batches marker without marks: count")
            check_eq(rep["totals"]["leaked_blocks"], 0,
                     f"--batches {opt}: leaked_blocks")
        # marks win over nothing: with marks, the default is the marks
        t = sim_trace(d)
        check_eq(analyze(t)["batches"]["source"], "marker",
                 "default source with marks")
        rep = analyze(t, "--batches", "time:10ms")
        check_eq(rep["batches"]["source"], "time", "time:10ms with marks: source")


def test_several_traces():
    """Several traces: one line each side by side, or a comparison JSON
    document holding each one's full report; one unreadable trace fails
    the command."""
    with tmpdir() as d:
        a = record_trace([trainsim(), "--batches", "12"], d)
        b = record_trace([prog("av_empty")], d, name="second.hst")
        r = analyze_run(a, b)
        check_eq(r.rc, 0, "analyze A B:\n" + r.describe())
        out = r.out.decode()
        lines = [ln for ln in out.splitlines()
                 if ln.strip().startswith(("trace.hst", "second.hst"))]
        check_eq(len(lines), 2, f"one line per trace:\n{out}")
        sim = [ln for ln in lines if ln.strip().startswith("trace.hst")]
        check(sim and "leak" in sim[0] and "glibc" in sim[0],
              f"the simulator's line names allocator and verdict:\n{out}")
        r = analyze_run(b, "--json", "-", a)
        check_eq(r.rc, 0, "analyze --json - A B:\n" + r.describe())
        doc = json.loads(r.out)
        check_eq(doc["schema"], "heapslope.comparison/1", "schema")
        check_eq(len(doc["reports"]), 2, "reports")
        check_eq(doc["reports"][0]["schema"], "heapslope.report/1",
                 "each report is a full report")
        check_eq(doc["reports"][0]["batches"]["count"], 12, "batches of A")
        r = analyze_run(a, os.path.join(d, "missing.hst"))
        check_eq(r.rc, 1, "a missing second trace:\n" + r.describe())
        check("missing.hst" in r.err.decode(), "the error names it")


def test_format():
    """--format text|json chooses the report on stdout, for one trace or
    several; --json - is --format json; --json FILE writes the JSON there
    besides the text."""
    def with_args(*args):
        r = run([HEAPSLOPE, "analyze", *args])
        no_crash(r, f"analyze {' '.join(args)}")
        return r

    with tmpdir() as d:
        a = record_trace([trainsim(), "--batches", "8", "--ops", "2000"], d)
        b = record_trace([prog("av_empty")], d, name="second.hst")
        for traces in ([a], [a, b]):
            text = with_args(*traces)
            check_eq(text.rc, 0, "analyze:\n" + text.describe())
            same = with_args("--format", "text", *traces)
            check_eq((same.rc, same.out), (0, text.out),
                     f"--format text vs the default ({len(traces)} traces)")
            js = with_args("--format", "json", *traces)
            check_eq(js.rc, 0, "--format json:\n" + js.describe())
            check_eq(json.loads(js.out)["schema"],
                     "heapslope.report/1" if len(traces) == 1
                     else "heapslope.comparison/1", "--format json: schema")
            dash = with_args("--json", "-", *traces)
            check_eq((dash.rc, dash.out), (0, js.out),
                     f"--json - vs --format json ({len(traces)} traces)")
            path = os.path.join(d, "report.json")
            both = with_args("--json", path, *traces)
            check_eq((both.rc, both.out), (0, text.out),
                     f"--json FILE: the text on stdout ({len(traces)})")
            check_eq(open(path, "rb").read(), js.out,
                     f"--json FILE: the JSON in FILE ({len(traces)})")
        r = run([HEAPSLOPE, "analyze", "--format", "xml", a])
        check_eq(r.rc, 2, "--format xml: exit status\n" + r.describe())
        check("'xml'" in r.err.decode() and "text, json" in r.err.decode(),
              "--format xml: the error names it and the formats")


def test_debug_files():
    """Separate debug files found by .gnu_debuglink: beside the binary, in
    its .debug subdirectory, under --debuginfo-path DIR followed by the
    binary's directory; without one the frames have no file and line."""
    with tmpdir() as d:
        bindir = os.path.join(d, "bin")
        os.mkdir(bindir)
        exe = os.path.join(bindir, "trainsim")
        dbg = exe + ".debug"
        shutil.copy(trainsim(), exe)
        for argv in (["--only-keep-debug", exe, dbg], ["--strip-debug", exe],
                     ["--add-gnu-debuglink=" + dbg, exe]):
            r = run(["objcopy", *argv])
            check_eq(r.rc, 0, "objcopy:\n" + r.describe())
        t = record_trace([exe, "--batches", "6", "--ops", "2000"], d)
        elsewhere = os.path.join(d, "elsewhere.debug")
        os.rename(dbg, elsewhere)
        dotdebug = os.path.join(bindir, ".debug")
        os.mkdir(dotdebug)
        under = os.path.join(d, "dbgroot")
        os.makedirs(under + bindir)
        places = ((dbg, ()), (os.path.join(dotdebug, "trainsim.debug"), ()),
                  (under + dbg, ("--debuginfo-path", under)))
        for place, opts in places:
            os.rename(elsewhere, place)
            top = analyze(t, *opts)["stacks"][0]["frames"][0]
            check_eq((top["function"], os.path.basename(top["file"] or "")),
                     ("leak_activation_history", "trainsim.c"),
                     f"innermost frame with the debug file at {place}")
            os.rename(place, elsewhere)
        top = analyze(t)["stacks"][0]["frames"][0]
        check_eq((top["function"], top["file"]),
                 ("leak_activation_history", None),
                 "innermost frame without a debug file (symbols only)")


def test_bad_options():
    with tmpdir() as d:
        t = record_trace([prog("av_empty")], d)
        for args, word in ((["--top", "x", t], "x"), (["--top", "-1", t], "-1"),
                           (["--top", "", t], "top"),
                           (["--batches", "foo", t], "foo"),
                           (["--batches", "time:", t], "time:"),
                           (["--batches", "time:0", t], "time:0"),
                           (["--batches", "time:-1s", t], "time:-1s"),
                           (["--batches", "time:5parsecs", t], "parsecs"),
                           (["--warmup", "x", t], "x"),
                           (["--warmup", "-3", t], "-3"),
                           (["--frobnicate", t], "frobnicate"),
                           ([t, "--top"], "top"),
                           ([], "no trace"),
                           ([t] * 65, "at most 64")):
            r = run([HEAPSLOPE, "analyze", *args])
            no_crash(r, f"analyze {args}")
            check_usage_error(r, f"analyze {' '.join(args)}", word)


if __name__ == "__main__":
    main([test_top, test_group_by_site, test_warmup, test_batches,
          test_several_traces, test_format, test_debug_files,
          test_bad_options])
