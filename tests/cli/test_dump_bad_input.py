#!/usr/bin/env python3
"""10. Bad input to dump: a missing file, files that are not traces, traces
cut inside the header or inside a frame, a future format version.  Each
gives exactly one line on stderr and a nonzero exit, and never a crash, in
both modes (records and --stats)."""
import os
import random
import struct

from common import (CHUNK_HEADER, HEAPSLOPE, PREAMBLE, check, check_eq,
                    main, prog, record, run, sanitizer_report, tmpdir,
                    trace_chunks, write_file)



def bad(path, what, expect=None):
    for mode in ([], ["--stats"]):
        r = run([HEAPSLOPE, "dump", *mode, path], timeout=60)
        label = f"dump {' '.join(mode)} {what}".replace("  ", " ")
        err = r.err.decode(errors="replace")
        check(0 < r.rc < 128, f"{label}: exit status {r.rc} (want an error, "
              "not a crash)\n" + r.describe())
        check(not sanitizer_report(err) and
              not sanitizer_report(r.out.decode(errors="replace")),
              f"{label}: crash report\n" + r.describe())
        lines = err.splitlines()
        check_eq(len(lines), 1, f"{label}: lines on stderr ({lines})")
        check(lines[0].startswith("heapslope dump: "),
              f"{label}: message {lines[0]!r}")
        if expect:
            check(expect in lines[0], f"{label}: message {lines[0]!r} does "
                  f"not say {expect!r}")


def real_trace(d):
    r = record([prog("counts"), "mix", "20000"], d, output="real.hst")
    with open(r.trace(), "rb") as f:
        return f.read()


def test_missing_file():
    with tmpdir() as d:
        bad(os.path.join(d, "missing.hst"), "missing file", "cannot open")


def test_directory():
    with tmpdir() as d:
        bad(d, "a directory")


def test_not_a_trace():
    rnd = random.Random(1234)
    with tmpdir() as d:
        bad(write_file(d, "random.bin", bytes(rnd.getrandbits(8)
                                         for _ in range(100000))),
            "random bytes", "not a heapslope trace")
        bad(write_file(d, "text.txt", b"just some text\nnot a trace at all\n" * 50),
            "a text file", "not a heapslope trace")
        bad(write_file(d, "empty", b""), "an empty file")
        bad(write_file(d, "short", b"\x89HS"), "3 bytes of magic")


def test_truncated_header():
    with tmpdir() as d:
        data = real_trace(d)
        blen = struct.unpack_from("<I", data, 12)[0]
        check(blen > 10, f"header body of {blen} bytes")
        for cut in (8, 12, PREAMBLE - 1, PREAMBLE, PREAMBLE + blen // 2,
                    PREAMBLE + blen - 1):
            bad(write_file(d, f"cut{cut}.hst", data[:cut]),
                f"trace cut at byte {cut} (header)", "truncated")


def test_truncated_frame():
    with tmpdir() as d:
        data = real_trace(d)
        fr = trace_chunks(data)
        check(len(fr) >= 2, f"want a trace of several frames, got {len(fr)}")
        off, cs = fr[0]
        length = CHUNK_HEADER + cs
        for cut in (off + 5, off + CHUNK_HEADER + length // 2,
                    off + length - 1):
            bad(write_file(d, f"frame{cut}.hst", data[:cut]),
                f"trace cut at byte {cut} (inside the first frame)",
                "truncated")
        off, cs = fr[-1]
        length = CHUNK_HEADER + cs
        bad(write_file(d, "lastframe.hst", data[:off + length // 2]),
            "trace cut inside its last frame", "truncated")


def test_corrupt_frame():
    with tmpdir() as d:
        data = bytearray(real_trace(d))
        off, cs = trace_chunks(bytes(data))[0]
        length = CHUNK_HEADER + cs
        flipped = bytearray(data)
        flipped[off + CHUNK_HEADER + length // 2] ^= 0x55
        bad(write_file(d, "flipped.hst", bytes(flipped)),
            "a flipped byte in a frame", "corrupt")
        huge = bytearray(data)
        struct.pack_into("<I", huge, off + 8, 0xffffffff)
        bad(write_file(d, "huge.hst", bytes(huge)), "a frame claiming 4 GiB",
            "corrupt")
        hdr = bytearray(data)
        struct.pack_into("<I", hdr, 12, 0xfffffff0)
        bad(write_file(d, "hugeheader.hst", bytes(hdr)), "a header claiming 4 GiB",
            "corrupt")


def test_future_version():
    with tmpdir() as d:
        data = bytearray(real_trace(d))
        check_eq(struct.unpack_from("<H", data, 8)[0], 2, "format version")
        data[8:10] = struct.pack("<H", 99)
        bad(write_file(d, "v99.hst", bytes(data)), "format version 99",
            "version 99")


if __name__ == "__main__":
    main([test_missing_file, test_directory, test_not_a_trace,
          test_truncated_header, test_truncated_frame, test_corrupt_frame,
          test_future_version])
