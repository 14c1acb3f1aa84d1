#!/usr/bin/env python3
"""10. No silent empty traces.  A statically linked program, one that
defines its own malloc, a setuid program (LD_PRELOAD cannot reach any of
them): record says in one line that nothing could be recorded and why,
and claims no event-free trace as written; the program runs natively.
Default trace names already taken (a shared directory): the program runs
and its trace goes under another name.  A full disk and a closed trace
descriptor: `dump` names the real reason recording stopped, never
"killed?"; the program runs on unchanged.  A file size limit below a
trace's header: no signal for the program, no headerless file left."""
import json
import os
import re
import shutil
import subprocess

from hostile import (HANG, HEAPSLOPE, Case, cases, check, check_eq,
                     check_sized, dump_stats, fail, hprog, is_listing, run,
                     tmpfs, victim)


def check_nothing_recorded(c, reasons):
    """One heapslope line, saying why (reasons: a regular expression), and
    no trace reported that holds no event; every miss is reported."""
    said = [ln for ln in c.heapslope_lines() if not is_listing(ln)]
    bad = []
    if len(said) != 1:
        bad.append(f"{len(said)} heapslope lines say it, not one")
    if not any(re.search(reasons, ln, re.I) for ln in said):
        bad.append(f"no line says why (expected /{reasons}/)")
    for t in c.r.traces:
        s = dump_stats(t, allow_error=True)
        if s["_rc"] != 0 or s.get("events", 0) == 0:
            bad.append(f"record says it wrote {os.path.basename(t)}, which "
                       f"holds no event")
    check(not bad, f"{c.what}: " + "; ".join(bad) +
          f"\nrecord's lines: {c.heapslope_lines()}")


def test_static():
    with Case("static program") as c:
        c.both([hprog("sized-static"), "5"], timeout=HANG)
        check_nothing_recorded(c, r"static")


def test_own_malloc():
    with Case("program with its own malloc") as c:
        c.both([hprog("ownmalloc"), "5"], timeout=HANG)
        check(c.n.out.startswith(b"own allocator: 5 blocks"),
              f"ownmalloc natively: {c.n.out!r}")
        check_nothing_recorded(c, r"malloc")


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_setuid():
    with Case("setuid program") as c:
        os.chmod(c.root, 0o755)
        for k in ("native", "rec", "native-side", "rec-side"):
            os.chmod(c.dir(k), 0o777)
        bindir = os.path.join(c.root, "bin")
        os.mkdir(bindir, 0o755)
        exe = os.path.join(bindir, "euid")
        shutil.copy(hprog("euid"), exe)
        os.chown(exe, 0, 0)
        os.chmod(exe, 0o4755)
        c.native([exe, "5"], timeout=HANG, preexec=as_nobody)
        if not c.n.out.startswith(b"euid 0,"):
            fail("cannot run a setuid-root program as nobody here (needs "
                 f"root, a filesystem without nosuid): {c.n.out!r} "
                 f"{c.n.err!r}")
        c.record([exe, "5"], timeout=HANG, preexec=as_nobody)
        c.check_same()
        check_nothing_recorded(c, r"set-?u(ser-)?id|setgid|secure|privilege")


def next_pids(n):
    """The n pids the kernel hands out next (from /proc/loadavg's last
    pid), wrapping at pid_max back to 300 as Linux does."""
    with open("/proc/loadavg") as f:
        last = int(f.read().split()[4])
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    out = []
    for i in range(1, n + 1):
        p = last + i
        if p >= pid_max:
            p = 300 + (p - pid_max)
        out.append(p)
    return out


def test_default_names_taken():
    with Case("default trace names taken") as c:
        d = c.dir("rec")
        taken = {}
        for pid in next_pids(300):
            name = f"heapslope.sized.{pid}.hst"
            taken[name] = f"someone else's {pid}\n".encode()
            with open(os.path.join(d, name), "wb") as f:
                f.write(taken[name])
        c.both([hprog("sized"), "7"], output=None, timeout=HANG)
        c.check_quiet()
        t = c.r.trace()
        check(os.path.basename(t) not in taken,
              f"{c.what}: the trace was written to a taken name, {t}")
        for name, data in taken.items():
            with open(os.path.join(d, name), "rb") as f:
                check_eq(f.read(), data, f"{c.what}: {name}")
        s = dump_stats(t)
        check_eq(s.get("complete"), "yes", f"{c.what}: {t}: complete")
        check_eq(s.get("counts_verified"), "yes", f"{c.what}: counts_verified")
        check_sized(t, {777: 7}, c.what)


def dump_reason(c, path, reason):
    """dump of a trace whose recording stopped early: exits 0 or says it is
    incomplete, never crashes, and names the reason (a regular
    expression), never "killed?"."""
    r = run([HEAPSLOPE, "dump", path], timeout=HANG)
    err = r.err.decode(errors="replace")
    check(0 <= r.rc < 128, f"{c.what}: dump crashed:\n" + r.describe())
    check("killed?" not in err, f"{c.what}: dump guesses 'killed?' where "
          f"the recorder knew why it stopped: {err.strip()!r}")
    check(re.search(reason, err.replace(path, "TRACE"), re.I),
          f"{c.what}: dump does not say why recording stopped (expected "
          f"/{reason}/): {err.strip()!r}")
    # and so does the report, with the events kept up to there
    a = run([HEAPSLOPE, "analyze", "--json", "-", path], timeout=HANG)
    check_eq(a.rc, 0, f"{c.what}: analyze's exit status\n" + a.describe())
    t = json.loads(a.out)["trace"]
    check(re.search(reason, (t.get("stopped") or "").replace(path, "TRACE"),
                    re.I) and t.get("end_reason") == "error" and
          t.get("events", 0) > 0,
          f"{c.what}: the report's trace says {t}")


def test_full_disk():
    with Case("full disk") as c, tmpfs(c.dir("rec")) as mnt:
        # ~2.5 s, ~100 events per ms: several flushes fit, then not
        c.both([victim("churn"), "200000", "7", "100"], timeout=HANG)
        check_eq(c.n.rc, 7, "churn natively: exit status")
        dump_reason(c, os.path.join(mnt, "trace.hst"),
                    r"no space|ENOSPC|full")
        # record's listing does not claim the events it could not write
        err = c.r.err.decode(errors="replace") \
            if isinstance(c.r.err, bytes) else c.r.err
        listed = [l for l in err.splitlines() if "trace written to" in l]
        check(listed and all("stopped early, not all in the trace" in l or
                             "incomplete" in l for l in listed),
              "full disk: the listing does not say the trace stopped "
              "early:\n" + err)


def test_file_size_limit():
    """The program limits the size of the files it writes below a trace's
    header (RLIMIT_FSIZE), then forks.  The recorder's writes past the
    limit raise no SIGXFSZ in the program (its default action kills: the
    child died of it when its trace's end was cut to a length the header
    never reached), and a file that could not take its header is no
    trace: it is removed, not left beside the traces.  Each process says
    once that recording stopped, and both run on as natively."""
    with Case("file size limit") as c:
        c.both([hprog("fsizefork"), "64"], timeout=HANG)
        check_eq(c.n.rc, 0, "fsizefork natively: the child's exit status")
        on_disk = c.check_reported()
        check_eq([os.path.basename(t) for t in on_disk], ["trace.hst"],
                 "file size limit: trace files")
        stopped = [ln for ln in c.heapslope_lines()
                   if "recording stopped" in ln]
        check(len(stopped) == 2 and
              all(re.search(r"too large", ln, re.I) for ln in stopped),
              "file size limit: one line each from parent and child, "
              f"saying why: {c.heapslope_lines()}")
        # standard error a regular file (a CI log): the recorder's own
        # line, past the limit there too, raises no SIGXFSZ either
        err = os.path.join(c.root, "stderr.txt")
        with open(err, "wb") as f:
            r = subprocess.run([HEAPSLOPE, "record", "-q", "-o",
                                os.path.join(c.root, "err.hst"), "--",
                                hprog("fsizefork"), "64"],
                               stdout=subprocess.DEVNULL, stderr=f,
                               timeout=HANG)
        check_eq(r.returncode, 0, "file size limit, standard error a file: "
                 "exit status")


def test_closed_descriptor():
    with Case("trace descriptor closed") as c:
        c.both([hprog("closerange"), "1000", "200000", "out.txt"],
               timeout=HANG)
        check_eq(c.n.out, b"closerange: wrote out.txt on descriptor 3\n",
                 "closerange natively: stdout")
        dump_reason(c, c.r.trace(), r"\bclos|\bdescriptor\b|\bfd\b")


def test_stderr_replaced():
    """A daemon closes every descriptor and its data file takes descriptor
    2: the recorder's line about stopping (its trace is gone) stays out of
    it, and the trace keeps the reason."""
    with Case("standard error replaced") as c:
        c.both([hprog("errdata"), "@SIDE@/data"], timeout=HANG)
        check_eq(c.side("native", "data"), "DATA\n", "errdata natively")
        check_eq(c.side("rec", "data"), "DATA\n",
                 "errdata recorded: its data file")
        dump_reason(c, c.r.trace(), r"\bclos|\bdescriptor\b|\bfd\b")


def test_stray_write():
    """The program writes into the trace's descriptor (strayfd finds it by
    name): the recorder cuts those bytes off and stops, the trace stays
    readable up to there and says why; before, it was corrupt from that
    byte on ("bad chunk magic")."""
    with Case("stray write into the trace") as c:
        c.native([hprog("strayfd")], timeout=HANG)
        c.record([hprog("strayfd")], timeout=HANG)
        check_eq(c.n.err, b"strayfd: wrote into 0\n", "strayfd natively")
        check(b"strayfd: wrote into 1\n" in c.r.err,
              "strayfd recorded: no write into its trace\n" +
              c.r.describe())
        check_eq(c.r.rc, 0, "strayfd recorded: exit status")
        (t,) = c.traces()
        s = dump_stats(t)
        check_eq(s.get("complete"), "yes", "the trace ends whole")
        check_eq(s.get("counts_verified"), "no", "counts_verified")
        dump_reason(c, t, r"wrote into")
        # its 4,000 blocks, freed after the stop, are live where the
        # trace ends: not "at exit", which the trace never saw
        a = run([HEAPSLOPE, "analyze", "--from", "0", "--json", "-", t],
                timeout=HANG)
        check_eq(a.rc, 0, "analyze\n" + a.describe())
        r = json.loads(a.out)
        check_eq(r["totals"]["leaked_blocks"], 4000,
                 "blocks live where the trace ends")
        check_eq(r["verdict"], "leak", "verdict")
        check("at exit" not in r["verdict_reason"] and
              "exit was not seen" in r["verdict_reason"],
              f"the verdict's reason: {r['verdict_reason']!r}")


if __name__ == "__main__":
    cases({"static": [test_static], "own-malloc": [test_own_malloc],
           "setuid": [test_setuid],
           "default-name-taken": [test_default_names_taken],
           "stopped-full-disk": [test_full_disk],
           "stopped-closed-fd": [test_closed_descriptor],
           "stopped-stderr-replaced": [test_stderr_replaced],
           "stopped-stray-write": [test_stray_write],
           "stopped-file-size-limit": [test_file_size_limit]})
