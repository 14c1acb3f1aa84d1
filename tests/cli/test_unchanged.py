#!/usr/bin/env python3
"""7. The recorded program behaves as it does natively: stdout, stderr and
exit status byte-identical (record's own 'heapslope:' lines, which come
last on stderr, excluded); a victim killed by signal N makes record exit
128+N."""
import os
import signal
import sys

from common import (Replay, check, check_complete, check_eq, dump_lines,
                    dump_stats, is_listing, main, no_core, prog, record, run,
                    tmpdir)

STDIN = (b"first line\nsecond, longer line of input\n\n"
         b"last line without newline")


def native_status(rc):
    return 128 - rc if rc < 0 else rc


def compare(cmd, what, stdin=b"", env=None, want_status=None, traces=1):
    with tmpdir() as d:
        nat = run(cmd, cwd=d, stdin=stdin, env=env, preexec=no_core)
        rec = record(cmd, d, stdin=stdin, env=env, preexec=no_core, ok=False)
        status = native_status(nat.rc)
        if want_status is not None:
            check_eq(status, want_status, f"{what} natively: exit status "
                     "(test assumption)")
        check_eq(rec.rc, status, f"{what}: record's exit status vs native "
                 f"(native returncode {nat.rc})\n" + rec.describe())
        check_eq(rec.out, nat.out, f"{what}: stdout under record vs natively")
        check_eq(rec.victim_err, nat.err,
                 f"{what}: stderr under record (its own lines removed) vs "
                 "natively")
        check_eq(len(rec.traces), traces,
                 f"{what}: 'heapslope: trace written' lines\n" +
                 rec.describe())
        for line in rec.tail:
            check(is_listing(line),
                  f"{what}: unexpected line from record: {line!r}")
        for t in rec.traces:
            check(os.path.isfile(t), f"{what}: reported trace {t} is missing")


def test_io_exit_0():
    compare([prog("io"), "0", "an arg", "", "x'\"$HOME\\", "ünï"], "io 0",
            stdin=STDIN, want_status=0)


def test_io_exit_3():
    env = dict(os.environ, IO_VICTIM_VAR="value with spaces")
    compare([prog("io"), "3"], "io 3", stdin=STDIN, env=env, want_status=3)


def test_counts_quiet():
    compare([prog("counts"), "mix", "100"], "counts mix", want_status=0)


def test_crash_segv():
    compare([prog("crash"), "segv"], "crash segv",
            want_status=128 + signal.SIGSEGV)


def test_crash_abort():
    compare([prog("crash"), "abort"], "crash abort",
            want_status=128 + signal.SIGABRT)


def test_crash_kill9():
    compare([prog("crash"), "kill9"], "crash kill9",
            want_status=128 + signal.SIGKILL)


def test_fork_exec_victims():
    # output of a victim whose children are recorded too
    compare([prog("execer"), "3", prog("io"), "5", "exec'd"], "execer io",
            stdin=STDIN, want_status=5, traces=2)


def closefds_case(extra, what):
    """A program that closes every inherited descriptor, then opens a file
    of its own: the file must hold only what the program wrote."""
    with tmpdir() as d:
        nat = run([prog("closefds"), "native.txt", *extra], cwd=d)
        check_eq(nat.rc, 0, f"{what} natively: exit status")
        rec = record([prog("closefds"), "recorded.txt", *extra], d, ok=False)
        check_eq(rec.rc, 0, f"{what}: record's exit status\n" + rec.describe())
        with open(os.path.join(d, "native.txt"), "rb") as f:
            want = f.read()
        with open(os.path.join(d, "recorded.txt"), "rb") as f:
            got = f.read()
        check(got == want, f"{what}: the program's own file differs under "
              f"record: {len(got)} bytes instead of {len(want)}: the "
              f"recorder wrote into it ({got[:120]!r}...)")
        check_eq(rec.out, nat.out.replace(b"native.txt", b"recorded.txt"),
                 f"{what}: stdout")


def test_closefds():
    closefds_case([], "closefds")


def test_closefds_forked():
    closefds_case(["fork"], "closefds fork")


PY_VICTIM = r"""
import ctypes, sys
mark = getattr(ctypes.CDLL(None), "heapslope_mark_batch", None)
keep = []
for i in range(20):
    keep.append([bytearray(1000) for _ in range(100)])
    if mark:
        mark()
print("batches", len(keep), "recorded" if mark else "native")
sys.stderr.write("python stderr\n")
sys.exit(4)
"""


def test_python():
    """The motivating case: a Python program, marks through ctypes."""
    py = os.path.realpath(sys.executable)
    with tmpdir() as d:
        nat = run([py, "-c", PY_VICTIM], cwd=d)
        check_eq(nat.rc, 4, "python natively: exit status")
        rec = record([py, "-c", PY_VICTIM], d, ok=False)
        check_eq(rec.rc, 4, "python: record's exit status\n" + rec.describe())
        check_eq(rec.out, nat.out.replace(b"native", b"recorded"),
                 "python: stdout")
        check_eq(rec.victim_err, nat.err, "python: stderr")
        s = dump_stats(rec.trace())
        check_complete(s, "python")
        check_eq(s["marks"], 20, "python: marks")
        check(s["allocations"] > 2000, f"python: {s['allocations']} "
              "allocations (PYTHONMALLOC=malloc should route them all)")
        rp = Replay()
        for line in dump_lines(rec.trace()):
            rp.feed_line(line)
        check(not rp.errors, "python: " + rp.error_text())


def test_missing_program():
    """A command that does not exist: 127 like a shell, one message."""
    with tmpdir() as d:
        r = record([os.path.join(d, "no-such-program")], d, ok=False)
        check_eq(r.rc, 127, "record of a missing program: exit status")
        lines = r.err.decode().splitlines()
        check_eq(len(lines), 1, f"record of a missing program: stderr lines "
                 f"{lines}")


def test_missing_program_leaves_no_file():
    """Nothing ran, so no trace: an empty -o file left behind is not a
    trace, and makes the next `record -o` of that name fail."""
    with tmpdir() as d:
        r = record([os.path.join(d, "no-such-program")], d, ok=False)
        check_eq(r.rc, 127, "record of a missing program: exit status")
        path = os.path.join(d, "trace.hst")
        if os.path.exists(path):
            check(os.path.getsize(path) > 0,
                  "record of a missing program left an empty trace.hst")


if __name__ == "__main__":
    main([test_io_exit_0, test_io_exit_3, test_counts_quiet, test_crash_segv,
          test_crash_abort, test_crash_kill9, test_fork_exec_victims,
          test_missing_program, test_missing_program_leaves_no_file,
          test_python, test_closefds,
          test_closefds_forked])
