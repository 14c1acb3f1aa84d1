#!/usr/bin/env python3
"""Records the golden traces and writes what heapslope prints of them.

    tests/golden/make_golden.py BUILD_DIR [--outputs-only]

Records each program of CASES under BUILD_DIR's recorder into
tests/golden/traces/, copies every module of those traces that is not a
system file into tests/golden/debug/.build-id/ (the analyzer finds a
module there by its build-id when its recorded path holds another build
or nothing), then writes the reports and dumps of GOLDEN (see
golden_common.py) into tests/golden/out/.  --outputs-only keeps the
traces and rewrites the outputs: after a change meant to change them.
test_golden.py checks that heapslope still prints exactly these."""
import os
import shutil
import subprocess
import sys

from golden_common import (DEBUG, HERE, OUT, TRACES, Workdir, outputs,
                           run_output, trace_modules)

# name: (program relative to the build dir, args, record options)
CASES = {
    "trainsim": ("data/trainsim", ["--batches", "16", "--ops", "2000"], []),
    "retention": ("tests/analyze/av_growth", ["retention", "12"], []),
    "leak": ("tests/analyze/av_growth", ["leak", "12"], []),
    "steady": ("tests/analyze/av_growth", ["steady", "12"], []),
    "timed": ("tests/analyze/av_growth", ["timed", "400"], []),
    "leaks": ("tests/analyze/av_leaks", ["all"], []),
    "fragment": ("tests/frag/fragment", ["--batches", "24"], []),
    "maps": ("tests/programs/maps", ["40", "4"], ["--mmap"]),
    "edge": ("tests/programs/edge", [], []),
    "cxxnew": ("tests/programs/cxxnew", ["40"], []),
    "crash": ("tests/programs/crash", ["segv"], []),
    "forker": ("tests/programs/forker", ["30", "20"], []),
    "xthread": ("tests/programs/xthread", ["4000"], []),
    "dlopener": ("tests/programs/dlopener",
                 ["@BUILD@/tests/programs/libhsvictim.so", "6"], []),
    "marks": ("tests/programs/counts", ["marks", "5"], []),
    "heapmarks": ("tests/programs/heapmarks", ["6", "200", "2000"], []),
}


def record(build, name, prog, args, opts):
    hs = os.path.join(build, "src", "cli", "heapslope")
    out = os.path.join(TRACES, name + ".hst")
    args = [a.replace("@BUILD@", build) for a in args]
    subprocess.run([hs, "record", "-f", "-o", out] + opts + ["--",
                    os.path.join(build, prog)] + args,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # a forked child's trace is NAME.hst.PID: named by its case instead
    for f in sorted(os.listdir(TRACES)):
        if f.startswith(name + ".hst."):
            os.rename(os.path.join(TRACES, f),
                      os.path.join(TRACES, name + "-child.hst"))


def is_system(path):
    return path.startswith(("/usr/", "/lib", "/etc/")) or not path


def copy_modules(hs):
    for t in sorted(os.listdir(TRACES)):
        for path, build_id in trace_modules(hs, os.path.join(TRACES, t)):
            if is_system(path) or not build_id or not os.path.exists(path):
                continue
            dst = os.path.join(DEBUG, ".build-id", build_id[:2],
                               build_id[2:] + ".debug")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(path, dst)


def main():
    build = os.path.realpath(sys.argv[1])
    hs = os.path.join(build, "src", "cli", "heapslope")
    if "--outputs-only" not in sys.argv:
        for d in (TRACES, DEBUG):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(TRACES)
        for name, (prog, args, opts) in CASES.items():
            record(build, name, prog, args, opts)
        copy_modules(hs)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with Workdir() as work:
        for name, argv in outputs():
            with open(os.path.join(OUT, name), "wb") as f:
                f.write(run_output(hs, argv, work))


if __name__ == "__main__":
    os.chdir(HERE)
    main()
