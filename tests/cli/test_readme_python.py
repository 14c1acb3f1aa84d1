#!/usr/bin/env python3
"""The README's Python snippet for batch marks, taken from README.md as it
is (so the README cannot drift from what is tested): it runs unchanged
without the recorder (no AttributeError, nothing on stderr) and marks
every batch under `heapslope record`."""
import sys

from common import (check_eq, dump_stats, main, readme_program,
                    record, run, tmpdir)

BATCHES = 7
# what the snippet leaves to the program: its loader and its step
PRELUDE = f"""\
loader = range({BATCHES})
kept = []


def step(batch):
    kept.append(bytes(1000 + batch))


"""


def program(d):
    return readme_program(d, "Marking batches", PRELUDE, ["mark()", "heapslope_mark_batch"])


def test_native():
    with tmpdir() as d:
        r = run([sys.executable, program(d)], cwd=d)
        check_eq((r.rc, r.err), (0, b""),
                 "README snippet without the recorder: status, stderr\n" +
                 r.describe())


def test_recorded():
    with tmpdir() as d:
        r = record([sys.executable, program(d)], d)
        s = dump_stats(r.trace())
        check_eq(s.get("marks"), BATCHES, "README snippet under record: marks")
        check_eq(s.get("exit_status"), 0, "README snippet: exit status")


if __name__ == "__main__":
    main([test_native, test_recorded])
