"""The text report's frame controls on a real C++ victim (av_vector.cc,
whose kept std::vector<Foo> grows through libstdc++'s allocator and
_M_realloc_insert; operator new itself is not in recorded stacks): --frames N, the allocator's and runtimes' frames left
out at the top of stacks (--runtime-frames shows them), long template
argument lists shortened (--full-names keeps them).  The JSON report is
the same whatever these options say."""
import json
import os
import sys

from analyze_common import (HEAPSLOPE, analyze, analyze_run, check, check_eq,
                            fail, main, prog, record_trace, run, tmpdir)

ENV = dict(os.environ, LC_ALL="C")  # ASCII: "<...>"


def text(trace, *opts):
    r = run([HEAPSLOPE, "analyze", "--top", "1", *opts, trace], env=ENV)
    check_eq(r.rc, 0, f"analyze {' '.join(opts)}: exit status:\n" +
             r.describe())
    return r.out.decode()


def top_frames(report):
    """The frame lines of stack #1, and its '... N more frames' count."""
    lines = report.splitlines()
    try:
        i = next(k for k, l in enumerate(lines) if l.startswith("#1 "))
    except StopIteration:
        fail("no stack #1 in the text report:\n" + report)
    frames, more = [], 0
    for l in lines[i + 1:]:
        if not l.startswith("      "):
            break
        s = l.strip()
        if s.startswith("... ") and s.endswith(" more frames"):
            more = int(s.split()[1])
        else:
            frames.append(s)
    return frames, more


def test_frames():
    with tmpdir() as d:
        t = record_trace([prog("av_vector"), "30"], d)
        full = text(t, "--runtime-frames", "--full-names", "--frames", "0")
        fr_full, more = top_frames(full)
        check_eq(more, 0, "--frames 0: frames left out")
        check(fr_full and "allocate(" in fr_full[0],
              "--runtime-frames: the top frame is not the allocator's "
              "allocate:\n" + full)
        check(any("std::vector<Foo, std::allocator<Foo> >::_M_realloc_"
                  in f for f in fr_full),
              "--full-names: the vector's growth member is not named in "
              "full:\n" + full)
        check("Note: the allocator's" not in full,
              "--runtime-frames: the note on left-out frames is there")

        default = text(t)
        fr, more = top_frames(default)
        check(fr, "default: no frames:\n" + default)
        for f in fr:
            check("operator new" not in f and "_M_realloc_" not in f and
                  "allocate(" not in f,
                  f"default: runtime frame {f!r} shown:\n" + default)
        check("push_back" in fr[0] or "keep_records" in fr[0],
              f"default: the top frame {fr[0]!r} is not the program's:\n" +
              default)
        check(any("keep_records" in f for f in fr),
              "default: keep_records is not in the stack:\n" + default)
        check("std::allocator<Foo>" not in default,
              "default: template arguments not shortened:\n" + default)
        check("std::vector<...>::" in default,
              "default: no 'std::vector<...>::' in the report:\n" + default)
        check("--runtime-frames shows them" in default,
              "default: no note on the left-out frames:\n" + default)
        hidden = len(fr_full) - (len(fr) + more)
        check(hidden >= 2, f"default: {hidden} runtime frames left out, "
              "expected the allocator's allocate and the vector's growth "
              "at least")

        two, more2 = top_frames(text(t, "--frames", "2"))
        check_eq(len(two), 2, "--frames 2: frames shown")
        check_eq(more2, len(fr_full) - hidden - 2, "--frames 2: '... N more "
                 "frames'")
        check_eq(two, fr[:2], "--frames 2: the first two of the default's")
        alls, more0 = top_frames(text(t, "--frames", "0"))
        check_eq((len(alls), more0), (len(fr_full) - hidden, 0),
                 "--frames 0: every frame but the runtime's")
        if len(fr_full) - hidden > 12:
            check_eq(len(fr), 12, "default: 12 frames")

        # JSON: every frame, whatever the text options
        base = analyze_run(t, "--json", "-")
        opts = analyze_run(t, "--json", "-", "--frames", "1",
                           "--runtime-frames", "--full-names")
        check_eq(base.rc, 0, "--json -: exit status")
        check(base.out == opts.out,
              "the JSON report changes with the text's frame options")
        check(b"std::vector<Foo, std::allocator<Foo> >" in base.out and
              b"::allocate(" in base.out,
              "JSON: frames not in full")

        bad = run([HEAPSLOPE, "analyze", "--frames", "x", t])
        check_eq(bad.rc, 2, "--frames x: exit status")


PY_WRAPPERS = ("gc_alloc", "_PyType_AllocNoTrack", "_PyObject_NewVar",
               "_PyObject_GC_New", "_PyObject_GC_NewVar", "PyType_GenericAlloc",
               "_PyObject_New", "PyObject_Malloc", "PyMem_Malloc",
               "_PyObject_Malloc", "PyMem_RawMalloc", "_PyMem_RawMalloc")


def first_frames(report):
    """The first frame line of every stack in a text report."""
    lines = report.splitlines()
    return [lines[i + 1].strip() for i, l in enumerate(lines[:-1])
            if l.startswith("#") and lines[i + 1].startswith("      ")]


def test_python_wrappers():
    """CPython's allocation wrappers at the top of stacks are left out (a
    CPython with symbols: the one running this test)."""
    py = os.path.realpath(sys.executable)
    code = ("class C:\n    pass\n"
            "keep = [[C() for _ in range(200)] for _ in range(50)]\n")
    with tmpdir() as d:
        t = record_trace([py, "-c", code], d)
        rep = analyze_run(t, "--json", "-", "--top", "40")
        tops = {s["frames"][0]["function"]
                for s in json.loads(rep.out)["stacks"] if s["frames"]}
        wrapped = tops & set(PY_WRAPPERS)
        check(wrapped, f"{py}: no stack begins in a CPython allocation "
              f"wrapper ({', '.join(sorted(str(t) for t in tops))}): "
              "a CPython without symbols cannot test this")
        shown = first_frames(text(t, "--top", "40"))
        for f in shown:
            check(f.split()[0] not in PY_WRAPPERS,
                  f"default: a stack begins with {f!r}")
        raw = first_frames(text(t, "--top", "40", "--runtime-frames"))
        check(any(f.split()[0] in wrapped for f in raw),
              "--runtime-frames: no stack begins in a CPython wrapper")


HERE = os.path.dirname(os.path.abspath(__file__))


def marked_line(source, mark):
    """The line number of the line of source (in this directory) holding
    the comment mark."""
    with open(os.path.join(HERE, source)) as f:
        for i, line in enumerate(f, 1):
            if f"/* {mark} */" in line:
                return i
    fail(f"{source}: no line marked {mark!r}")


def inline_chain(victim, files):
    """The frames of the victim's 4000 kept blocks: fill inlined into make
    inlined into main, each at the line of its own call (files: where
    fill, make and main are); the JSON report and the text report."""
    with tmpdir() as d:
        t = record_trace([prog(victim)], d)
        rep = analyze(t, "--top", "5")
        stacks = [s for s in rep["stacks"] if s["allocations"] == 4000]
        check_eq(len(stacks), 1, f"{victim}: stacks of 4000 allocations")
        if not stacks:
            return
        want = [("fill", True, files[0], marked_line(files[0],
                                                     "fill's allocation")),
                ("make", True, files[1], marked_line(files[1],
                                                     "make's call")),
                ("main", False, files[2], marked_line(files[2],
                                                      "main's call"))]
        got = [(f.get("function"), f.get("inlined"),
                os.path.basename(f.get("file") or ""), f.get("line"))
               for f in stacks[0]["frames"][:3]]
        check_eq(got, want, f"{victim}: the first three frames (function, "
                 "inlined, file, line)")
        lines, _ = top_frames(text(t, "--top", "1"))
        check(len(lines) >= 3 and lines[0].startswith("fill ") and
              lines[0].endswith("[inlined]") and
              lines[1].startswith("make ") and lines[2].startswith("main "),
              f"{victim}: the text report's frames: {lines[:3]}")


def test_inlined_into_inlined():
    """A call inlined into an inlined call keeps a frame of its own (libdw's
    dwarf_getscopes gave only the innermost inlined call, then main at a
    line of the call inlined into it)."""
    inline_chain("av_inline", ["av_inline.c"] * 3)


def test_inlined_across_units():
    """Calls inlined at link time: their abstract definitions are in other
    units of the debug information than the code (dwarf_getscopes found
    no scope at all there, and leaked)."""
    inline_chain("av_inline_lto", ["av_inline_lib.c", "av_inline_lib.c",
                                   "av_inline_main.c"])


if __name__ == "__main__":
    main([test_frames, test_python_wrappers, test_inlined_into_inlined,
          test_inlined_across_units])
