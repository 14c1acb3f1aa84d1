"""Bad input to `heapslope analyze`: missing, random, text, truncated,
corrupt and future-version files get one line on stderr and exit 1, never
a crash.  A trace cut short (a killed recorder) is the documented
exception: it is analyzed up to its last complete chunk, exit 0, with one
line on stderr saying so and trace.complete false in the report."""
import json
import os
import random
import struct

import subprocess
import time

from analyze_common import (HDR_PID, HDR_START_MONOTONIC,
                            HDR_START_REALTIME, HEAPSLOPE,
                            analyze_run, check, check_eq, fail, main, prog,
                            record_trace, rewrite_header, run, tmpdir,
                            trace_chunks, trainsim, validate_report,
                            write_file)

PREFIX = "heapslope analyze: "


def one_line_error(path, what, *opts, want=None):
    """analyze fails on path: exit 1, one line on stderr, nothing on
    stdout."""
    for json_opt in ((), ("--json", "-")):
        r = analyze_run(path, *json_opt, *opts)
        err = r.err.decode(errors="replace")
        lines = err.splitlines()
        check_eq(r.rc, 1, f"{what}: exit status (stderr {err!r})")
        check(len(lines) == 1 and lines[0].startswith(PREFIX),
              f"{what}: expected one line '{PREFIX}...' on stderr, got {err!r}")
        check_eq(r.out, b"", f"{what}: stdout")
        if want:
            check(want in lines[0], f"{what}: {want!r} not in {lines[0]!r}")
    return lines[0]


def incomplete(path, what, reason):
    """analyze reads path as far as it goes: exit 0, one line on stderr,
    the report says the trace is incomplete."""
    r = analyze_run(path, "--json", "-")
    err = r.err.decode(errors="replace")
    check_eq(r.rc, 0, f"{what}: exit status:\n" + r.describe())
    lines = err.splitlines()
    check(len(lines) == 1 and lines[0].startswith(PREFIX) and
          "incomplete" in lines[0] and reason in lines[0],
          f"{what}: expected one line saying the trace is incomplete "
          f"({reason}), got {err!r}")
    try:
        rep = json.loads(r.out)
    except ValueError as e:
        fail(f"{what}: no valid JSON ({e}):\n" + r.describe())
    validate_report(rep, what)
    check_eq(rep["trace"]["complete"], False, f"{what}: trace.complete")
    return rep


def test_not_traces():
    rng = random.Random(7)
    with tmpdir() as d:
        one_line_error(os.path.join(d, "missing.hst"), "missing file",
                       want="missing.hst")
        one_line_error(d, "a directory")
        # an empty file is called empty, not a bad magic (issue 11)
        line = one_line_error(write_file(d, "empty", b""), "empty file",
                              want="is empty")
        check("magic" not in line, f"empty file: {line!r} speaks of magic")
        r = run([HEAPSLOPE, "dump", os.path.join(d, "empty")])
        err = r.err.decode(errors="replace")
        check(r.rc == 1 and "is empty" in err and "magic" not in err,
              f"dump of an empty file: exit {r.rc}, stderr {err!r}")
        one_line_error(write_file(d, "text", b"heapslope trace? no.\n" * 50),
                       "text file", want="not a heapslope trace")
        for i in range(5):
            n = rng.choice((1, 7, 100, 4096, 70000))
            one_line_error(write_file(d, f"random{i}", rng.randbytes(n)),
                           f"{n} random bytes")
        one_line_error(write_file(d, "magic", b"\x89HSLOPE\n"), "magic alone",
                       want="truncated trace header")


def test_damaged_traces():
    with tmpdir() as d:
        t = record_trace([prog("av_leaks"), "all"], d)
        data = open(t, "rb").read()
        blen = struct.unpack("<I", data[12:16])[0]
        one_line_error(write_file(d, "pre12", data[:12]), "12 bytes of preamble",
                       want="truncated trace header")
        one_line_error(write_file(d, "hdrcut", data[:16 + blen // 2]),
                       "header cut in the middle", want="truncated trace header")
        check(struct.unpack_from("<H", data, 8)[0] == 2, "traces are version 2")
        v3 = bytearray(data)
        v3[8:10] = struct.pack("<H", 3)
        one_line_error(write_file(d, "v3", v3), "format version 3", want="version 3")
        v0 = bytearray(data)
        v0[8:10] = struct.pack("<H", 0)
        one_line_error(write_file(d, "v0", v0), "format version 0", want="version 0")
        v = bytearray(data)
        v[8:10] = struct.pack("<H", 0xffff)
        one_line_error(write_file(d, "v65535", v), "format version 65535",
                       want="version 65535")
        hl = bytearray(data)
        hl[12:16] = struct.pack("<I", 0xffffffff)
        one_line_error(write_file(d, "hlen", hl), "header length 4 GiB")
        hb = bytearray(data)
        hb[16:16 + blen] = b"\xff" * blen
        one_line_error(write_file(d, "hbody", hb), "header of 0xff bytes",
                       want="corrupt trace header")
        (c0, cs0), = trace_chunks(data)[:1]
        flip = bytearray(data)
        flip[c0 + 12 + cs0 // 2] ^= 0x55
        one_line_error(write_file(d, "flip", flip), "a byte flipped inside a frame",
                       want="corrupt")
        fm = bytearray(data)
        fm[c0:c0 + 4] = b"HSFX"
        one_line_error(write_file(d, "framemagic", fm), "bad frame magic",
                       want="corrupt")
        us = bytearray(data)
        us[c0 + 8:c0 + 12] = struct.pack("<I", 0xffffffff)
        one_line_error(write_file(d, "usize", us), "frame of 4 GiB decompressed")
        # garbage after a good trace: it is not a frame
        one_line_error(write_file(d, "tail", data + b"garbage after the end\n"),
                       "garbage after the last frame", want="corrupt")
        # a valid header and no frame: an empty, incomplete trace
        rep = incomplete(write_file(d, "noframes", data[:16 + blen]),
                         "header without chunks", "no end record")
        check_eq(rep["trace"]["events"], 0, "header without chunks: events")
        check_eq(rep["trace"]["writing"], False, "header without chunks "
                 "(its process has ended): trace.writing")
        # random damage: anything but a crash; failures in one line,
        # successes say the trace is incomplete or carry a valid report
        rng = random.Random(11)
        for i in range(12):
            b = bytearray(data)
            for _ in range(rng.choice((1, 4, 32))):
                pos = rng.randrange(16 + blen, len(b))
                b[pos] = rng.randrange(256)
            if rng.random() < 0.5:
                b = b[:rng.randrange(16 + blen, len(b))]
            p = write_file(d, f"damaged{i}", b)
            r = analyze_run(p, "--json", "-")
            err = r.err.decode(errors="replace").splitlines()
            check(r.rc in (0, 1), f"damaged trace {i}: exit {r.rc}:\n" + r.describe())
            check(len(err) <= 1, f"damaged trace {i}: {len(err)} lines on stderr")
            if r.rc == 0:
                rep = json.loads(r.out)
                validate_report(rep, f"damaged trace {i}")
                check(rep["trace"]["complete"] is False or not err,
                      f"damaged trace {i}: complete, yet stderr says {err}")
            else:
                check(err and err[0].startswith(PREFIX),
                      f"damaged trace {i}: stderr {err!r}")


def test_cut_traces():
    """A trace cut short, as by a killed recorder, at several points."""
    with tmpdir() as d:
        t = record_trace([trainsim(), "--batches", "30"], d)
        data = open(t, "rb").read()
        full = analyze_run(t, "--json", "-")
        check_eq(full.rc, 0, "full trace: exit status")
        full = json.loads(full.out)
        ch = trace_chunks(data)
        check(len(ch) >= 3, f"the simulator's trace has {len(ch)} frames; "
              "the test needs at least 3 (2 of events and the end)")
        off, cs = ch[1]
        at_boundary = incomplete(write_file(d, "boundary", data[:off]),
                                 "cut between chunks", "no end record")
        mid = incomplete(write_file(d, "mid", data[:off + 12 + cs // 2]),
                         "cut inside a chunk", "cut inside a chunk")
        in_header = incomplete(write_file(d, "inhdr", data[:off + 6]),
                               "cut inside a chunk header", "cut inside a chunk")
        first = incomplete(write_file(d, "first", data[:ch[0][0] + 100]),
                           "cut inside the first chunk", "cut inside a chunk")
        check_eq(first["trace"]["events"], 0, "cut inside the first chunk: events")
        n = at_boundary["trace"]["events"]
        check(0 < n < full["trace"]["events"],
              f"events up to the cut {n}, full trace {full['trace']['events']}")
        for rep, what in ((mid, "inside a frame"), (in_header, "inside a frame header")):
            check_eq(rep["trace"]["events"], n, f"cut {what}: events (the "
                     "frames before the cut, as cut between chunks)")
            check_eq(rep["batches"]["count"], at_boundary["batches"]["count"],
                     f"cut {what}: batches.count")
            check_eq(rep["totals"], at_boundary["totals"], f"cut {what}: totals")
            if "truncated" in rep["trace"]:
                check_eq(rep["trace"]["truncated"], True, f"cut {what}: trace.truncated")
        b = at_boundary["batches"]["count"]
        check(0 < b < 30, f"cut between chunks: {b} batches")
        # the leak is found in a cut trace too
        check_eq([f["function"] for f in at_boundary["stacks"][0]["frames"]][0],
                 "leak_activation_history", "cut trace: top stack")


def test_live_writer():
    """A trace whose process still runs is "still being written", not
    "killed?"; once the process is gone, or when its pid now names a
    process started after the recording, it is the remains of a killed
    one."""
    with tmpdir() as d:
        t = os.path.join(d, "live.hst")
        rec = subprocess.Popen([HEAPSLOPE, "record", "-o", t, "--", "sleep",
                                "6"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline and not (
                    os.path.exists(t) and os.path.getsize(t) > 16):
                time.sleep(0.05)
            check(os.path.exists(t), "record wrote no trace within 4 s")
            rep = incomplete(t, "trace of a running process",
                             "still being written")
            check_eq(rep["trace"]["writing"], True, "running: trace.writing")
            r = analyze_run(t)
            check("still being written" in r.out.decode(),
                  "text report of a running process's trace:\n" +
                  r.describe())
            r = run([HEAPSLOPE, "dump", "--stats", t])
            err = r.err.decode(errors="replace")
            check(r.rc == 0 and "still being written" in err and
                  "killed" not in err,
                  f"dump of a trace being written: exit {r.rc}, {err!r}")
            data = open(t, "rb").read()
        finally:
            rec.wait(timeout=30)
        # the same bytes, the process gone: killed
        incomplete(write_file(d, "dead", data), "trace of a dead process",
                   "killed?")
        # a live pid started 10 s after the recording began: a reused
        # pid, not the writer (whatever the machine's uptime)
        before_rt = time.time_ns() - 10 * 10**9
        before_mt = max(1, time.monotonic_ns() - 10 * 10**9)
        child = subprocess.Popen(["sleep", "30"])
        try:
            time.sleep(0.1)
            later = rewrite_header(data, {
                HDR_PID: child.pid, HDR_START_REALTIME: before_rt,
                HDR_START_MONOTONIC: before_mt})
            rep = incomplete(write_file(d, "reused", later),
                             "trace whose pid was reused", "killed?")
            check_eq(rep["trace"]["writing"], False,
                     "reused pid: trace.writing")
        finally:
            child.kill()
            child.wait()
        # our pid, recording begun after we started: alive
        ours = rewrite_header(data, {HDR_PID: os.getpid(),
                                     HDR_START_REALTIME: time.time_ns(),
                                     HDR_START_MONOTONIC:
                                     time.monotonic_ns()})
        incomplete(write_file(d, "ours", ours), "trace of this test's pid",
                   "still being written")


if __name__ == "__main__":
    main([test_not_traces, test_damaged_traces, test_cut_traces,
          test_live_writer])
