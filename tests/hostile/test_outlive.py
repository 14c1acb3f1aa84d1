#!/usr/bin/env python3
"""3. Processes that outlive `heapslope record`: writing where a trace
went must never raise SIGPIPE (or block) once record is gone, so a
background job of the program, and the children of a program whose
record was SIGKILLed, do all their work."""
import os
import signal
import subprocess
import time

from hostile import (HANG, HEAPSLOPE, Case, cases, check, check_eq,
                     differ, dump_stats, fail, hprog, sized_counts, snapshot)

CHILDREN, GAP_MS, SLEEP_MS, BLOCKS = 30, 50, 1000, 2000


def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_background_job():
    script = ("(sleep 1; /bin/echo hello > f; echo \"echo: status $?\" "
              "> status) &")
    with Case("sh -c '(sleep 1; /bin/echo hello > f) &'") as c:
        # communicate() waits for the job too: it holds stdout and stderr
        c.both(["sh", "-c", script], timeout=HANG)
        with open(os.path.join(c.dir("native"), "f")) as f:
            check_eq(f.read(), "hello\n", "natively: f")
        c.check_quiet()
        c.stats()


def all_complete(d, seconds):
    """Waits until every trace in d is complete; their stats."""
    deadline = time.monotonic() + seconds
    while True:
        stats = {os.path.join(d, f): dump_stats(os.path.join(d, f))
                 for f in sorted(os.listdir(d)) if ".hst" in f}
        if all(s.get("complete") == "yes" for s in stats.values()) or \
                time.monotonic() > deadline:
            return stats
        time.sleep(0.2)


def test_record_killed():
    cmd = [hprog("outlive"), str(CHILDREN), str(GAP_MS), str(SLEEP_MS),
           str(BLOCKS)]
    with Case("outlive, record SIGKILLed") as c:
        n = c.native(cmd, timeout=HANG)
        check_eq(n.rc, 0, "outlive natively: exit status")
        d = c.dir("rec")
        with open(os.path.join(c.dir("rec-side"), "out"), "wb") as out:
            p = subprocess.Popen([HEAPSLOPE, "record", "-o", "trace.hst",
                                  "--"] + cmd, cwd=d, stdout=out,
                                 stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                time.sleep(0.5)  # about 10 children forked, 20 to come
                p.kill()
                p.wait(timeout=10)
                if not wait_for(os.path.join(d, "summary"), 60):
                    fail("outlive did not finish (deadlock?) within 60 s "
                         "after record was killed")
                # the parent writes summary just before it exits, and
                # its trace's end after: the group is killed only once
                # every trace is complete (or they had their time)
                stats = all_complete(d, 20)
            finally:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        diff = differ("files", snapshot(d), snapshot(c.dir("native")))
        check(not diff, f"after SIGKILL of record: the children's files "
              f"differ from the native ones:\n{diff}")
        check(stats, "no trace at all")
        total = 0
        for t, s in stats.items():
            check_eq(s.get("complete"), "yes", f"{t}: complete")
            check_eq(s.get("counts_verified"), "yes", f"{t}: counts_verified")
            got = sized_counts(t, [777])[777]
            check(got in ([0, 0], [BLOCKS, BLOCKS]),
                  f"{t}: {got} allocations and frees of 777 bytes")
            total += got[0]
        check_eq(total, CHILDREN * BLOCKS, "777-byte blocks in all traces")


if __name__ == "__main__":
    cases({"outlive-background": [test_background_job],
           "outlive-killed": [test_record_killed]})
