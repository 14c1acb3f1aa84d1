#!/usr/bin/env python3
"""9. -f replaces regular files only: `record -f -o FIFO` and `-f -o NODE`
(a character device, the same as /dev/null) refuse with one line on
stderr and a non-zero status, the program does not run, and the FIFO or
device is still there; -f on a regular file still replaces it."""
import os
import stat

from hostile import (HANG, WRITTEN, cases, check, check_eq, dump_stats,
                     hprog, record, tmpdir)


def refuses(d, path, kind):
    marker = os.path.join(d, "ran")
    before = os.lstat(path)
    r = record(["touch", marker], d, opts=["-f"], output=path, timeout=HANG,
               ok=False)
    what = f"record -f -o {kind}"
    check(r.rc != 0 and r.rc < 128, f"{what}: exit status {r.rc}\n" +
          r.describe())
    lines = r.err.decode(errors="replace").splitlines()
    check_eq(len(lines), 1, f"{what}: lines on stderr ({lines})")
    check(lines[0].startswith("heapslope") and not
          lines[0].startswith(WRITTEN), f"{what}: stderr {lines[0]!r}")
    check(not os.path.exists(marker), f"{what}: the program ran")
    check(os.path.lexists(path), f"{what}: {path} is gone")
    after = os.lstat(path)
    check_eq((stat.S_IFMT(after.st_mode), after.st_ino, after.st_rdev),
             (stat.S_IFMT(before.st_mode), before.st_ino, before.st_rdev),
             f"{what}: {path} (kind, inode, device)")


def test_fifo():
    with tmpdir() as d:
        path = os.path.join(d, "fifo")
        os.mkfifo(path)
        refuses(d, path, "FIFO")


def test_device():
    with tmpdir() as d:
        path = os.path.join(d, "null")
        null = os.stat("/dev/null")
        os.mknod(path, stat.S_IFCHR | 0o666, null.st_rdev)
        refuses(d, path, "character device")


def test_regular_file():
    with tmpdir() as d:
        path = os.path.join(d, "old.hst")
        with open(path, "w") as f:
            f.write("an old trace\n")
        r = record([hprog("sized"), "5"], d, opts=["-f"], output=path,
                   timeout=HANG)
        check_eq(r.out, b"sized: 5 blocks of 777 bytes\n", "-f FILE: stdout")
        s = dump_stats(path)
        check_eq(s.get("complete"), "yes", "-f FILE: the new trace: complete")
        check_eq(s.get("counts_verified"), "yes",
                 "-f FILE: the new trace: counts_verified")


if __name__ == "__main__":
    cases({"force-fifo": [test_fifo], "force-device": [test_device],
           "force-regular": [test_regular_file]})
