"""A trace of the recorder before HS_EXT_PY_AT, whose Python frames are
joint stack nodes (HS_EXT_PY_STACK), still reads with its Python frames.
data/joints-pystack.hst is data/joints.py recorded by that recorder
(commit 681a547, Debian 12's CPython 3.11, PYTHONMALLOC=malloc, -S); the
bytearrays of keep() are its three largest live blocks.  Python frames
come from the trace alone (code objects and frames), not from the
binaries, so the test holds on any machine.
"""
import os

from pyframes_common import analyze, check, check_eq, main, report_text

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                     "joints-pystack.hst")


def python_frames(stack):
    return [(f.get("function"), os.path.basename(f.get("file") or ""),
             f.get("line")) for f in stack["frames"]
            if f.get("kind") == "python"]


def test_old_trace():
    want = [("keep", "joints.py", 2), ("<listcomp>", "joints.py", 5),
            ("<module>", "joints.py", 5)]
    rep = analyze(TRACE, "--top", "50")
    check(rep["program"].get("python_frames"),
          "program.python_frames is not set:\n" + report_text(rep))
    kept = [s for s in rep["stacks"] if python_frames(s) == want]
    check(kept, "no stack with keep joints.py:2, <listcomp> joints.py:5, "
          "<module> joints.py:5:\n" + report_text(rep))
    check_eq(sum(s["allocations"] for s in kept), 3,
             "allocations of keep()'s stacks")
    # the native frames inside the eval loop stay where they were
    frames = kept[0]["frames"]
    first = next(i for i, f in enumerate(frames) if f.get("kind") == "python")
    check(first > 0 and all(f.get("kind") == "native"
                            for f in frames[:first]),
          "keep()'s stack does not begin with native frames:\n" +
          report_text(rep))


if __name__ == "__main__":
    main([test_old_trace])
