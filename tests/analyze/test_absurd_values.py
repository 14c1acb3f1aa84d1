"""Traces whose framing is valid but whose values are absurd (issue 9, item
8): traces recorded from the victims are decoded into records, some
fields get absurd values (0, 1, 2^31, 2^32, 2^63, 2^64-1, sizes near the
end of the address space, pointers near 2^64, huge negative deltas,
unknown ids, huge counts, records repeated thousands of times) and the
chunks are encoded again with the project's encoder (tests/fuzz/mutate.c,
through trace_mutate).  `heapslope analyze` and `heapslope dump --stats`
run on each under a memory limit (2 GiB of address space; under ASan its
RSS limit) and a time limit: each either succeeds or exits 1 with exactly
one line on stderr, never a crash, a sanitizer report or a timeout.

The regression cases: a realloc claiming 3.4e15 bytes in a thread arena
(the heap map used to allocate windows across the whole range: 10 GB in
8 s), a block at a pointer near 2^64 (pointer overflow in the heap map),
blocks that are merely large (1 TiB, 16 TiB: replayed, and kept whole),
and absurd times, stack ids and page sizes."""
import json
import os
import re
import resource
import shutil
import tempfile

from analyze_common import (HEAPSLOPE, TestFailure, check, check_eq, fail,
                            main, prog, record_trace, run, sanitizer_report,
                            tmpdir, trainsim, validate_report)

MUTATE = os.environ.get("HEAPSLOPE_TRACE_MUTATE", "")
SANITIZED = os.environ.get("HEAPSLOPE_SANITIZE") == "1"
MEM_LIMIT = 2 << 30
TIME_LIMIT = 60 if SANITIZED else 20
SEEDS = 75  # per base trace: 300 mutated traces
WINDOW = 1 << 26
MMAP_MIN = 128 * 1024


def limits():
    """preexec: no core files; 2 GiB of address space (not under ASan,
    whose shadow memory alone reserves terabytes)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def env():
    e = dict(os.environ)
    if SANITIZED:
        # a huge malloc fails (and is reported in one line) instead of
        # aborting; past 2 GiB of RSS ASan reports, which fails the test
        opts = e.get("ASAN_OPTIONS", "")
        e["ASAN_OPTIONS"] = ":".join(
            o for o in (opts, "allocator_may_return_null=1",
                        f"hard_rss_limit_mb={MEM_LIMIT >> 20}",
                        f"max_allocation_size_mb={MEM_LIMIT >> 20}") if o)
    return e


def limited(argv):
    return run(argv, timeout=TIME_LIMIT, env=env(), preexec=limits)


def mutate(src, dst, *rules, seed=None):
    argv = [MUTATE] + (["--seed", str(seed)] if seed is not None else [])
    r = run(argv + [src, dst] + list(rules), timeout=60)
    if r.rc != 0:
        fail(f"trace_mutate failed:\n" + r.describe())
    return dst


def outcome(r, what, prefix):
    """Success (at most the one 'incomplete' line on stderr), or exit 1
    with exactly one line; never a crash or a sanitizer report.  Returns
    the stderr lines."""
    err = r.err.decode(errors="replace")
    lines = err.splitlines()
    check(0 <= r.rc < 128, f"{what}: killed by a signal:\n" + r.describe())
    check(not sanitizer_report(err),
          f"{what}: a sanitizer or crash report:\n" + r.describe())
    check(r.rc in (0, 1), f"{what}: exit status {r.rc}:\n" + r.describe())
    if r.rc == 1:
        check(len(lines) == 1 and lines[0].startswith(prefix),
              f"{what}: failed without exactly one line '{prefix}...' on "
              f"stderr:\n" + r.describe())
    else:
        check(len(lines) <= 1 and all(l.startswith(prefix) for l in lines),
              f"{what}: succeeded, but stderr says:\n" + r.describe())
    return lines


def analyze(trace, what, *opts):
    """analyze --json -: (exit status, report or None, stderr lines)."""
    r = limited([HEAPSLOPE, "analyze", "--json", "-", *opts, trace])
    lines = outcome(r, f"{what}: analyze", "heapslope analyze: ")
    rep = None
    if r.rc == 0:
        try:
            rep = json.loads(r.out)
        except ValueError as e:
            fail(f"{what}: analyze printed no valid JSON ({e}):\n" +
                 r.describe())
        validate_report(rep, what)
    return r.rc, rep, lines


def dump_stats(trace, what):
    r = limited([HEAPSLOPE, "dump", "--stats", trace])
    outcome(r, f"{what}: dump --stats", "heapslope dump: ")
    return r.rc


def base_traces(d):
    """Small traces of the victims: stacks and leaks, batch marks with RSS
    samples, thread arenas, the training-loop simulator."""
    return {
        "leaks": record_trace([prog("av_leaks"), "all"], d, "leaks.hst"),
        "growth": record_trace([prog("av_growth"), "leak", "12"], d,
                               "growth.hst"),
        "xthread": record_trace([prog("av_xthread"), "3000"], d,
                                "xthread.hst"),
        "trainsim": record_trace([trainsim(), "--batches", "8", "--ops",
                                  "400"], d, "trainsim.hst"),
    }


class Records:
    """The records of a trace, as `heapslope dump` prints them: index i is
    the i-th record, the one trace_mutate's rule 'i:...' changes."""

    def __init__(self, trace):
        r = run([HEAPSLOPE, "dump", trace], timeout=60)
        check_eq(r.rc, 0, f"dump {trace}")
        text = r.out.decode(errors="replace").splitlines()
        self.heap_start = int(re.search(r"heap_start (0x[0-9a-f]+)",
                                        "\n".join(text)).group(1), 16)
        self.lines = [l for l in text if not l.startswith("#")]

    def find(self, pred):
        for i, l in enumerate(self.lines):
            kv = dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", l))
            name = l.split(" ")[2]
            if pred(name, kv):
                return i
        fail("no record of the kind the test needs")

    def in_arena(self, name, kv, want):
        """A record `want` whose new block is in a 64 MiB window that has
        held a small block (a thread arena's), not in the brk heap."""
        if name not in ("malloc", "realloc", "calloc"):
            return False
        p, size = int(kv["ptr"], 16), int(kv["size"])
        if not hasattr(self, "_arenas"):
            self._arenas = set()
        if name == want and p >> 26 in self._arenas:
            return True
        if size < MMAP_MIN and not (self.heap_start <= p <
                                    self.heap_start + (64 << 30)):
            self._arenas.add(p >> 26)
        return False


def test_random_mutations():
    """Hundreds of traces, each with a few absurd values (or a record
    repeated thousands of times) drawn from a seed."""
    outcomes = {0: 0, 1: 0}
    with tmpdir() as d:
        for name, base in base_traces(d).items():
            for seed in range(SEEDS):
                what = f"{name} mutated with seed {seed} (trace_mutate " \
                       f"--seed {seed})"
                t = mutate(base, os.path.join(d, "m.hst"), seed=seed)
                try:
                    rc, _, _ = analyze(t, what)
                    outcomes[rc] += 1
                    dump_stats(t, what)
                except TestFailure as e:
                    # the victims' traces differ from run to run: keep it
                    kept = os.path.join(tempfile.gettempdir(),
                                        f"absurd-{name}-{seed}.hst")
                    shutil.copy(t, kept)
                    fail(f"{e}\n(the trace: {kept})")
    # both outcomes occur: the values reach the analyzer's checks, and
    # not every mutation is fatal
    check(outcomes[0] > 30 and outcomes[1] > 30,
          f"analyze succeeded on {outcomes[0]} and failed on {outcomes[1]} "
          "mutated traces: the mutations do not reach what they test")


def test_unchanged():
    """Re-encoding alone keeps every record: the mutator's baseline."""
    with tmpdir() as d:
        base = record_trace([prog("av_leaks"), "all"], d)
        same = mutate(base, os.path.join(d, "same.hst"))
        a = run([HEAPSLOPE, "dump", base], timeout=60)
        b = run([HEAPSLOPE, "dump", same], timeout=60)
        check(a.rc == 0 and a.out == b.out,
              "trace_mutate without rules changed the records")


def test_huge_realloc():
    """The issue's trace: a realloc in a thread arena claiming 3.4e15
    bytes.  The heap map allocated 64 MiB windows across the range; now
    the block is kept whole and the trace is analyzed in bounded memory."""
    with tmpdir() as d:
        base = record_trace([prog("av_xthread"), "3000"], d)
        recs = Records(base)
        i = recs.find(lambda n, kv: recs.in_arena(n, kv, "realloc"))
        t = mutate(base, os.path.join(d, "huge.hst"),
                   f"{i}:size=3400000000000000")
        rc, rep, err = analyze(t, "realloc of 3.4e15 bytes")
        check_eq(rc, 0, f"realloc of 3.4e15 bytes: exit status ({err})")
        check(rep["totals"]["peak_live_bytes"] >= 3400000000000000,
              f"the 3.4e15-byte block is not counted: {rep['totals']}")
        check_eq(dump_stats(t, "realloc of 3.4e15 bytes"), 0,
                 "dump --stats of the 3.4e15-byte realloc")


def test_large_blocks():
    """Merely large blocks (1 TiB, 16 TiB: below 2^47) are real, and
    replayed: kept whole, their pages count in the footprint at the marks
    while they live, without memory per page across them."""
    with tmpdir() as d:
        base = record_trace([prog("av_growth"), "leak", "12"], d)
        recs = Records(base)
        # a history block (64 KiB, kept to the end) of the first batch
        mark = recs.find(lambda n, kv: n == "mark")
        i = recs.find(lambda n, kv: n == "malloc" and kv["size"] == "65536")
        check(i < mark, "the first 64 KiB block comes after the first mark")
        for size in (1 << 40, 16 << 40):
            t = mutate(base, os.path.join(d, "large.hst"), f"{i}:size={size}")
            rc, rep, err = analyze(t, f"a block of {size} bytes")
            check_eq(rc, 0, f"a block of {size} bytes: exit status ({err})")
            fp = [b["footprint_bytes"] for b in rep["batches"]["series"]]
            check(fp and min(fp) >= size,
                  f"a live block of {size} bytes, footprints {fp}")
        # in a thread arena's window, where glibc never maps it
        base = record_trace([prog("av_xthread"), "3000"], d, "x.hst")
        recs = Records(base)
        i = recs.find(lambda n, kv: recs.in_arena(n, kv, "malloc"))
        t = mutate(base, os.path.join(d, "arena.hst"), f"{i}:size={16 << 40}")
        rc, rep, err = analyze(t, "16 TiB in a thread arena")
        check_eq(rc, 0, f"16 TiB in a thread arena: exit status ({err})")


def corrupt(trace, what, want):
    rc, _, err = analyze(trace, what)
    check_eq(rc, 1, f"{what}: exit status")
    check(want in err[0], f"{what}: {want!r} not in {err[0]!r}")
    check_eq(dump_stats(trace, what), 0, f"{what}: dump --stats")


def test_corrupt_values():
    """Values no process can have: one line naming the corruption."""
    with tmpdir() as d:
        base = record_trace([prog("av_growth"), "leak", "12"], d)
        recs = Records(base)
        i = recs.find(lambda n, kv: n == "malloc")
        path = os.path.join(d, "c.hst")
        # the pointer-overflow address of the heap map (UBSan: heapmap.c
        # touch()), and blocks past 2^57 or wrapping past 2^64
        for rule in (f"{i}:ptr=0xfffffffffffff000",
                     f"{i}:ptr=0x200000000000000",
                     f"{i}:size=0xffffffffffff0000",
                     f"{i}:size=0x1fffffffffff000"):
            corrupt(mutate(base, path, rule), rule, "user address space")
        m = recs.find(lambda n, kv: n == "mark")
        corrupt(mutate(base, path, f"{m}:time=0xffffffffffff0000"),
                "a mark 584 years in", "corrupt trace: a time")
        s = recs.find(lambda n, kv: n == "stack")
        corrupt(mutate(base, path, f"{s}:id=0x70000"), "stack id 0x70000",
                "stack id")
        # a page size of 1 byte is unknown, not 2^26 counts per window
        rc, rep, err = analyze(mutate(base, path, "header:page_size=1"),
                               "page size 1")
        check_eq(rc, 0, f"page size 1: exit status ({err})")


def test_too_many_windows():
    """time:1ns over a trace of 0.05 s would be 5e7 windows: refused
    before a million are made (10 M were made first, 2 GB of batches)."""
    with tmpdir() as d:
        base = record_trace([prog("av_growth"), "leak", "12"], d)
        rc, _, err = analyze(base, "time:1ns", "--batches", "time:1ns")
        check_eq(rc, 1, "time:1ns: exit status")
        check("more than 1000000 time windows" in err[0],
              f"time:1ns: {err[0]!r}")


def test_many_batches():
    """A mark repeated 40,000 times: the JSON report streams its series
    (in one cJSON tree each batch took 3 KB)."""
    with tmpdir() as d:
        base = record_trace([prog("av_growth"), "leak", "12"], d)
        m = Records(base).find(lambda n, kv: n == "mark")
        t = mutate(base, os.path.join(d, "marks.hst"), f"{m}:repeat=40000")
        r = limited([HEAPSLOPE, "analyze", "--json", "-", t])
        outcome(r, "40,000 marks", "heapslope analyze: ")
        rep = json.loads(r.out)
        validate_report(rep, "40,000 marks")
        check(rep["batches"]["count"] >= 40000,
              f"40,000 marks: {rep['batches']['count']} batches")


if __name__ == "__main__":
    main([test_unchanged, test_huge_realloc, test_large_blocks,
          test_corrupt_values, test_too_many_windows, test_many_batches,
          test_random_mutations])
