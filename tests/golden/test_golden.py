#!/usr/bin/env python3
"""End to end: heapslope analyze and dump print exactly what they printed
when the golden outputs were made (make_golden.py), for the traces in
traces/: the text and JSON reports, the option variants, the comparison
of several traces, dump's records and counts, and traces cut short.

A report that changes on purpose is made again with
    tests/golden/make_golden.py BUILD_DIR --outputs-only
and the change read in the diff.  The system libraries the traces' stacks
pass through (libc, libstdc++, the loader) must be the builds they were
recorded with: the test says which one differs rather than a wrong
report; a library no stack frame is in (liblzma, say, loaded by the
recorder's own libraries) may be another build."""
import bisect
import difflib
import os
import re
import subprocess
import sys

from golden_common import (HERE, OUT, TRACES, Workdir, outputs, run_output,
                           trace_modules)

HEAPSLOPE = os.environ["HEAPSLOPE"]


def build_id(path):
    """The GNU build-id of an ELF file, as hex, or None."""
    try:
        data = open(path, "rb").read()
    except OSError:
        return None
    at = data.find(b"GNU\0")
    while at >= 12:
        namesz = int.from_bytes(data[at - 12:at - 8], "little")
        descsz = int.from_bytes(data[at - 8:at - 4], "little")
        ntype = int.from_bytes(data[at - 4:at], "little")
        if namesz == 4 and ntype == 3 and 8 <= descsz <= 64:
            return data[at + 4:at + 4 + descsz].hex()
        at = data.find(b"GNU\0", at + 1)
    return None


MODULE_SEGS = re.compile(r' module base=(\S+) path="([^"]*)" '
                         r'build_id=([0-9a-f]*)((?: seg=\S+)*)')
STACK_IP = re.compile(r' stack id=\d+ parent=\d+ ip=(0x[0-9a-f]+)')


def stack_modules(trace):
    """(path, build-id) of the modules some stack frame of trace is in."""
    out = subprocess.run([HEAPSLOPE, "dump", trace], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    ranges = []
    for m in MODULE_SEGS.finditer(out):
        base = int(m.group(1), 16)
        for seg in m.group(4).split():
            off, _, size = seg[4:].split(":")[0].partition("+")
            lo = base + int(off, 16)
            ranges.append((lo, lo + int(size, 16), m.group(2), m.group(3)))
    ranges.sort()
    starts = [r[0] for r in ranges]
    used = set()
    for m in STACK_IP.finditer(out):
        ip = int(m.group(1), 16)
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and ip < ranges[i][1]:
            used.add((ranges[i][2], ranges[i][3]))
    return used


def check_system_modules():
    bad = []
    for t in sorted(os.listdir(TRACES)):
        used = stack_modules(os.path.join(TRACES, t))
        for path, bid in trace_modules(HEAPSLOPE, os.path.join(TRACES, t)):
            if not path.startswith(("/usr/", "/lib")) or not bid:
                continue
            if (path, bid) not in used:
                continue
            have = build_id(path)
            if have != bid:
                bad.append(f"{path}: recorded build {bid}, here "
                           f"{have or 'missing'} ({t})")
    return sorted(set(bad))


def main():
    bad = check_system_modules()
    if bad:
        print("FAIL: system libraries differ from those the golden traces "
              "were recorded with (make the traces again):\n  " +
              "\n  ".join(bad), file=sys.stderr)
        return 1
    failed = 0
    cases = outputs()
    with Workdir() as work:
        got_all = [run_output(HEAPSLOPE, argv, work) for _, argv in cases]
    for (name, argv), got in zip(cases, got_all):
        want = open(os.path.join(OUT, name), "rb").read()
        if got == want:
            continue
        failed += 1
        diff = difflib.unified_diff(
            want.decode(errors="replace").splitlines(),
            got.decode(errors="replace").splitlines(),
            f"golden/{name}", "now", lineterm="", n=1)
        lines = list(diff)
        print(f"FAIL {name}: heapslope {' '.join(argv)} prints otherwise "
              f"({len(lines)} diff lines):\n" + "\n".join(lines[:60]),
              file=sys.stderr)
    missing = set(os.listdir(OUT)) - {n for n, _ in cases}
    for name in sorted(missing):
        failed += 1
        print(f"FAIL {name}: a golden output no case makes", file=sys.stderr)
    print(f"{len(cases) - failed}/{len(cases)} golden outputs identical")
    return 1 if failed else 0


if __name__ == "__main__":
    os.chdir(HERE)
    sys.exit(main())
