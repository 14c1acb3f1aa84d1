#!/usr/bin/env python3
"""The README's Python context manager for regions, taken from README.md
as it is (so the README cannot drift from what is tested): it runs
unchanged without the recorder (nothing on stderr), and under `heapslope
record` the analysis finds the evaluation region, which keeps 4000 bytes
a batch, growing, and the training region, which keeps nothing, flat."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (analyze, check, check_eq, main,  # noqa: E402
                            record, run, tmpdir)

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "README.md")
BATCHES = 15
KEPT = 4000
# what the snippet leaves to the program: its loader, its step, its
# evaluation
PRELUDE = f"""\
loader = range({BATCHES})
history = []


def step(batch):
    scratch = [bytes(100 + batch) for _ in range(20)]
    del scratch


def evaluate():
    history.append(bytes({KEPT}))


"""


def snippet():
    """The one python block of the README's section on regions."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^### Regions[^\n]*\n(.*?)^##", text, re.M | re.S)
    check(m, "README.md: no '### Regions' section")
    blocks = re.findall(r"^```python\n(.*?)^```", m.group(1), re.M | re.S)
    check_eq(len(blocks), 1, "README.md: python blocks in 'Regions'")
    code = blocks[0]
    check("heapslope_region_begin" in code and 'region("eval")' in code,
          f"README.md: the python block has no regions:\n{code}")
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
        trace = record([sys.executable, program(d)], d).trace()
        rep = analyze(trace)
        check_eq(rep["batches"]["count"], BATCHES, "batches")
        names = {w["name"]: w for w in rep["regions"]["by_name"]}
        check(set(names) >= {"train", "eval"}, f"regions: {sorted(names)}")
        ev = names["eval"]["bytes_per_batch"]
        check(KEPT <= ev <= KEPT * 1.1,
              f"eval grows {ev} B/batch, not about {KEPT}")
        tr = names["train"]["bytes_per_batch"]
        check(abs(tr) < 100, f"train grows {tr} B/batch, not 0")
        check_eq(rep["regions"]["by_name"][0]["name"], "eval",
                 "the region that grows most")


if __name__ == "__main__":
    main([test_native, test_recorded])
