#!/usr/bin/env python3
"""What already held and must keep holding, each run natively and
recorded: 1000 std::async threads allocating, thread_local destructors
that allocate, exit() racing allocating threads, fork from 4 threads at
once, vfork + exec / posix_spawn / system(), close_range over the
recorder's descriptors, and SIGKILL of the recorded program at random
moments (record exits 137, the trace reads up to its last flush; a
kill inside the write of a chunk leaves it cut there: dump says so,
analyze reads up to it).
(SIGPROF at 100 us is in test_signals.py, the full disk in
test_silent.py.)"""
import os
import random
import re
import signal
import subprocess
import time

from hostile import (HANG, HEAPSLOPE, Case, cases, check, check_blocks_each,
                     check_eq, check_sized, dump_stats, fail, hprog, run,
                     tmpdir, victim)


def test_async_1000():
    t, k = 1000, 100
    with Case("1000 std::async threads") as c:
        c.both([hprog("async"), str(t), str(k)], timeout=4 * HANG)
        c.check_quiet()
        (tr, _), = c.stats().items()
        check_sized(tr, {777: t * k}, c.what)


def test_thread_local_destructors():
    t = 50
    with Case("thread_local destructors") as c:
        c.both([hprog("tlsdtor"), str(t)], timeout=HANG)
        c.check_quiet()
        (tr, _), = c.stats().items()
        check_sized(tr, {777: t + 1, 555: t + 1}, c.what)


def test_exit_races_threads():
    for i in range(5):
        with Case(f"exitrace run {i}") as c:
            c.both([victim("exitrace"), "4", str(50 + 40 * i)],
                   timeout=HANG)
            c.check_quiet()
            c.stats()


def test_fork_from_4_threads():
    k = 1000
    with Case("fork from 4 threads at once") as c:
        c.both([hprog("fork4"), "4", str(k)], timeout=HANG)
        c.check_quiet()
        c.check_reported()
        stats = c.stats()
        check_eq(len(stats), 5, f"{c.what}: traces (parent and 4 children)")
        check_blocks_each(stats, "fork4", 777, [0, k, k, k, k], c.what)
        check_sized(os.path.join(c.dir("rec"), "trace.hst"), {555: 400},
                    c.what + ", the parent")


def test_vfork_spawn_system():
    with Case("vfork, posix_spawn, system") as c:
        c.both([hprog("spawnall"), hprog("sized"), "3"], timeout=HANG)
        c.check_quiet()
        c.check_reported()
        check_blocks_each(c.stats(), "sized", 777, [3, 3, 3], c.what)


def test_close_range():
    with Case("close_range over the recorder's descriptors") as c:
        c.both([hprog("closerange"), "1000", "200000", "out.txt"],
               timeout=HANG)
        # the reason it stopped is test_silent.py's to check
        s = dump_stats(c.r.trace(), allow_error=True)
        check_eq(s["_rc"], 0, f"{c.what}: dump --stats exit status "
                 f"({s['_stderr'].strip()})")


def record_child(p, exe, seconds):
    """The pid of record's child once it runs exe."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                kids = [int(x) for x in f.read().split()]
            for k in kids:
                if os.readlink(f"/proc/{k}/exe") == exe:
                    return k
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.002)
    fail(f"record did not start {exe} within {seconds} s")


def test_sigkill_random():
    seed = int(os.environ.get("HOSTILE_SEED", time.time()))
    rnd = random.Random(seed)
    print(f"   seed {seed} (HOSTILE_SEED)")
    progs = [[victim("forever"), "60"], [victim("exitrace"), "2", "60000"]]
    for i in range(8):
        cmd = progs[i % 2]
        delay = rnd.uniform(0, 1.5)
        with tmpdir() as d:
            p = subprocess.Popen([HEAPSLOPE, "record", "-o", "trace.hst",
                                  "--"] + cmd, cwd=d, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE,
                                 start_new_session=True)
            try:
                pid = record_child(p, os.path.realpath(cmd[0]), HANG)
                time.sleep(delay)
                os.kill(pid, signal.SIGKILL)
                out, err = p.communicate(timeout=HANG)
            except subprocess.TimeoutExpired:
                fail(f"record did not finish (deadlock?) after SIGKILL of "
                     f"{cmd} at {delay:.3f} s")
            finally:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
            what = f"{os.path.basename(cmd[0])} killed after {delay:.3f} s"
            check_eq(p.returncode, 128 + signal.SIGKILL,
                     f"{what}: record's exit status (stderr {err[-500:]!r})")
            path = os.path.join(d, "trace.hst")
            if not os.path.exists(path):
                # killed before the recorder wrote the header (a loaded
                # machine): record removes the empty file, and says so
                check(b"nothing was recorded" in err,
                      f"{what}: no trace, and record's stderr {err!r}")
                print(f"   {what}: before the recorder started")
                continue
            s = dump_stats(path, allow_error=True)
            if s["_rc"]:
                # killed inside the write of a chunk: dump, strict, says
                # where the file ends; analyze reads up to that chunk
                size = os.path.getsize(path)
                check(re.search(r"truncated trace: partial chunk( header)? "
                                r"at byte \d+$", s["_stderr"].strip()),
                      f"{what}: dump's error: {s['_stderr'].strip()!r}")
                at = int(s["_stderr"].split()[-1])
                check(at < size, f"{what}: cut chunk at {at}, file {size}")
                r = run([HEAPSLOPE, "analyze", path], timeout=HANG)
                check_eq(r.rc, 0, f"{what}, cut in its last chunk: "
                         f"analyze's exit status ({r.describe()})")
                check(b"cut inside a chunk" in r.err,
                      f"{what}: analyze's stderr {r.err!r}")
            else:
                check("incomplete" in s["_stderr"],
                      f"{what}: dump's stderr: {s['_stderr'].strip()!r}")
            check_eq(s.get("complete"), "no", f"{what}: complete")
            print(f"   {what}: {s.get('events')} events readable")


if __name__ == "__main__":
    cases({"async-1000": [test_async_1000],
           "thread-local-dtors": [test_thread_local_destructors],
           "exit-races-threads": [test_exit_races_threads],
           "fork-4-threads": [test_fork_from_4_threads],
           "vfork-spawn-system": [test_vfork_spawn_system],
           "close-range": [test_close_range],
           "sigkill-random": [test_sigkill_random]})
