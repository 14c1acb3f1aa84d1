#!/usr/bin/env python3
"""The README's Python context manager for regions, taken from README.md
as it is (so the README cannot drift from what is tested): it runs
unchanged without the recorder (nothing on stderr), and under `heapslope
record` the analysis finds the evaluation region, which keeps 4000 bytes
a batch, growing, and the training region, which keeps nothing, flat."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (analyze, check, check_eq, main,  # noqa: E402
                            record, run, tmpdir)
from common import readme_program  # noqa: E402
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


def program(d):
    return readme_program(d, "Regions", PRELUDE,
                          ["heapslope_region_begin", 'region("eval")'])


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
