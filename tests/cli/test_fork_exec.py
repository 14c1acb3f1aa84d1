#!/usr/bin/env python3
"""6. fork and exec.  Followed (the default), a forked child and an exec'd
image each get their own trace with exactly their own counts; with
--no-follow there is only the first process's trace."""
import os
import re

from common import (HEAPSLOPE, baseline, check, check_complete, check_counts,
                    check_eq, dump_events, dump_lines, dump_stats, main, prog,
                    record, run, tmpdir)

P, C = 37, 53  # blocks of the parent and of the child


def header_options(path):
    """(pid, ppid, options) from the dump's header lines."""
    r = run([HEAPSLOPE, "dump", path])
    check_eq(r.rc, 0, f"dump {path}: exit status")
    m = re.search(r"^# pid (\d+) ppid (\d+) .* options 0x([0-9a-f]+)$",
                  r.out.decode(), re.M)
    check(m, f"no '# pid .. options' header line in the dump of {path}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3), 16)


def hst_files(d):
    return sorted(f for f in os.listdir(d) if ".hst" in f)


def with_baseline(want):
    b = baseline()
    return {k: v + b[k] for k, v in want.items()}


def fork_case(child_exit):
    args = [prog("forker"), str(P), str(C)] + ([child_exit] if child_exit ==
                                                "_exit" else [])
    with tmpdir() as d:
        r = record(args, d)
        check_eq(len(r.traces), 2, f"forker {child_exit}: traces reported "
                 f"({r.traces})")
        check_eq(hst_files(d), sorted(os.path.basename(t) for t in r.traces),
                 f"forker {child_exit}: trace files in the directory")
        parent, child = r.traces
        check_eq(parent, os.path.join(d, "trace.hst"),
                 "forker: the first trace is the -o file")
        sp = dump_stats(parent)
        check_complete(sp, "forker parent")
        check_counts(sp, with_baseline({
            "allocations": P, "frees": P, "reallocs": 0,
            "failed_allocations": 0,
            "allocated_bytes": sum(100 + i for i in range(P))}),
            "forker parent")
        check_eq(sp.get("end_reason"), "exit", "forker parent: end_reason")
        check_eq(sp.get("exit_status"), 0, "forker parent: exit_status")

        sc = dump_stats(child)
        check_complete(sc, f"forker child ({child_exit})")
        # the child's trace starts at the fork: only its own calls
        check_counts(sc, {"allocations": C, "frees": C, "reallocs": 0,
                          "failed_allocations": 0,
                          "allocated_bytes": sum(200 + i for i in range(C))},
                     f"forker child ({child_exit})")
        check_eq(sc.get("end_reason"), child_exit, "forker child: end_reason")
        parent_pid, _, _ = header_options(parent)
        cpid, cppid, copts = header_options(child)
        check_eq(cppid, parent_pid, "forker child: header ppid is the parent")
        check(child.endswith(f".{cpid}"),
              f"forker child: trace name {child} does not end with its pid")
        check(copts & 2, f"forker child: header options {copts:#x} lack the "
              "forked bit (2)")
        for t in r.traces:
            mode = os.stat(t).st_mode & 0o777
            check_eq(oct(mode), oct(0o600), f"mode of {t}")
        # none of the child's allocations (sizes 200..) in the parent's trace
        sizes = set()
        for line in dump_lines(parent):
            m = re.search(r" size=(\d+)", line)
            if m and line.split(" ")[2] == "malloc":
                sizes.add(int(m.group(1)))
        check(not sizes & set(range(200, 200 + C)),
              "forker: the child's allocations are in the parent's trace")


def test_fork_follow():
    fork_case("exit")


def test_fork_follow_child_exit_():
    fork_case("_exit")


def test_fork_no_follow():
    with tmpdir() as d:
        r = record([prog("forker"), str(P), str(C)], d, opts=["--no-follow"])
        check_eq(len(r.traces), 1, f"forker --no-follow: traces reported "
                 f"({r.traces})")
        check_eq(hst_files(d), ["trace.hst"],
                 "forker --no-follow: trace files in the directory")
        s = dump_stats(r.traces[0])
        check_complete(s, "forker --no-follow parent")
        check_counts(s, with_baseline({"allocations": P, "frees": P}),
                     "forker --no-follow parent")


def test_exec_follow():
    k, rounds = 23, 3
    with tmpdir() as d:
        r = record([prog("execer"), str(k), prog("counts"), "mix",
                    str(rounds)], d)
        check_eq(len(r.traces), 2, f"execer: traces reported ({r.traces})")
        check_eq(hst_files(d), sorted(os.path.basename(t) for t in r.traces),
                 "execer: trace files in the directory")
        first, second = r.traces
        s1 = dump_stats(first)
        check_complete(s1, "execer (before exec)")
        check_eq(s1.get("end_reason"), "exec", "execer: end_reason")
        check_counts(s1, with_baseline({
            "allocations": k, "frees": 0,
            "allocated_bytes": sum(300 + i for i in range(k))}),
            "execer (before exec)")
        exec_lines = [ln for ln in dump_lines(first) if " exec path=" in ln]
        check(len(exec_lines) == 1 and prog("counts") in exec_lines[0],
              f"execer: exec record {exec_lines}")
        s2 = dump_stats(second)
        check_complete(s2, "exec'd image")
        check_eq(s2.get("end_reason"), "exit", "exec'd image: end_reason")
        check_counts(s2, with_baseline({
            "allocations": 9 * rounds, "frees": 9 * rounds,
            "reallocs": 2 * rounds, "failed_allocations": 0}),
            "exec'd image (counts mix)")
        p1, _, _ = header_options(first)
        p2, _, _ = header_options(second)
        check_eq(p2, p1, "exec'd image: pid (exec keeps the pid)")


def test_exec_header_flag():
    """trace_format.h: HS_OPT_EXECED (4), 'this image was exec'd by a
    recorded process', belongs in the exec'd image's header options."""
    with tmpdir() as d:
        r = record([prog("execer"), "1", prog("empty")], d)
        check_eq(len(r.traces), 2, "execer: traces reported")
        _, _, o1 = header_options(r.traces[0])
        _, _, o2 = header_options(r.traces[1])
        check(not o1 & 4, f"first image: options {o1:#x} has the exec'd bit")
        check(o2 & 4, f"exec'd image: header options {o2:#x} lack "
              "HS_OPT_EXECED (4)")


def test_exec_no_follow():
    with tmpdir() as d:
        r = record([prog("execer"), "5", prog("counts"), "mix", "2"], d,
                   opts=["--no-follow"])
        check_eq(len(r.traces), 1, f"execer --no-follow: traces ({r.traces})")
        check_eq(hst_files(d), ["trace.hst"],
                 "execer --no-follow: trace files in the directory")
        s = dump_stats(r.traces[0])
        check_complete(s, "execer --no-follow")
        check_eq(s.get("end_reason"), "exec", "execer --no-follow: end_reason")
        check_counts(s, with_baseline({"allocations": 5}),
                     "execer --no-follow")


def test_posix_spawn():
    """posix_spawn (glibc: a CLONE_VFORK child that execs at once): the
    spawned program has its own trace, the parent's is untouched."""
    with tmpdir() as d:
        r = record([prog("spawner"), prog("counts"), "mix", "2"], d)
        check_eq(len(r.traces), 2, f"spawner: traces ({r.traces})")
        s1, s2 = (dump_stats(t) for t in r.traces)
        check_complete(s1, "spawner")
        check_complete(s2, "spawned counts mix 2")
        check_counts(s1, with_baseline({"allocations": 1, "frees": 1}),
                     "spawner")
        check_counts(s2, with_baseline({"allocations": 18, "frees": 18,
                                        "reallocs": 4}), "spawned counts")
        r = record([prog("spawner"), prog("counts"), "mix", "2"], d,
                   output="nofollow.hst", opts=["--no-follow"])
        check_eq(len(r.traces), 1, f"spawner --no-follow: traces ({r.traces})")


def test_exec_while_threads_allocate():
    """exec from main while 3 threads allocate: the first trace still ends
    with one end record whose counts are what precedes it."""
    with tmpdir() as d:
        for i in range(5):
            r = record([prog("execthreads"), "3", "300", prog("counts"), "mix",
                        "2"], d, output=f"x{i}.hst", timeout=60)
            check_eq(len(r.traces), 2, f"execthreads: traces ({r.traces})")
            s1 = dump_stats(r.traces[0])
            check_eq(s1.get("end_reason"), "exec", "execthreads: end_reason")
            check_complete(s1, f"execthreads run {i}: first image")
            s2 = dump_stats(r.traces[1])
            check_complete(s2, "execthreads: exec'd image")
            check_counts(s2, with_baseline({"allocations": 18, "frees": 18,
                                            "reallocs": 4}), "exec'd image")


def test_exec_fails():
    """exec of a missing program returns to the caller, which goes on being
    recorded: one trace, closed at exit, exact counts."""
    with tmpdir() as d:
        r = record([prog("execer"), "5", os.path.join(d, "missing")], d,
                   ok=False)
        check_eq(r.rc, 127, "execer of a missing program: exit status")
        check_eq(len(r.traces), 1, f"failed exec: traces ({r.traces})")
        s = dump_stats(r.traces[0])
        check_complete(s, "failed exec")
        check_eq(s.get("end_reason"), "exit", "failed exec: end_reason")
        check_counts(s, with_baseline({"allocations": 5, "frees": 0}),
                     "failed exec")
        check_eq(s.get("exit_status"), 127, "failed exec: exit_status")


def test_output_template():
    """-o with %p and %e: every process expands it."""
    with tmpdir() as d:
        r = record([prog("forker"), "2", "3"], d, output="t.%e.%p.hst")
        check_eq(len(r.traces), 2, f"-o template: traces ({r.traces})")
        check_eq(hst_files(d), sorted(os.path.basename(t) for t in r.traces),
                 "-o template: trace files in the directory")
        for t in r.traces:
            pid, _, _ = header_options(t)
            check_eq(os.path.basename(t), f"t.forker.{pid}.hst",
                     "-o template: trace name")
        counts = sorted(dump_stats(t)["allocations"] for t in r.traces)
        check_eq(counts, sorted([2 + baseline()["allocations"], 3]),
                 "-o template: allocations of parent and child")


def test_default_name():
    with tmpdir() as d:
        r = record([prog("counts"), "mix", "1"], d, output=None)
        t = r.trace()
        pid, _, _ = header_options(t)
        check_eq(os.path.basename(t), f"heapslope.counts.{pid}.hst",
                 "default trace name")
        check_eq(os.path.dirname(t), d, "default trace directory")
        s = dump_stats(t)
        check_complete(s, "default name")
        check_eq(s.get("exit_status"), 0, "default name: exit_status")


def test_fork_samples_own_rss():
    """A forked child samples its own RSS, not its parent's: forkrss's
    child holds 64 MiB while the parent, small, waits."""
    with tmpdir() as d:
        r = record([prog("forkrss")], d)
        check_eq(len(r.traces), 2, f"forkrss: traces reported ({r.traces})")
        peak = {}
        for t in r.traces:
            rss = [ev.int("rss") for ev in dump_events(t)
                   if ev.rec == "sample"]
            check(len(rss) >= 2, f"{t}: {len(rss)} samples")
            peak[t] = max(rss) if rss else 0
        parent, child = r.traces
        check(peak[child] >= 64 << 20,
              f"forkrss child: largest RSS sample {peak[child]} below the "
              "64 MiB it holds")
        check(peak[parent] < 32 << 20,
              f"forkrss parent: largest RSS sample {peak[parent]}: the "
              "child's?")


if __name__ == "__main__":
    main([test_fork_follow, test_fork_follow_child_exit_, test_fork_no_follow,
          test_exec_follow, test_exec_no_follow, test_posix_spawn,
          test_exec_fails, test_exec_while_threads_allocate,
          test_output_template, test_default_name, test_exec_header_flag,
          test_fork_samples_own_rss])
