#!/usr/bin/env python3
"""The README's Python snippet for batch marks, taken from README.md as it
is (so the README cannot drift from what is tested): it runs unchanged
without the recorder (no AttributeError, nothing on stderr) and marks
every batch under `heapslope record`."""
import os
import re
import sys

from common import check, check_eq, dump_stats, main, record, run, tmpdir

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "README.md")
BATCHES = 7
# what the snippet leaves to the program: its loader and its step
PRELUDE = f"""\
loader = range({BATCHES})
kept = []


def step(batch):
    kept.append(bytes(1000 + batch))


"""


def snippet():
    """The one python block of the README's section on marking batches."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^### Marking batches\n(.*?)^##", text, re.M | re.S)
    check(m, "README.md: no '### Marking batches' section")
    blocks = re.findall(r"^```python\n(.*?)^```", m.group(1), re.M | re.S)
    check_eq(len(blocks), 1, "README.md: python blocks in 'Marking batches'")
    code = blocks[0]
    check("mark()" in code and "heapslope_mark_batch" in code,
          f"README.md: the python block does not mark batches:\n{code}")
    return code


def program(d):
    path = os.path.join(d, "snippet.py")
    with open(path, "w") as f:
        f.write(PRELUDE + snippet())
    return path


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
