#!/usr/bin/env python3
"""8. Crash safety: a victim allocating continuously, with batch marks, is
killed with SIGKILL after ~1.5 s.  Its trace is readable up to the last
flush: dump exits 0, says incomplete on stderr, --stats reports
complete: no and the events read so far.  Killed with SIGTERM instead, it
ends its trace first: complete, with the signal in it."""
import os
import signal
import subprocess
import time

from common import (HEAPSLOPE, check, check_eq, dump_stats, fail, main, prog,
                    run, sanitizer_report, tmpdir)


def record_forever(d, extra_opts=()):
    """Starts `record -o trace.hst -- forever 60` in d; returns the record
    process and the victim's pid, which forever prints first."""
    argv = [HEAPSLOPE, "record", "-o", "trace.hst", *extra_opts, "--",
            prog("forever"), "60"]
    p = subprocess.Popen(argv, cwd=d, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line.startswith("pid "):
        p.kill()
        p.wait()
        fail(f"forever printed {line!r}")
    return p, int(line.split()[1])


def finish(p):
    """Waits for record; kills it if it outlives the test."""
    if p.poll() is None:
        p.kill()
        p.wait()


def kill_after(seconds, extra_opts=(), flushed=True):
    with tmpdir() as d:
        p, pid = record_forever(d, extra_opts)
        try:
            # the victim itself, not record: it must not get to close its trace
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                check(b"forever" in f.read(), f"pid {pid} is not the victim")
            time.sleep(seconds)
            os.kill(pid, signal.SIGKILL)
            out, err = p.communicate(timeout=30)
        finally:
            finish(p)
        check_eq(p.returncode, 128 + signal.SIGKILL,
                 f"record's exit status after SIGKILL (stderr {err!r})")
        path = os.path.join(d, "trace.hst")
        check(b"heapslope: trace written to trace.hst" in err,
              f"record did not report the trace: {err!r}")

        r = run([HEAPSLOPE, "dump", path])
        errtext = r.err.decode(errors="replace")
        check(0 <= r.rc < 128 and not sanitizer_report(errtext),
              "dump of a killed trace crashed:\n" + r.describe())
        check_eq(r.rc, 0, "dump of a killed trace: exit status "
                 f"(stderr: {errtext.strip()})")
        check("incomplete" in errtext,
              f"dump of a killed trace does not say incomplete: {errtext!r}")
        check_eq(len(errtext.splitlines()), 1, "dump of a killed trace: "
                 "stderr lines")
        s = dump_stats(path)
        check_eq(s.get("complete"), "no", "killed trace: complete")
        check("end_reason" not in s, f"killed trace has an end record: {s}")
        if flushed:
            # flushed at least twice per second: most of 1.5 s is there
            check(b" mark batch" in r.out, "dump of a killed trace: no marks")
            check(s.get("events", 0) > 0,
                  f"killed trace: events {s.get('events')}")
            check(s.get("marks", 0) > 0,
                  f"killed trace: marks {s.get('marks')}")
            check(s.get("allocations", 0) > 1000,
                  f"killed trace: only {s.get('allocations')} allocations "
                  f"after {seconds} s")
        if s.get("exit_signal") is not None:
            check_eq(s["exit_signal"], signal.SIGKILL,
                     "killed trace: exit_signal")
        else:
            fail(f"killed trace: no exit record from record: {s}")
        print(f"   killed after {seconds} s: {s['events']} events, "
              f"{s['marks']} marks, {s['chunks']} chunks readable")


def test_sigkill():
    kill_after(1.5)


def test_sigkill_early():
    """Killed before the first periodic flush: maybe nothing but the
    header, still a readable, incomplete trace."""
    kill_after(0.05, ["--interval", "0"], flushed=False)


def test_sigterm_to_record():
    """record passes SIGTERM on to the victim and exits 128+15."""
    with tmpdir() as d:
        p, pid = record_forever(d)
        try:
            time.sleep(0.7)
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        finally:
            finish(p)
        check_eq(p.returncode, 128 + signal.SIGTERM,
                 f"record's exit status after SIGTERM (stderr {err!r})")
        check(not os.path.exists(f"/proc/{pid}"), "the victim survived")
        s = dump_stats(os.path.join(d, "trace.hst"))
        check_eq(s.get("exit_signal"), signal.SIGTERM, "trace: exit_signal")
        check(s.get("events", 0) > 0, "SIGTERM'd trace: no events")
        # the recorder ended the trace before the process died of it
        check_eq(s.get("complete"), "yes", "SIGTERM'd trace: complete")
        check_eq(s.get("end_signal"), signal.SIGTERM,
                 "SIGTERM'd trace: end_signal")
        check_eq(s.get("counts_verified"), "yes",
                 "SIGTERM'd trace: counts_verified")


if __name__ == "__main__":
    main([test_sigkill, test_sigkill_early, test_sigterm_to_record])
