#!/usr/bin/env python3
"""record --mallinfo: when marks read glibc's mallinfo2.

heapmarks keeps HOLES free chunks in glibc's bins, which mallinfo2 walks
one by one, and sleeps between marks.  With 5,000 holes a reading took
about 1 ms of CPU on the development machine (2 vCPUs), and 400 marks
1 ms apart gave 8-11 with mallinfo2 under auto, 9 with four busy loops
beside them; the bounds below leave a wide margin for faster and slower
machines.  (Over 2,000 holes the spacing was near a batch's length, and
a loaded CI run once read it at 111 of 200 marks.)  With 1,000 holes and 100 ms batches the
budget never bites: outside the recorder a reading took 0.005-0.04 ms of
CPU, and a batch buys 2 ms (30 ms batches, 0.6 ms, were once not enough:
8 of 10 marks in a CI run loaded with the sanitizer build's tests).  The
analyzer fits glibc's figures over the marks that have them and says how
many those are."""
import json
import os
import re
import subprocess

from common import (HEAPSLOPE, check, check_eq, dump_events, fail, main,
                    prog, record, run, tmpdir)


def marks_with_mallinfo(path):
    """(marks, marks whose sample has mallinfo2, first mark has it)."""
    marks = with_mi = 0
    first = None
    after_mark = False
    for ev in dump_events(path):
        if ev.rec == "mark":
            marks += 1
            after_mark = True
        elif ev.rec == "sample" and after_mark:
            after_mark = False
            has = "arena" in ev.kv
            with_mi += has
            if first is None:
                first = has
    return marks, with_mi, first


def recorded(d, mode, batches, holes, sleep_us):
    opts = [] if mode is None else [f"--mallinfo={mode}"]
    out = f"{mode}-{batches}-{holes}.hst"
    record([prog("heapmarks"), str(batches), str(holes), str(sleep_us)], d,
           opts=opts, output=out)
    return os.path.join(d, out)


def test_always_and_never():
    with tmpdir() as d:
        t = recorded(d, "always", 100, 2000, 0)
        check_eq(marks_with_mallinfo(t)[:2], (100, 100), "always: marks, "
                 "marks with mallinfo2")
        t = recorded(d, "never", 100, 2000, 0)
        check_eq(marks_with_mallinfo(t)[:2], (100, 0), "never: marks, "
                 "marks with mallinfo2")


def test_auto_long_batches():
    with tmpdir() as d:
        t = recorded(d, None, 10, 1000, 100000)
        check_eq(marks_with_mallinfo(t)[:2], (10, 10),
                 "auto, 100 ms batches: marks, marks with mallinfo2")


def test_auto_budget():
    with tmpdir() as d:
        # read about every 50 ms: a load that stretches the 1 ms batches
        # (the sanitizer build's tests beside them) stays far from every
        # mark
        t = recorded(d, "auto", 400, 5000, 1000)
        marks, with_mi, first = marks_with_mallinfo(t)
        check_eq(marks, 400, "marks")
        check(first, "the first mark has no mallinfo2")
        check(3 <= with_mi <= 200,
              f"auto, 1 ms batches over 5,000 holes: {with_mi} of 400 marks "
              "read mallinfo2; expected a few, well under every mark")
        # the analyzer: nulls where the recorder did not read it, the fit
        # over the others, and the count in the text report
        r = run([HEAPSLOPE, "analyze", "--json", "-", t])
        check_eq(r.rc, 0, "analyze exit status")
        rep = json.loads(r.out)
        series = rep["batches"]["series"]
        have = [b["heap_free_bytes"] is not None for b in series]
        check_eq(sum(have), with_mi, "batches with heap_free_bytes")
        for b in series:
            if b["heap_free_bytes"] is None:
                check(b["heap_in_use_bytes"] is None,
                      f"batch {b['index']}: in-use bytes without free bytes")
            else:
                check(b["heap_free_bytes"] >= 5000 * 1000,
                      f"batch {b['index']}: heap_free_bytes "
                      f"{b['heap_free_bytes']} below the 5,000 holes")
        r = run([HEAPSLOPE, "analyze", t])
        check_eq(r.rc, 0, "analyze exit status")
        m = re.search(r"mallinfo2 at (\d+) of (\d+) marks", r.out.decode())
        if not m:
            fail("the text report does not say at how many marks mallinfo2 "
                 "was read:\n" + r.out.decode())
        warm = rep["batches"]["warmup"]
        check_eq(int(m.group(2)), 400 - warm, "marks after warm-up")
        check_eq(int(m.group(1)), sum(have[warm:]),
                 "marks with mallinfo2 after warm-up")


def test_recorder_memory_resident_from_first_mark():
    """The recorder's buffers and compressor (about 9 MiB) are made
    resident by its writer thread after start-up, not before the program
    runs; a mark that comes first must still count them, or the first
    batches grow by 9 MiB that the program never allocated.  heapmarks
    marks at once and then every millisecond, over a constant heap."""
    with tmpdir() as d:
        for run_ in range(3):
            t = recorded(d, "never", 30, 0, 1000)
            rss = [ev.int("rss") for ev in dump_events(t)
                   if ev.rec == "sample"]
            check(len(rss) >= 30, f"{len(rss)} samples for 30 marks")
            if rss:
                check(max(rss) - rss[0] < 2 << 20,
                      f"run {run_}: RSS went from {rss[0]} at the first "
                      f"mark to {max(rss)}: the recorder's own memory "
                      "counted as growth")
            os.unlink(t)


def test_bad_value():
    with tmpdir() as d:
        r = record([prog("heapmarks"), "1", "1", "0"], d,
                   opts=["--mallinfo=sometimes"], ok=False)
        check(r.rc != 0, "--mallinfo=sometimes was accepted")
        err = r.err.decode()
        check("--mallinfo" in err and "sometimes" in err,
              f"no clear error for --mallinfo=sometimes: {err!r}")
        check(not os.listdir(d), "a trace was written despite the error")


if __name__ == "__main__":
    main([test_always_and_never, test_auto_long_batches, test_auto_budget,
          test_recorder_memory_resident_from_first_mark,
          test_bad_value])
