"""The traces of one recording through a shell wrapper (issue 11 item 3):
`heapslope record -o run.hst -- sh -c 'av_growth ... & wait'` writes the
shell's trace to run.hst and its child's to run.hst.PID...; `analyze
run.hst` says which is which (program, pid, parent, events, marks) and
which is the main one (the one with batch marks, else the most events),
and so does the side-by-side table of several traces."""
import json
import os
import re

from analyze_common import (HEAPSLOPE, analyze, check, check_eq, dump_stats,
                            fail, main, prog, record, run, tmpdir)

HEAD = "Traces of this recording"


def rows(text):
    """The rows of the traces table: {trace file: (fields, is_main)}."""
    lines = text.splitlines()
    try:
        i = next(k for k, l in enumerate(lines) if l.startswith(HEAD))
    except StopIteration:
        fail("no table of the recording's traces:\n" + text)
    out = {}
    for l in lines[i + 2:]:
        m = re.match(r"  (\S+)\s+(.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)"
                     r"(  main)?(  \(incomplete\))?$", l)
        if not m:
            break
        out[m.group(1)] = (m.group(2), int(m.group(3)), int(m.group(4)),
                           int(m.group(5)), int(m.group(6)),
                           bool(m.group(7)))
    return out


def text(*args):
    r = run([HEAPSLOPE, "analyze", *args])
    check_eq(r.rc, 0, "analyze: exit status:\n" + r.describe())
    return r.out.decode()


def wrapped(d, child_args, name="run.hst"):
    cmd = " ".join([prog("av_growth")] + child_args) + " & wait"
    r = record(["sh", "-c", cmd], d, output=name)
    traces = sorted(os.path.basename(t) for t in r.traces)
    check(name in traces and len(traces) >= 2,
          f"record through sh wrote {traces}, expected {name} and its "
          "child's")
    return traces


def check_table(d, table, traces, want_main, what):
    check_eq(sorted(table), traces, f"{what}: traces in the table")
    for t, (program, pid, ppid, events, marks, is_main) in table.items():
        st = dump_stats(os.path.join(d, t))
        check_eq((pid, events, marks), (st["pid"], st["events"],
                                        st["marks"]),
                 f"{what}: {t}: pid, events, marks as dump --stats says")
        check_eq(is_main, t == want_main, f"{what}: {t} flagged main")
    sh_pid = table["run.hst"][1]
    m = table[want_main]
    check_eq(m[2], sh_pid, f"{what}: the main trace's parent is the shell")
    check(m[0].startswith("av_growth"), f"{what}: main program {m[0]!r}")
    check(table["run.hst"][0].split()[0] in ("sh", "dash", "bash"),
          f"{what}: the shell's program {table['run.hst'][0]!r}")


def test_marks():
    """The child has batch marks: it is the main one."""
    with tmpdir() as d:
        traces = wrapped(d, ["leak", "8"])
        child = [t for t in traces if t != "run.hst" and
                 dump_stats(os.path.join(d, t))["marks"] > 0]
        check_eq(len(child), 1, f"traces with marks among {traces}")
        out = text(os.path.join(d, "run.hst"))
        check_table(d, rows(out), traces, child[0], "analyze run.hst")
        check(f"not of the main trace: heapslope analyze "
              f"{os.path.join(d, child[0])}" in out,
              "analyze run.hst does not point at the main trace:\n" + out)
        rep = analyze(os.path.join(d, "run.hst"))
        rec = {os.path.basename(e["path"]): e for e in rep["recording"]}
        check_eq(sorted(rec), traces, "JSON recording: traces")
        check_eq([t for t, e in rec.items() if e["main"]], child,
                 "JSON recording: main")
        check_eq(rec[child[0]]["ppid"], rep["program"]["pid"],
                 "JSON recording: the child's parent is the shell")
        # several traces given: the side-by-side table says it too
        paths = [os.path.join(d, t) for t in traces]
        check_table(d, rows(text(*paths)), traces, child[0],
                    "analyze of every trace")
        r = run([HEAPSLOPE, "analyze", "--json", "-", *paths])
        check_eq(r.rc, 0, "analyze --json - of every trace:\n" + r.describe())
        doc = json.loads(r.out)
        check_eq(os.path.basename(doc["reports"][doc["main"]]["trace"]
                                  ["path"]), child[0],
                 "comparison JSON: main")
        # the main trace alone has no siblings: no table
        out = text(os.path.join(d, child[0]))
        check(HEAD not in out, "a trace without siblings has a table")


def test_no_marks():
    """No trace has marks: the main one has the most events."""
    with tmpdir() as d:
        traces = wrapped(d, ["timed", "300"])
        ev = {t: dump_stats(os.path.join(d, t))["events"] for t in traces}
        most = max(ev, key=ev.get)
        check(most != "run.hst", f"the shell has the most events: {ev}")
        check_table(d, rows(text(os.path.join(d, "run.hst"))), traces, most,
                    "no marks")


if __name__ == "__main__":
    main([test_marks, test_no_marks])
