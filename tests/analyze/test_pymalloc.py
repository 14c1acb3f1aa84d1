"""When `record` set PYTHONMALLOC=malloc (header key HS_HDR_PYMALLOC = 1),
the text report of a Python program says so in one line, with the
--keep-pymalloc hint, and the JSON report has program.pymalloc_replaced;
a program that is not Python gets no such line.  The traces' header key is
set here by rewriting the header, whatever the recorder wrote."""
import os
import sys

from analyze_common import (HDR_PYMALLOC, HEAPSLOPE, analyze, check,
                            check_eq, main, prog, record, record_trace,
                            rewrite_header, run, tmpdir, write_file)

LINE = "recorded with PYTHONMALLOC=malloc"


def text(trace):
    r = run([HEAPSLOPE, "analyze", trace])
    check_eq(r.rc, 0, "analyze: exit status:\n" + r.describe())
    return r.out.decode()


def variants(d, trace, name):
    data = open(trace, "rb").read()
    return [write_file(d, f"{name}{v}.hst",
                       rewrite_header(data, {HDR_PYMALLOC: v}))
            for v in (0, 1)]


def test_python():
    with tmpdir() as d:
        py = os.path.realpath(sys.executable)
        t = record_trace([py, "-c", "x = [str(i) * 3 for i in range(5000)]"],
                         d, "py.hst")
        off, on = variants(d, t, "py")
        rep = analyze(on)
        check_eq(rep["program"]["python"], True, "python3: program.python")
        check_eq(rep["program"]["pymalloc_replaced"], True,
                 "pymalloc 1: program.pymalloc_replaced")
        out = text(on)
        lines = [l for l in out.splitlines() if LINE in l]
        check_eq(len(lines), 1, "pymalloc 1: lines saying so:\n" + out)
        check("--keep-pymalloc" in lines[0],
              f"the line has no --keep-pymalloc hint: {lines[0]!r}")
        rep = analyze(off)
        check_eq(rep["program"]["pymalloc_replaced"], False,
                 "pymalloc 0: program.pymalloc_replaced")
        check(LINE not in text(off), "pymalloc 0: the report says "
              "PYTHONMALLOC=malloc")


def test_record_sets_it():
    """The header as record writes it: set unless --keep-pymalloc (or
    PYTHONMALLOC already in the environment)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    py = os.path.realpath(sys.executable)
    code = "x = [str(i) for i in range(1000)]"
    with tmpdir() as d:
        for opts, want in (((), True), (("--keep-pymalloc",), False)):
            r = record([py, "-c", code], d, opts=opts, env=env,
                       output=f"py{len(opts)}.hst")
            rep = analyze(r.trace())
            check_eq(rep["program"]["pymalloc_replaced"], want,
                     f"record {' '.join(opts)}: program.pymalloc_replaced")
            check_eq(LINE in text(r.trace()), want,
                     f"record {' '.join(opts)}: the text says "
                     "PYTHONMALLOC=malloc")


def test_not_python():
    with tmpdir() as d:
        t = record_trace([prog("av_growth"), "leak", "5"], d, "c.hst")
        off, on = variants(d, t, "c")
        rep = analyze(on)
        check_eq(rep["program"]["python"], False, "C program: program.python")
        check_eq(rep["program"]["pymalloc_replaced"], True,
                 "C program, pymalloc 1: program.pymalloc_replaced")
        check(LINE not in text(on), "a C program's report speaks of "
              "PYTHONMALLOC")


if __name__ == "__main__":
    main([test_python, test_record_sets_it, test_not_python])
