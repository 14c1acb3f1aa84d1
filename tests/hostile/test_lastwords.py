#!/usr/bin/env python3
"""A process that dies of a signal left to its default action: its
trace is written out first, with an end record saying so, and it then
dies of that signal as it would have, with the same output and exit
status; the program still sees the default action when it asks.  A
signal the program ignores, or one an ignoring parent passed down,
still does nothing.  And a process whose last words cannot be written
(its writer held up) still dies, at most a couple of seconds late.  A
process whose last thread leaves as a thread (pthread_exit from main,
the exit system call) ends as natively: the writer does not keep it."""
import os
import signal
import subprocess
import time

from hostile import (HANG, HEAPSLOPE, Case, cases, check, check_eq,
                     dump_stats, hprog, sized_counts, tmpdir)

SIGRT3 = signal.SIGRTMIN + 3
MODES = {"term": signal.SIGTERM, "abort": signal.SIGABRT,
         "segv": signal.SIGSEGV, "doublefree": signal.SIGABRT,
         "int": signal.SIGINT, "usr1": signal.SIGUSR1, "rt": SIGRT3,
         "reset": signal.SIGTERM, "thread": signal.SIGTERM}


def no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def killed_case(mode, sig):
    with Case(f"lastwords {mode}") as c:
        cmd = [hprog("lastwords"), mode]
        c.native(cmd, timeout=30, preexec=no_core)
        c.record(cmd, timeout=30, preexec=no_core)
        check_eq(c.n.rc, -sig, f"{mode} natively: killed by signal {sig}")
        check_eq(c.r.rc, 128 + sig, f"{mode}: record's exit status")
        c.r.rc = -sig  # record says it as 128 + N: the rest must agree
        c.check_same()
        check(b"signal %d: default flags 0" % sig in c.n.out,
              f"{mode}: the program's view natively: {c.n.out!r}")
        (t,) = c.traces()
        s = dump_stats(t)
        check_eq(s.get("complete"), "yes", f"{mode}: complete")
        check_eq(s.get("end_reason"), "signal", f"{mode}: end_reason")
        check_eq(s.get("end_signal"), sig, f"{mode}: end_signal")
        check_eq(s.get("counts_verified"), "yes", f"{mode}: counts_verified")
        got = sized_counts(t, [4321])
        check_eq(got[4321][0], 2000, f"{mode}: the 4321-byte blocks in the "
                 "trace")


def test_killed():
    for mode, sig in MODES.items():
        killed_case(mode, sig)


def test_ignored():
    """ignored by the program: it lives on, and its trace ends at exit"""
    with Case("lastwords ign") as c:
        c.both([hprog("lastwords"), "ign"], timeout=30)
        check_eq(c.n.rc, 0, "ign natively: exit status")
        check(c.n.out.endswith(b"alive\n"), f"ign natively: {c.n.out!r}")
        (t,) = c.traces()
        check_eq(dump_stats(t).get("end_reason"), "exit", "ign: end_reason")


def test_inherited_ignored():
    """SIGTERM ignored by the parent: the default action is not the
    program's, which lives on and says so"""
    def ign():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with Case("lastwords, SIGTERM ignored by the parent") as c:
        cmd = [hprog("lastwords"), "term"]
        c.native(cmd, timeout=30, preexec=ign)
        c.record(cmd, timeout=30, preexec=ign)
        c.check_same()
        check_eq(c.n.rc, 0, "inherited SIG_IGN natively: exit status")
        check(b"signal 15: ignored" in c.n.out,
              f"inherited SIG_IGN natively: {c.n.out!r}")


def wait_for(p, text, what):
    line = p.stdout.readline()
    check(line == text, f"{what}: the victim printed {line!r}")


def test_from_outside():
    """SIGTERM to record, which passes it on: every block the victim made
    until then is in the trace"""
    with tmpdir() as d:
        p = subprocess.Popen([HEAPSLOPE, "record", "-o", "trace.hst", "--",
                              hprog("lastwords"), "wait"], cwd=d,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(p, b"waiting\n", "from outside")
            time.sleep(0.3)  # under the half second of a flush
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check_eq(p.returncode, 128 + signal.SIGTERM, "from outside: record's "
                 "exit status")
        t = os.path.join(d, "trace.hst")
        s = dump_stats(t)
        check_eq(s.get("complete"), "yes", "from outside: complete")
        check_eq(s.get("end_signal"), signal.SIGTERM, "from outside: "
                 "end_signal")
        check_eq(s.get("counts_verified"), "yes", "from outside: verified")
        n = sized_counts(t, [4321])[4321][0]
        check(n >= 50, f"from outside: {n} blocks of 4321 bytes in 0.3 s")
        print(f"   from outside: {n} blocks of 4321 bytes, all in the trace")


def test_writer_held_up():
    """the writer held up for 6 s: the victim still dies of SIGTERM within
    a few seconds, and its trace reads up to its last whole chunk"""
    with tmpdir() as d:
        env = dict(os.environ, HEAPSLOPE_TEST_WRITER_STALL="6000")
        p = subprocess.Popen([HEAPSLOPE, "record", "-o", "trace.hst", "--",
                              hprog("lastwords"), "wait"], cwd=d, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(p, b"waiting\n", "writer held up")
            time.sleep(0.5)
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check_eq(p.returncode, 128 + signal.SIGTERM,
                 "writer held up: record's exit status")
        check(took < 4.5, f"writer held up: the victim died {took:.2f} s "
              "after SIGTERM")
        s = dump_stats(os.path.join(d, "trace.hst"), allow_error=True)
        check_eq(s["_rc"], 0, f"writer held up: dump: {s['_stderr']!r}")
        print(f"   writer held up: died {took:.2f} s after SIGTERM, trace "
              f"complete: {s.get('complete')}")


def last_thread_case(mode, rc, out, end_reason, blocks):
    with Case(f"lastthread {mode}") as c:
        c.both([hprog("lastthread"), mode], timeout=HANG)
        check_eq(c.n.rc, rc, f"{mode} natively: exit status")
        check_eq(c.n.out, out, f"{mode} natively: stdout")
        (t,) = c.traces()
        s = dump_stats(t)
        check_eq(s.get("complete"), "yes", f"{mode}: complete")
        check_eq(s.get("end_reason"), end_reason, f"{mode}: end_reason")
        check_eq(s.get("counts_verified"), "yes", f"{mode}: counts_verified")
        got = sized_counts(t, [4444, 5555])
        check_eq([got[4444][0], got[5555][0]], blocks,
                 f"{mode}: the blocks kept by main and by the threads")


def test_last_thread_pthread_exit():
    last_thread_case("pexit", 0, b"main leaves\nthreads done 2\n", "exit",
                     [1, 2])


def test_last_thread_raw_exit():
    last_thread_case("rawexit", 3, b"main leaves\n", "_exit", [1, 0])


if __name__ == "__main__":
    cases({"killed-by-signal": [test_killed],
           "signal-ignored": [test_ignored, test_inherited_ignored],
           "signal-from-outside": [test_from_outside],
           "signal-writer-held-up": [test_writer_held_up],
           "last-thread-pthread-exit": [test_last_thread_pthread_exit],
           "last-thread-raw-exit": [test_last_thread_raw_exit]})
