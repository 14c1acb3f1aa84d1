"""Helpers of the Python-frames tests: the frames of a JSON report's
stacks by kind, the contract of a frame's fields, and a stack printed as
`function file:line kind`, one frame a line, for failure messages.

The contract (heapslope-report(5) once Python frames are there): every
frame has `kind`, "python" or "native".  A python frame has the code's
qualified name as `function`, its co_filename as `file`, the line being
executed as `line`, and null `address` and `module`.  `heapslope analyze
--python-frames=merged` (the default) puts each _PyEval_EvalFrameDefault's
Python frames in its place, `python` keeps only Python frames, `native`
none.  `heapslope record --no-python` records none.

Builds on tests/analyze/analyze_common.py.  Environment (set by
tests/python/meson.build), besides analyze_common's:
  HEAPSLOPE_PY_PYTHON       the recorded interpreter (Debian 12's
                            /usr/bin/python3, CPython 3.11)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (ALL_STACKS, analyze, check,  # noqa: E402,F401
                            check_eq, fail, main, prog, record,
                            tmpdir, trainsim)

PYTHON = os.environ.get("HEAPSLOPE_PY_PYTHON", "/usr/bin/python3")
EVAL_FRAME = "_PyEval_EvalFrameDefault"
# PYTHONMALLOC=malloc: Python's objects come from malloc; a fixed hash
# seed: the same run twice makes the same calls
PY_ENV = dict(os.environ, PYTHONMALLOC="malloc", PYTHONHASHSEED="0")
MODES = ("merged", "python", "native")


def frame_text(f):
    """`function file:line kind`; a native frame without a source file:
    `function (module+address) native`."""
    where = f"{f.get('file')}:{f.get('line')}"
    if f.get("kind") != "python" and not f.get("file"):
        where = f"({os.path.basename(f.get('module') or '?')}+" \
                f"{f.get('address')})"
    return f"{f.get('function') or '??'} {where} {f.get('kind', '<no kind>')}"


def stack_text(stack):
    """A stack for a failure message, innermost frame first."""
    lines = [f"stack rank {stack.get('rank')}, "
             f"{stack.get('bytes_per_batch')} B/batch:"]
    lines += ["    " + frame_text(f) for f in stack.get("frames", [])]
    return "\n".join(lines)


def report_text(report, n=12):
    """The first n stacks of a report, for a failure message."""
    return "\n".join(stack_text(s) for s in report["stacks"][:n])


def check_kinds(report, what):
    """Every frame of every stack has a kind and the fields its kind
    calls for.  Fails first of all when frames have no kind: the
    heapslope under test has no Python frames."""
    for s in report["stacks"]:
        for f in s["frames"]:
            if "kind" not in f:
                fail(f"{what}: frames have no 'kind' field: this heapslope "
                     f"reports no Python frames (the feature is not there)"
                     f"\n{stack_text(s)}")
            k = f["kind"]
            if k == "python":
                ok = (f.get("address") is None and f.get("module") is None
                      and isinstance(f.get("function"), str)
                      and isinstance(f.get("file"), str)
                      and isinstance(f.get("line"), int)
                      and not isinstance(f.get("line"), bool)
                      and f["line"] >= 1)
            elif k == "native":
                ok = isinstance(f.get("address"), str) and \
                    re.fullmatch(r"0x[0-9a-f]+", f["address"]) is not None
            else:
                ok = False
            check(ok, f"{what}: frame {f!r} breaks the contract of a "
                  f"{k!r} frame\n{stack_text(s)}")


def python_frames(stack):
    """(function, file, line) of the stack's Python frames, innermost
    first."""
    return [(f["function"], f["file"], f["line"])
            for f in stack["frames"] if f.get("kind") == "python"]


def native_functions(stack):
    return [f.get("function") for f in stack["frames"]
            if f.get("kind") != "python"]


def has_python(report):
    return any(f.get("kind") == "python"
               for s in report["stacks"] for f in s["frames"])


def analyze_mode(trace, mode, *opts, top=ALL_STACKS):
    """The JSON report of trace with --python-frames=mode, its top
    stacks (default: every one)."""
    rep = analyze(trace, "--top", top, f"--python-frames={mode}", *opts)
    check_kinds(rep, f"--python-frames={mode}")
    return rep


def counts(report):
    t = report["totals"]
    return {k: t[k] for k in ("allocations", "frees", "reallocs")}
