#!/usr/bin/env python3
"""4. The descriptors a recorded program sees are its own: at start, after
an exec and in a forked child the list is the native one, and a program
that puts its own pipe where the recorder's report channel was gets only
its own data through it; a program that puts a file of its own on every
descriptor finds it untouched (nothing of the recorder's, libunwind's
probe pipe included, reads or writes there).

The one allowance: a recorder inside the process must hold its trace
open (and /proc/self/statm for RSS samples, and libunwind a pipe to probe
memory), so those, close-on-exec and numbered 700 and up, out of the
program's way (heapslope-record(1)), are taken out of the recorded list.
Nothing else may appear."""
import os
import re

from hostile import (HANG, Case, cases, check, differ, fail, hprog,
                     is_trace_name, split_stderr)

LINE = re.compile(r"^(.*): fd (\d+) (.*?)( cloexec)?$")


def own_descriptors(out, what):
    """The listing without the recorder's trace and statm descriptors."""
    kept = []
    for line in out.decode(errors="replace").splitlines():
        m = LINE.match(line)
        if not m:
            fail(f"{what}: lsfds printed {line!r}")
        fd, target, cloexec = int(m.group(2)), m.group(3), m.group(4)
        recorders = (is_trace_name(os.path.basename(target)) or
                     re.fullmatch(r"/proc/\d+/statm", target) or
                     target == "pipe")
        if recorders and cloexec and fd >= 700:
            continue
        kept.append(line)
    return kept


def listing_case(output):
    cmd = [hprog("lsfds"), "exec", "fork"]
    with Case(f"lsfds, record -o {output}" if output else
              "lsfds, default trace name") as c:
        c.native(cmd)
        c.record(cmd, output=output, timeout=HANG)
        n, r = c.n, c.r
        diffs = [d for d in (
            differ("exit status", r.rc, n.rc),
            differ("descriptors", own_descriptors(r.out, c.what),
                   n.out.decode().splitlines()),
            differ("stderr", split_stderr(r.err)[0], n.err)) if d]
        if diffs:
            fail(f"{c.what}: the program's descriptors differ from the "
                 "native ones:\n" + "\n".join(diffs) +
                 "\nrecorded listing:\n" + r.out.decode(errors="replace"))
        c.check_quiet()
        c.stats()


def test_list_output():
    listing_case("trace.hst")


def test_list_default_name():
    listing_case(None)


def test_own_pipe_on_5_6_7():
    with Case("pipefds") as c:
        c.both([hprog("pipefds")], timeout=HANG)
        check(b"read 46 bytes" in c.n.out, f"pipefds natively: {c.n.out!r}")
        c.check_quiet()
        c.stats()


def dup2_all(opts):
    with Case(f"dupall {' '.join(opts) or '(fast unwinder)'}") as c:
        c.both([hprog("dupall"), "40000", "mine"], opts=opts, timeout=HANG)
        check(c.n.rc == 0 and b"offset 0, 37 bytes" in c.n.out,
              f"dupall natively: {c.n.rc} {c.n.out!r}")
        # the trace's descriptor was taken: recording stops, honestly
        c.stats(allow_unverified=True)


def test_dup2_all_fast():
    dup2_all(())


def test_dup2_all_libunwind():
    # libunwind probes memory through a pipe it writes into: with the
    # program's file on those numbers it must not run
    dup2_all(("--unwind", "libunwind"))


if __name__ == "__main__":
    cases({"fd-list": [test_list_output, test_list_default_name],
           "fd-own-pipe": [test_own_pipe_on_5_6_7],
           "fd-dup2-all": [test_dup2_all_fast, test_dup2_all_libunwind]})
