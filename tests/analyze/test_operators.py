"""Growth by operator (analyze --group-by-frame, --operators): the victim
tests/programs/operators.cc has "operators" of exactly known growth.

- a glob and a regex on its functions myops::op_*: one row per operator,
  named by what the first * (or the regex's group) matched, with exact
  slopes, leaked bytes and stack counts; the unmatched row; the rows add
  up to the live heap's slope;
- the paddle preset on frames named as PaddlePaddle's: the kernels' rows
  carry the operator's type, the framework's RunImpl its own;
- bad patterns: one error line, exit status 2.
"""
import atexit
import shutil
import tempfile

import copy

from analyze_common import (TestFailure, analyze, analyze_run, check,
                            check_usage_error,
                            check_eq, fail, main, prog, record_trace, tmpdir,
                            validate_report)

BATCHES = 20
_traces = {}
_dir = tempfile.mkdtemp(prefix="hs-operators-")
atexit.register(shutil.rmtree, _dir, True)


def trace(mode, d=None):
    """The victim's trace in mode, recorded once for every test."""
    if mode not in _traces:
        _traces[mode] = record_trace([prog("av_operators"), mode,
                                      str(BATCHES)], _dir,
                                     name=mode + ".hst")
    return _traces[mode]


def rows_of(rep, what):
    g = rep.get("groups")
    check(isinstance(g, dict), f"{what}: no groups object in the report")
    rows = g["rows"]
    check(rows and rows[-1]["unmatched"] is True and
          rows[-1]["name"] == "(unmatched)",
          f"{what}: the last row is not the unmatched one: {rows[-1:]}")
    check(sum(r["unmatched"] for r in rows) == 1,
          f"{what}: more than one unmatched row")
    names = [r["name"] for r in rows]
    check_eq(len(names), len(set(names)), f"{what}: row names repeat")
    # the rows add up to the live heap's slope (rounding aside)
    live = rep["growth"]["live_bytes_per_batch"]
    total = sum(r["bytes_per_batch"] for r in rows)
    check(abs(total - live) <= 1e-6 * max(1.0, abs(live)),
          f"{what}: rows add up to {total}, the live heap grows {live}")
    check(abs(g["rows_bytes_per_batch"] - total) <= 1e-6 * max(1, total),
          f"{what}: rows_bytes_per_batch {g['rows_bytes_per_batch']} is "
          f"not the rows' sum {total}")
    by_growth = [r["bytes_per_batch"] for r in rows[:-1]]
    check(by_growth == sorted(by_growth, reverse=True),
          f"{what}: rows not ranked by growth: {names}")
    return {r["name"]: r for r in rows}


def rep_all_stacks(t):
    return analyze(t, "--top", "1000000")["stacks"]


def exact(row, want, what):
    got = row["bytes_per_batch"]
    check(abs(got - want) < 1e-6, f"{what}: {got} B/batch, want {want}")
    if want:
        check(row["r2"] > 0.999999, f"{what}: R² {row['r2']}")


def test_glob():
    with tmpdir() as d:
        t = trace("mine", d)
        rep = analyze(t, "--group-by-frame", "myops::op_*")
        validate_report(rep, "--group-by-frame")
        g = rep["groups"]
        check_eq(g["pattern"], "myops::op_*", "groups.pattern")
        check_eq(g["preset"], None, "groups.preset")
        rows = rows_of(rep, "glob")
        check_eq(sorted(rows), sorted(["leak", "stable", "cache",
                                       "(unmatched)"]), "row names")
        exact(rows["leak"], 4096, "leak")
        exact(rows["stable"], 0, "stable")
        exact(rows["cache"], 1024, "cache")
        check_eq([r["name"] for r in g["rows"][:2]], ["leak", "cache"],
                 "the growing rows first")
        # main's 100 B a batch, and whatever the runtime keeps
        exact(rows["(unmatched)"], 100, "unmatched")
        check_eq(rows["leak"]["leaked_bytes"], 4096 * BATCHES,
                 "leak: leaked bytes")
        check_eq(rows["leak"]["leaked_blocks"], BATCHES, "leak: blocks")
        check_eq(rows["cache"]["leaked_bytes"], 0, "cache: freed at exit")
        check_eq(rows["cache"]["live_bytes_at_end"], 1024 * BATCHES,
                 "cache: live at the last batch")
        check_eq(rows["stable"]["allocations"], BATCHES, "stable: allocations")
        for name in ("leak", "stable", "cache"):
            check_eq(rows[name]["stacks"], 1, f"{name}: stacks")
            top = rows[name]["top_stack"]
            fns = [f["function"] or "" for f in top["frames"]]
            check(any(f.startswith("myops::op_" + name) for f in fns),
                  f"{name}: its top stack does not pass op_{name}: {fns}")
        # the contract's checker rejects broken groups
        for name, breaks in (
                ("a row's slope", lambda g: g["rows"][0].update(
                    bytes_per_batch=1e9)),
                ("the unmatched row first", lambda g: g["rows"].reverse()),
                ("no top stack", lambda g: g["rows"][0].update(
                    top_stack=None)),
                ("a stack lost", lambda g: g.update(stacks=g["stacks"] + 1))):
            bad = copy.deepcopy(rep)
            breaks(bad["groups"])
            try:
                validate_report(bad, name)
            except TestFailure:
                continue
            fail(f"the checker accepted groups with {name}")
        check_eq(g["stacks"], len(rep_all_stacks(t)), "groups.stacks")
        check_eq(g["matched_stacks"], 3, "groups.matched_stacks")
        # by site too: the stacks are grouped one by one all the same
        site = rows_of(analyze(t, "--group-by-frame", "myops::op_*",
                               "--group-by-site"), "with --group-by-site")
        for name in rows:
            check_eq(site[name]["bytes_per_batch"],
                     rows[name]["bytes_per_batch"],
                     f"{name} with --group-by-site")
        # the text report's table
        r = analyze_run(t, "--group-by-frame", "myops::op_*")
        out = r.out.decode()
        check_eq(r.rc, 0, "text report: exit status")
        check("Growth by group (--group-by-frame myops::op_*" in out,
              f"text report: no 'Growth by group' section:\n{out}")
        lines = [ln.split() for ln in out.splitlines()]
        check(["leak", "4.0", "KiB"] in [ln[:3] for ln in lines],
              f"text report: no leak row of 4.0 KiB:\n{out}")


def test_regex():
    with tmpdir() as d:
        t = trace("mine", d)
        rows = rows_of(analyze(t, "--group-by-frame",
                               r"re:^myops::op_(le[a-z]+|cache)$"), "regex")
        check_eq(sorted(rows), ["(unmatched)", "cache", "leak"],
                 "regex: rows named by the group")
        exact(rows["leak"], 4096, "regex leak")
        # op_stable is not matched: it goes to the unmatched row
        exact(rows["(unmatched)"], 100, "regex unmatched")
        check_eq(rows["(unmatched)"]["stacks"] >= 2, True,
                 "regex: op_stable's stack is unmatched")
        # no group: the function's whole name
        rows = rows_of(analyze(t, "--group-by-frame", "re:op_leak"),
                       "regex without a group")
        check("myops::op_leak" in rows,
              f"regex without a group: rows {sorted(rows)}")
        exact(rows["myops::op_leak"], 4096, "regex whole name")


def test_paddle():
    with tmpdir() as d:
        t = trace("paddle", d)
        rep = analyze(t, "--operators", "paddle")
        check_eq(rep["groups"]["preset"], "paddle", "groups.preset")
        rows = rows_of(rep, "paddle")
        want = {"MatMul": 2048, "Relu": 1024, "OperatorWithKernel": 3 * 512,
                "While": 256, "Softmax": 0, "(unmatched)": 100}
        check_eq(sorted(rows), sorted(want), "paddle rows")
        for name, v in want.items():
            exact(rows[name], v, f"paddle {name}")
        check_eq(rep["groups"]["rows"][0]["name"], "MatMul",
                 "paddle: the growing kernel first")


def test_bad_patterns():
    with tmpdir() as d:
        t = trace("mine", d)
        for args, word in ((["--group-by-frame", ""], "empty"),
                           (["--group-by-frame", "re:"], "empty"),
                           (["--group-by-frame", "re:op_(leak"], "regex"),
                           (["--operators", "tensorflow"], "tensorflow"),
                           (["--operators", "torch", "--group-by-frame",
                             "x*"], "one of them")):
            r = analyze_run(t, *args)
            check_usage_error(r, f"analyze {' '.join(args)}", word)


def test_no_grouping():
    with tmpdir() as d:
        rep = analyze(trace("mine", d))
        check("groups" not in rep, "groups without --group-by-frame")
        if "Growth by" in analyze_run(trace("mine", d)).out.decode():
            fail("a 'Growth by' section without --group-by-frame")


if __name__ == "__main__":
    main([test_glob, test_regex, test_paddle, test_bad_patterns,
          test_no_grouping])
