#!/usr/bin/env python3
"""5. Children made without fork()'s atfork handlers (_Fork, the raw
clone system call, clone() with SIGCHLD) that make 1,000,000 malloc/free
pairs each, well past what the recorder buffers without a writer thread
(measured at c1daabe: 400,000 pairs finish, 600,000 hang): no hang, the
program's output is native, the parent's trace complete and verified.
A child is either recorded properly (a complete trace holding exactly
its blocks) or not at all."""
import os

from hostile import HANG, Case, cases, check, check_eq, hprog, sized_counts

N = 1000000


def raw_case(mode):
    with Case(f"rawfork {mode}") as c:
        # record may say that the child is not recorded
        c.both([hprog("rawfork"), str(N), mode], timeout=HANG)
        stats = c.stats()
        parent = os.path.join(c.dir("rec"), "trace.hst")
        check(parent in stats, f"{c.what}: no trace.hst among {list(stats)}")
        check_eq(sized_counts(parent, [777])[777], [0, 0],
                 f"{c.what}: the parent's trace: 777-byte blocks")
        children = [t for t in stats if t != parent]
        check(len(children) <= 1, f"{c.what}: traces {list(stats)}")
        for t in children:
            check_eq(sized_counts(t, [777])[777], [N, N],
                     f"{c.what}: the child's trace {t}: allocations and "
                     "frees of 777 bytes")


def test_fork_underscore():
    raw_case("_Fork")


def test_sys_clone():
    raw_case("sysclone")


def test_clone():
    raw_case("clone")


if __name__ == "__main__":
    cases({"raw-_Fork": [test_fork_underscore],
           "raw-sysclone": [test_sys_clone],
           "raw-clone": [test_clone]})
