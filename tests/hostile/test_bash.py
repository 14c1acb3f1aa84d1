#!/usr/bin/env python3
"""2. bash, which defines its own unsetenv: whatever the recorder passes
to itself in the environment must not make a child of bash adopt the
program's descriptor 3 as a trace.  Redirections of 3 stay the
program's, --no-follow holds, and with following every trace is whole."""
import os

from hostile import (HANG, Case, cases, check, check_blocks_each, check_eq,
                     hprog)

SWAP = "3>&1 1>&2 2>&3"


def swap_case(script):
    with Case(f"bash -c {script!r}") as c:
        c.both(["bash", "-c", script], timeout=HANG)
        check_eq(c.n.out, b"", f"{c.what}: native stdout")
        check_eq(c.n.err, b"hi\n", f"{c.what}: native stderr")
        c.check_quiet()
        c.stats()


def test_swap_builtin():
    swap_case(f"echo hi {SWAP}")


def test_swap_exec():
    """one simple command: bash execs /bin/echo itself"""
    swap_case(f"/bin/echo hi {SWAP}")


def test_swap_fork():
    swap_case(f"true; /bin/echo hi {SWAP}; true")


def test_fd3_file():
    w = hprog("fd3writer")
    with Case("bash -c 'fd3writer 3>out'") as c:
        c.both(["bash", "-c", f"{w} 5 3>out; cat out; {w} 6 3>>out"],
               timeout=HANG)
        with open(os.path.join(c.dir("native"), "out")) as f:
            check_eq(f.read(), "written to descriptor 3\n" * 2,
                     "fd3writer natively: out")
        c.check_quiet()
        check_blocks_each(c.stats(), "fd3writer", 777, [5, 6], c.what)


def script(d):
    """A bash script of several commands, some of them recorded victims
    with a descriptor 3 of their own."""
    text = f"""set -e
/bin/echo one
{hprog('fd3writer')} 3 3>f3
{hprog('sized')} 4
cat f3 | wc -c
mkdir sub
(cd sub && /bin/echo two > two.txt)
x=$( {hprog('sized')} 2 )
echo "captured: $x"
exec 3>f4
{hprog('fd3writer')} 1
exec 3>&-
cat f4 >&2
"""
    with open(os.path.join(d, "script.sh"), "w") as f:
        f.write(text)


def test_no_follow():
    with Case("bash script.sh --no-follow") as c:
        c.setup(script)
        c.both(["bash", "script.sh"], opts=["--no-follow"], timeout=HANG)
        c.check_quiet()
        traces = c.check_reported()
        check_eq(len(traces), 1, f"{c.what}: traces (only bash's own)")
        (t, s), = c.stats().items()
        check(s.get("program", "").endswith("bash"),
              f"{c.what}: the one trace is of {s.get('program')}, not bash")


def test_follow():
    with Case("bash script.sh") as c:
        c.setup(script)
        c.both(["bash", "script.sh"], timeout=HANG)
        c.check_quiet()
        c.check_reported()
        stats = c.stats()
        check_blocks_each(stats, "fd3writer", 777, [1, 3], c.what)
        check_blocks_each(stats, "sized", 777, [2, 4], c.what)


if __name__ == "__main__":
    cases({"bash-swap": [test_swap_builtin, test_swap_exec, test_swap_fork],
           "bash-fd3": [test_fd3_file],
           "bash-no-follow": [test_no_follow],
           "bash-follow": [test_follow]})
