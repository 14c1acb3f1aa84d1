"""The analyzer's side of HS_EXT_PY_AT, on a trace whose every record is
known (tests/fuzz/pyat_trace.c writes it): each thread's events take the
Python frames of its own last HS_EXT_PY_AT, whatever other threads
wrote meanwhile; the same native stack under two Python stacks is two
stacks, under the same one again is one; a Python node never defined
counts as none; a native stack never defined stays an (empty) stack of
its own instead of failing the analysis; mappings are joined too."""
import os
import subprocess

from pyframes_common import (ALL_STACKS, analyze, check, check_eq, main,
                             report_text, tmpdir)

PYAT_TRACE = os.environ.get("HEAPSLOPE_PY_PYAT_TRACE", "")
BATCHES = 4


def python_of(stack):
    return tuple((f.get("function"), f.get("line")) for f in stack["frames"]
                 if f.get("kind") == "python")


def test_synthetic():
    with tmpdir() as d:
        t = os.path.join(d, "pyat.hst")
        subprocess.run([PYAT_TRACE, t], check=True, timeout=60)
        rep = analyze(t, "--top", ALL_STACKS)
    check_eq(rep["totals"]["allocations"], 7 * BATCHES, "allocations")
    check(rep["program"].get("python_frames"), "python_frames not set")
    by = {}
    for s in rep["stacks"]:
        key = (len([f for f in s["frames"] if f.get("kind") == "native"]),
               python_of(s))
        by.setdefault(key, []).append(s["allocations"])
    inner = (("f", 13), ("f", 11))
    outer = (("f", 11),)
    # thread 100 under node 2: stack 2 twice a batch (before and after
    # thread 200's records), stack 3 once; one stack each
    want = {(2, inner): [2 * BATCHES, BATCHES],
            # thread 200: stack 3 under node 1
            (2, outer): [BATCHES],
            # thread 200: stack 2 with no Python record, and under node
            # 999 (never defined): the native stack, one
            (2, ()): [2 * BATCHES],
            # stack 7, never defined
            (0, ()): [BATCHES]}
    for key, allocs in want.items():
        check_eq(sorted(by.get(key, [])), sorted(allocs),
                 f"allocations of the stacks {key}:\n" + report_text(rep))
    check_eq(sum(len(v) for v in by.values()), 5,
             "stacks:\n" + report_text(rep))
    maps = rep["mappings"]["stacks"]
    check_eq(len(maps), 2, "mapping stacks")
    for m in maps:
        check_eq(python_of(m), inner, f"mapping stack {m.get('rank')}'s "
                 "Python frames")


if __name__ == "__main__":
    main([test_synthetic])
