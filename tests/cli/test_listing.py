#!/usr/bin/env python3
"""The end of `heapslope record` (issue 11, item 3): one line per trace
written (pid, parent, events, marks, size, command), the same numbers as
`heapslope dump --stats` reads; which one is the main one (the one with
marks, else the most events); -q and --list; and the exit status in the
trace of the process record started, the image that exited, for every -o
form (a %p template lost it)."""
import os
import re

from common import (HEAPSLOPE, LISTING, WRITTEN, check, check_eq, dump_stats,
                    main, prog, record, run, tmpdir)

LINE = re.compile(r"^heapslope: trace written to (?P<path>.*?)  +"
                  r"pid (?P<pid>\d+) +parent (?P<ppid>\d+) +"
                  r"(?P<events>[\d,]+) events +(?P<marks>\d+) marks +"
                  r"(?P<size>[\d.]+ (?:B|KiB|MiB|GiB)) +"
                  r"(?P<incomplete>incomplete +)?(?P<command>.*)$")
MAIN = re.compile(r"^heapslope: main trace: (.*?) \((.*): (the one with "
                  r"marks|no marks, the most events)\)$")


def size_text(n):
    """What record prints for a file of n bytes."""
    if n < 1024:
        return f"{n} B"
    v, u = n / 1024, 0
    while v >= 1024 and u < 3:
        v, u = v / 1024, u + 1
    return f"{v:.1f} {('KiB', 'MiB', 'GiB', 'TiB')[u]}"


def listing(r, what):
    """({path: fields}, main line match or None, other listing lines),
    checked against each trace's dump."""
    rows, main_line, more = {}, None, []
    for line in r.tail:
        line = line.rstrip("\n")
        if line.startswith(WRITTEN):
            m = LINE.match(line)
            check(m, f"{what}: line not in the expected form: {line!r}")
            path = os.path.normpath(os.path.join(r.cwd, m["path"]))
            rows[path] = m.groupdict()
        elif line.startswith(LISTING[1]):
            main_line = MAIN.match(line)
            check(main_line, f"{what}: main-trace line: {line!r}")
        elif line.startswith(LISTING[2]):
            more.append(line)
    for path, f in rows.items():
        s = dump_stats(path)
        check_eq(int(f["pid"]), s["pid"], f"{what}: {path}: listed pid")
        check_eq(int(f["events"].replace(",", "")), s["events"],
                 f"{what}: {path}: listed events vs dump --stats")
        check_eq(int(f["marks"]), s["marks"],
                 f"{what}: {path}: listed marks vs dump --stats")
        check_eq(f["size"], size_text(os.path.getsize(path)),
                 f"{what}: {path}: listed size")
        check_eq(bool(f["incomplete"]), s["complete"] != "yes",
                 f"{what}: {path}: said incomplete")
        f["stats"] = s
    return rows, main_line, more


def main_path(r, m):
    return os.path.normpath(os.path.join(r.cwd, m.group(1)))


def header_ppid(path):
    r = run([HEAPSLOPE, "dump", path])
    m = re.search(r"^# pid (\d+) ppid (\d+) ", r.out.decode(), re.M)
    check(m, f"no '# pid .. ppid' header line in the dump of {path}")
    return int(m.group(2))


def test_single_program():
    with tmpdir() as d:
        r = record([prog("counts"), "mix", "10"], d)
        rows, m, more = listing(r, "counts mix 10")
        check_eq(len(rows), 1, "counts: lines listed")
        (path, f), = rows.items()
        check_eq(os.path.basename(path), "trace.hst", "counts: trace")
        check_eq(f["command"], "counts mix 10", "counts: command")
        check_eq(int(f["ppid"]), header_ppid(path), "counts: parent")
        check(f["stats"]["events"] > 100, f"counts: events {f['stats']}")
        check(m is None and not more,
              f"one trace: no main-trace line ({r.tail})")


def test_wrapper_main_has_marks():
    """sh forks a program without marks (more events) and one with marks
    (fewer events): the main one is the one with the marks; sh's exit
    status is in sh's trace only."""
    with tmpdir() as d:
        script = (f"{prog('counts')} mix 300; {prog('heapmarks')} 4 0 0; "
                  "exit 7")
        r = record(["sh", "-c", script], d, ok=False)
        check_eq(r.rc, 7, "sh wrapper: exit status\n" + r.describe())
        rows, m, _ = listing(r, "sh wrapper")
        check_eq(len(rows), 3, f"sh wrapper: traces listed ({r.tail})")
        by_cmd = {f["command"].split()[0]: (p, f) for p, f in rows.items()}
        check_eq(sorted(by_cmd), ["counts", "heapmarks", "sh"],
                 "sh wrapper: commands listed")
        hm, counts = by_cmd["heapmarks"], by_cmd["counts"]
        check_eq(hm[1]["stats"]["marks"], 4, "heapmarks: marks")
        check(counts[1]["stats"]["events"] > hm[1]["stats"]["events"],
              "test assumption: counts has more events than heapmarks")
        check(m, f"sh wrapper: no main-trace line ({r.tail})")
        check_eq(main_path(r, m), hm[0], "sh wrapper: main trace")
        check_eq(m.group(3), "the one with marks", "sh wrapper: why main")
        sh = by_cmd["sh"]
        for p, f in rows.items():
            want = 7 if p == sh[0] else None
            check_eq(f["stats"].get("exit_status"), want,
                     f"sh wrapper: exit_status in {f['command']}'s trace")
        # the list goes parents first
        check_eq(list(rows)[0], sh[0], "sh wrapper: first line")


def test_main_most_events():
    with tmpdir() as d:
        script = f"{prog('counts')} mix 5; {prog('counts')} mix 400; exit 0"
        r = record(["sh", "-c", script], d)
        rows, m, _ = listing(r, "no marks")
        check_eq(len(rows), 3, "no marks: traces")
        most = max(rows, key=lambda p: rows[p]["stats"]["events"])
        check_eq(rows[most]["command"], "counts mix 400",
                 "test assumption: the one with the most events")
        check(m, f"no marks: no main-trace line ({r.tail})")
        check_eq(main_path(r, m), most, "no marks: main trace")
        check_eq(m.group(3), "no marks, the most events", "no marks: why")


def exit_in(rows, what):
    """{command: exit_status} of the traces that hold one."""
    return {f["command"]: f["stats"]["exit_status"] for f in rows.values()
            if "exit_status" in f["stats"]}


def test_exit_status_every_output_form():
    """record appends the exit status to the trace of the image that
    exited, whatever -o names it; an image that exec'd gets none."""
    forms = (("-o FILE", "run.hst"), ("-o %p", "x.%p.hst"),
             ("-o %e.%p", "t.%e.%p.hst"), ("default name", None))
    for what, output in forms:
        with tmpdir() as d:
            script = f"{prog('counts')} mix 3; exit 5"
            r = record(["sh", "-c", script], d, output=output, ok=False)
            check_eq(r.rc, 5, f"{what}: sh: exit status")
            rows, _, _ = listing(r, f"{what}: sh")
            check_eq(len(rows), 2, f"{what}: sh: traces ({r.tail})")
            got = exit_in(rows, what)
            check(list(got.values()) == [5] and
                  list(got)[0].startswith("sh -c "),
                  f"{what}: sh: traces with an exit status: {got}")
        with tmpdir() as d:
            r = record([prog("execer"), "3", prog("io"), "6"], d,
                       output=output, ok=False)
            check_eq(r.rc, 6, f"{what}: execer: exit status")
            rows, _, _ = listing(r, f"{what}: execer")
            check_eq(len(rows), 2, f"{what}: execer: traces ({r.tail})")
            io = "io 6"
            check_eq(exit_in(rows, what), {io: 6},
                     f"{what}: execer then io: traces with an exit status "
                     "(the exec'd image's)")
            first = [f for f in rows.values() if f["command"] != io]
            check_eq(first[0]["stats"].get("end_reason"), "exec",
                     f"{what}: execer: end_reason")
        with tmpdir() as d:
            # not followed: the last recorded image is the first
            r = record([prog("execer"), "3", prog("io"), "6"], d,
                       output=output, opts=["--no-follow"], ok=False)
            rows, _, _ = listing(r, f"{what}: execer --no-follow")
            check_eq([f["stats"].get("exit_status") for f in rows.values()],
                     [6], f"{what}: execer --no-follow: exit status")


def test_quiet():
    with tmpdir() as d:
        script = f"{prog('counts')} mix 3; exit 4"
        r = record(["sh", "-c", script], d, opts=["-q"], output="x.%p.hst",
                   ok=False, list_all=False)
        check_eq(r.rc, 4, "-q: exit status")
        check_eq(r.tail, [], "-q: record's lines")
        traces = [os.path.join(d, f) for f in os.listdir(d)]
        check_eq(len(traces), 2, f"-q: traces written ({traces})")
        check_eq(sorted(dump_stats(t).get("exit_status", -1)
                        for t in traces), [-1, 4], "-q: exit statuses")


def test_list_limit():
    """--list 3 of 5 traces: the main one, the first and the largest
    other, then how many more."""
    with tmpdir() as d:
        script = (f"{prog('counts')} mix 1; {prog('counts')} mix 300; "
                  f"{prog('counts')} mix 2; {prog('heapmarks')} 2 0 0; "
                  "exit 0")
        r = record(["sh", "-c", script], d, opts=["--list", "3"],
                   list_all=False, ok=False)
        check_eq(r.rc, 0, "--list 3: exit status\n" + r.describe())
        rows, m, more = listing(r, "--list 3")
        check_eq(sorted(f["command"].split(" ", 1)[0] + " " +
                        f["command"][-3:] for f in rows.values()),
                 sorted(["sh ...", "counts 300", "heapmarks 0 0"]),
                 "--list 3: traces listed")
        check_eq(len(more), 1, f"--list 3: '... and N more' ({r.tail})")
        check(more[0].startswith("heapslope: ... and 2 more traces ("),
              f"--list 3: {more[0]!r}")
        check(m and m.group(2) == "heapmarks 2 0 0",
              f"--list 3: main trace ({r.tail})")
        check_eq(len([f for f in os.listdir(d) if f.startswith("trace")]), 5,
                 "--list 3: traces written")
        # default: all five fit
        r = record(["sh", "-c", script], d, output="all.hst", list_all=False)
        rows, _, more = listing(r, "default --list")
        check_eq((len(rows), more), (5, []), "default --list: lines")


def test_list_bad():
    with tmpdir() as d:
        for bad in ("0", "-1", "x", ""):
            r = record([prog("marker"), os.path.join(d, "ran")], d,
                       opts=["--list", bad], ok=False, list_all=False)
            check(r.rc != 0 and r.rc < 128, f"--list {bad!r}: exit status "
                  f"{r.rc}")
            check(b"--list" in r.err, f"--list {bad!r}: says what: {r.err!r}")
            check(not os.path.exists(os.path.join(d, "ran")),
                  f"--list {bad!r}: the program ran")


def test_incomplete():
    """a process killed by SIGKILL leaves a trace without END: listed as
    incomplete, its events and marks counted by reading it, and still the
    main one (it has the marks)."""
    with tmpdir() as d:
        script = (f"{prog('forever')} 30 >/dev/null & sleep 1.5; "
                  "kill -9 $!; wait; exit 0")
        r = record(["sh", "-c", script], d)
        rows, m, _ = listing(r, "kill -9")
        killed = [(p, f) for p, f in rows.items()
                  if f["command"] == "forever 30"]
        check_eq(len(killed), 1, f"kill -9: forever's trace listed "
                 f"({r.tail})")
        p, f = killed[0]
        check(f["incomplete"], "kill -9: not said incomplete")
        check(f["stats"]["marks"] > 0 and f["stats"]["events"] > 0,
              f"kill -9: nothing counted: {f['stats']}")
        check(m and main_path(r, m) == p, f"kill -9: main trace ({r.tail})")


if __name__ == "__main__":
    main([test_single_program, test_wrapper_main_has_marks,
          test_main_most_events, test_exit_status_every_output_form,
          test_quiet, test_list_limit, test_list_bad, test_incomplete])
