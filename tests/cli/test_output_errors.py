#!/usr/bin/env python3
"""9. Output errors: an -o path that cannot be created stops record before
the victim runs; an existing file or a symlink at the -o path is never
written through; traces are mode 0600; a full disk stops the recording
with one message and leaves the program's behaviour alone."""
import os
import stat
import subprocess

from common import (HEAPSLOPE, check, check_eq, dump_stats, fail, main,
                    prog, record, run, sanitizer_report, tmpdir, tmpfs)


def refused(r, what, marker):
    check(r.rc != 0, f"{what}: record exited 0\n" + r.describe())
    check(r.rc < 128, f"{what}: record crashed\n" + r.describe())
    lines = r.err.decode(errors="replace").splitlines()
    check_eq(len(lines), 1, f"{what}: lines on stderr ({lines})")
    check(lines[0].startswith("heapslope"),
          f"{what}: message does not name heapslope: {lines[0]!r}")
    check(not os.path.exists(marker), f"{what}: the victim ran")


def test_missing_directory():
    with tmpdir() as d:
        marker = os.path.join(d, "ran")
        r = record([prog("marker"), marker], d,
                   output="/nonexistent/dir/x.hst", ok=False)
        refused(r, "-o /nonexistent/dir/x.hst", marker)
        check(not os.path.exists("/nonexistent/dir/x.hst"),
              "-o /nonexistent/dir/x.hst was created")


def test_existing_file():
    with tmpdir() as d:
        marker = os.path.join(d, "ran")
        path = os.path.join(d, "old.hst")
        with open(path, "w") as f:
            f.write("precious\n")
        r = record([prog("marker"), marker], d, output=path, ok=False)
        refused(r, "-o EXISTING", marker)
        with open(path) as f:
            check_eq(f.read(), "precious\n", "-o EXISTING: the file's content")


def test_symlink_not_followed():
    with tmpdir() as d:
        marker = os.path.join(d, "ran")
        target = os.path.join(d, "target")
        with open(target, "w") as f:
            f.write("target content\n")
        link = os.path.join(d, "link.hst")
        os.symlink(target, link)
        r = record([prog("marker"), marker], d, output=link, ok=False)
        refused(r, "-o SYMLINK", marker)
        with open(target) as f:
            check_eq(f.read(), "target content\n",
                     "-o SYMLINK: the symlink's target")
        # a dangling symlink: its target must not be created
        dangling = os.path.join(d, "dangling.hst")
        os.symlink(os.path.join(d, "nowhere"), dangling)
        r = record([prog("marker"), marker], d, output=dangling, ok=False)
        refused(r, "-o DANGLING-SYMLINK", marker)
        check(not os.path.exists(os.path.join(d, "nowhere")),
              "-o DANGLING-SYMLINK: the target was created")
        # -f replaces the link itself, never writes through it
        r = record([prog("marker"), marker], d, output=link, opts=["-f"])
        check(os.path.exists(marker), "-f SYMLINK: the victim did not run")
        with open(target) as f:
            check_eq(f.read(), "target content\n",
                     "-f SYMLINK: the symlink's target")
        st = os.lstat(link)
        check(stat.S_ISREG(st.st_mode), "-f SYMLINK: the trace is not a "
              "regular file")
        check_eq(dump_stats(link).get("complete"), "yes",
                 "-f SYMLINK: trace complete")


def test_mode_0600():
    with tmpdir() as d:
        # even with a permissive umask
        r = record([prog("forker"), "1", "1"], d,
                   preexec=lambda: os.umask(0))
        check_eq(len(r.traces), 2, "forker: traces")
        for t in r.traces:
            check_eq(oct(os.stat(t).st_mode & 0o7777), oct(0o600),
                     f"mode of {t}")


def test_full_disk():
    with tmpdir() as d:
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        with tmpfs(mnt):
            # ~2.5 s, ~100 events per ms: several flushes fit, then not
            cmd = [prog("churn"), "200000", "7", "100"]
            native = run(cmd, cwd=d)
            check_eq(native.rc, 7, "churn natively: exit status")
            r = record(cmd, mnt, output=os.path.join(mnt, "t.hst"), ok=False)
            check_eq(r.rc, 7,
                     "full disk: record's exit status\n" + r.describe())
            check_eq(r.out, native.out, "full disk: the victim's stdout")
            lines = r.err.decode(errors="replace").splitlines(keepends=True)
            stopped = [ln for ln in lines
                       if ln.startswith("heapslope: recording stopped")]
            check_eq(len(stopped), 1, "full disk: 'heapslope: recording "
                     f"stopped' lines on stderr\n{r.describe()}")
            victim = [ln for ln in lines if not ln.startswith("heapslope")]
            check_eq("".join(victim).encode(), native.err,
                     "full disk: the victim's stderr")
            path = os.path.join(mnt, "t.hst")
            check(os.path.isfile(path), "full disk: no trace at all")
            d_ = run([HEAPSLOPE, "dump", path])
            err = d_.err.decode(errors="replace")
            check(0 <= d_.rc < 128 and not sanitizer_report(err),
                  "dump of the full-disk trace crashed:\n" + d_.describe())
            check(len(err.splitlines()) == 1,
                  f"dump of the full-disk trace: stderr {err!r}")
            # the trace ends with the reason, not as if killed
            check("No space left on device" in err and "killed" not in err,
                  f"dump of the full-disk trace: stderr {err!r}")
            s = dump_stats(path, allow_error=True)
            check_eq(s.get("complete"), "yes", "full-disk trace: complete")
            check_eq(s.get("end_reason"), "error", "full-disk: end reason")
            check("No space left on device" in s.get("stopped", ""),
                  f"full-disk trace: stopped: {s.get('stopped')!r}")
            check_eq(s.get("counts_verified"), "no",
                     "full-disk trace: counts_verified")
            check(s.get("events", 0) > 0,
                  f"full-disk trace: no events were kept ({s})")
            print(f"   full disk: {s.get('events')} events in "
                  f"{s.get('bytes')} bytes readable; dump exit {d_.rc}: "
                  f"{err.strip()}")


if __name__ == "__main__":
    main([test_missing_directory, test_existing_file,
          test_symlink_not_followed, test_mode_0600, test_full_disk])
