"""Shared by the hostile tests (issue 9): run a program natively and under
`heapslope record`, each in a fresh directory of its own, and hold the
recorded run to the native one: same stdout, exit status and files, same
stderr once the lines starting with "heapslope" are taken out; then read
every trace back with `heapslope dump`.

Environment (set by tests/hostile/meson.build), besides tests/cli's:
  HEAPSLOPE_HOSTILE   directory of the built hostile programs
  HEAPSLOPE_LFALLOC   the lock-free, async-signal-safe test allocator
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cli"))

# HEAPSLOPE, run and tmpdir are for the test scripts
from common import (ALLOC_RECS, HEAPSLOPE, LIB, WRITTEN, check,  # noqa: E402,F401
                    is_listing,
                    check_eq, dump_lines, dump_stats, fail, main, record,
                    run, tmpdir, tmpfs)

HOSTILE = os.environ.get("HEAPSLOPE_HOSTILE", "")
LFALLOC = os.environ.get("HEAPSLOPE_LFALLOC", "")
PROGRAMS = os.environ.get("HEAPSLOPE_PROGRAMS", "")

# a recorded run of these programs takes a few seconds at most: one that
# takes this long is hung
HANG = 30


def hprog(name):
    """A program built in tests/hostile."""
    path = os.path.join(HOSTILE, name)
    check(os.access(path, os.X_OK), f"hostile program {path} is not built")
    return path


def victim(name):
    """A victim built in tests/programs."""
    path = os.path.join(PROGRAMS, name)
    check(os.access(path, os.X_OK), f"victim {path} is not built")
    return path


def lfalloc():
    check(os.path.isfile(LFALLOC), f"HEAPSLOPE_LFALLOC={LFALLOC!r} is not "
          "built")
    return LFALLOC


def split_stderr(err):
    """(the program's own stderr, heapslope's lines as str)."""
    own, ours = [], []
    for line in err.splitlines(keepends=True):
        (ours if line.startswith(b"heapslope") else own).append(line)
    return b"".join(own), [ln.decode(errors="replace").rstrip("\n")
                           for ln in ours]


def is_trace_name(name):
    return name.endswith(".hst") or ".hst." in name


def snapshot(d):
    """Every file under d but the traces: relative path -> (mode, bytes);
    FIFOs and devices by their kind only."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, d)
            if is_trace_name(name):
                continue
            st = os.lstat(path)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    out[rel] = (oct(st.st_mode & 0o7777), f.read())
            else:
                out[rel] = (oct(st.st_mode), None)
    return out


class Case:
    """One program run twice, natively and recorded, in directories
    native/ and rec/; '@SIDE@' in an argument becomes the run's side
    directory (native-side/, rec-side/) for what a program writes that
    varies run to run and is checked apart."""

    def __init__(self, what):
        self.what = what
        self.n = self.r = None

    def __enter__(self):
        self._tmp = tmpdir()
        self.root = self._tmp.__enter__()
        for k in ("native", "rec", "native-side", "rec-side"):
            os.mkdir(os.path.join(self.root, k))
        return self

    def __exit__(self, *exc):
        return self._tmp.__exit__(*exc)

    def dir(self, which):
        return os.path.join(self.root, which)

    def side(self, which, name):
        """Content of a file the program wrote in its side directory."""
        path = os.path.join(self.dir(which + "-side"), name)
        check(os.path.isfile(path), f"{self.what}: the {which} run wrote "
              f"no {name}")
        with open(path) as f:
            return f.read()

    def argv(self, cmd, which):
        return [a.replace("@SIDE@", self.dir(which + "-side")) for a in cmd]

    def setup(self, fn):
        """fn(dir) prepares both working directories alike."""
        fn(self.dir("native"))
        fn(self.dir("rec"))

    def native(self, cmd, env=None, timeout=60, stdin=b"", preexec=None):
        self.n = run(self.argv(cmd, "native"), cwd=self.dir("native"),
                     env=env, timeout=timeout, stdin=stdin, preexec=preexec)
        return self.n

    def record(self, cmd, opts=(), output="trace.hst", env=None,
               timeout=120, stdin=b"", preexec=None):
        self.r = record(self.argv(cmd, "rec"), self.dir("rec"), opts=opts,
                        output=output, timeout=timeout, stdin=stdin,
                        env=env, preexec=preexec, ok=False)
        return self.r

    def both(self, cmd, opts=(), output="trace.hst", env=None, timeout=120,
             native_env=None, stdin=b""):
        """Runs cmd natively, then recorded, and checks they agree."""
        self.native(cmd, env=native_env or env, timeout=timeout, stdin=stdin)
        self.record(cmd, opts=opts, output=output, env=env, timeout=timeout,
                    stdin=stdin)
        self.check_same()
        return self.r

    def check_same(self, files=True):
        """Exit status, stdout, stderr (but heapslope's lines) and, with
        files, the files in the working directory are the native ones;
        every difference is reported at once."""
        n, r = self.n, self.r
        own, _ = split_stderr(r.err)
        diffs = [d for d in (
            differ("exit status", r.rc, n.rc),
            differ("stdout", r.out, n.out),
            differ("stderr without heapslope's lines", own, n.err),
            differ("files written", snapshot(self.dir("rec")),
                   snapshot(self.dir("native"))) if files else None) if d]
        if diffs:
            fail(f"{self.what}: recorded run differs from the native one:\n"
                 + "\n".join(diffs) + f"\nrecord {r.argv[2:]} exited "
                 f"{r.rc}; its own lines: {self.heapslope_lines()}")

    def heapslope_lines(self):
        return split_stderr(self.r.err)[1]

    def check_quiet(self):
        """record said nothing but where it wrote traces."""
        other = [ln for ln in self.heapslope_lines()
                 if not is_listing(ln)]
        check(not other, f"{self.what}: heapslope's complaints on stderr: "
              f"{other}")

    def traces(self):
        """The traces record reported and every trace file in rec/."""
        found = set(self.r.traces)
        for root, _, files in os.walk(self.dir("rec")):
            found.update(os.path.join(root, f) for f in files
                         if is_trace_name(f))
        return sorted(found)

    def check_reported(self):
        """Every trace file in rec/ was reported, every reported one
        exists."""
        on_disk = self.traces()
        check_eq(sorted(set(self.r.traces)), on_disk,
                 f"{self.what}: traces reported vs trace files")
        return on_disk

    def stats(self, allow_unverified=False):
        """dump --stats of every trace: each readable and complete, its
        counts verified, or (allow_unverified) honestly not verified with
        the reason on record's stderr.  {path: stats}."""
        out = {}
        check(self.traces(), f"{self.what}: no trace at all\n" +
              self.r.describe())
        for t in self.traces():
            s = dump_stats(t)
            check_eq(s.get("complete"), "yes", f"{self.what}: {t}: complete")
            if allow_unverified:
                verified_or_explained(self, s, f"{self.what}: {t}")
            else:
                check_eq(s.get("counts_verified"), "yes",
                         f"{self.what}: {t}: counts_verified")
            out[t] = s
        return out


def short(v, limit=300):
    t = repr(v)
    if len(t) <= limit:
        return t
    return t[:limit] + (f"... ({len(v)} bytes)" if isinstance(v, bytes)
                        else "...")


def differ(what, got, want):
    """None if equal, else one line saying how."""
    if got == want:
        return None
    note = ""
    if isinstance(got, dict):
        keys = sorted(set(got) | set(want))
        bad = [k for k in keys if got.get(k) != want.get(k)]
        return (f"  {what}: differ in {bad[:10]}: recorded "
                f"{short({k: got.get(k) for k in bad[:3]})}, native "
                f"{short({k: want.get(k) for k in bad[:3]})}")
    if isinstance(got, bytes) and b"HSLOPE" in got:
        note = " (a trace was written into it)"
    return f"  {what}{note}: recorded {short(got)}, native {short(want)}"


def verified_or_explained(case, s, what):
    """True if the trace's counts are verified; else they must say no and
    the recorder must have said why: in the trace (dump --stats'
    unrecorded or stopped, or dump's note), or on record's stderr."""
    v = s.get("counts_verified")
    if v == "yes":
        return True
    check_eq(v, "no", f"{what}: counts_verified")
    said = [ln for ln in case.heapslope_lines() if not is_listing(ln)]
    check(said or s.get("unrecorded", 0) or s.get("stopped") or
          s.get("_stderr", "").strip(),
          f"{what}: counts_verified: no, and the recorder did not say why")
    return False


def sized_counts(path, sizes):
    """{size: [allocations, frees]}: allocations of exactly each size in
    the trace (realloc of a block excluded), and frees (or reallocs) of
    those blocks."""
    want = set(sizes)
    out = {s: [0, 0] for s in sizes}
    live = {}
    for line in dump_lines(path):
        parts = line.split(" ")
        rec = parts[2]
        if rec == "free" or rec == "realloc-free":
            s = live.pop(parts[3][4:], None)
            if s is not None:
                out[s][1] += 1
        elif rec in ALLOC_RECS:
            if parts[3].startswith("old="):
                s = live.pop(parts[3][4:], None)
                if s is not None:
                    out[s][1] += 1
                continue
            size = int(parts[4][5:])
            if size in want:
                out[size][0] += 1
                live[parts[3][4:]] = size
    return out


def check_sized(path, want, what):
    """want: {size: n}: exactly n allocations of that size, all freed."""
    got = sized_counts(path, want)
    for size, n in want.items():
        check_eq(got[size], [n, n], f"{what}: allocations and frees of "
                 f"{size} bytes in {os.path.basename(path)}")


def read_counts(text):
    """'key value' lines as a dict of ints."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        out[k] = int(v)
    return out


def cases(table):
    """main() for a runner: argv[1] names the case (table key) to run,
    no argument runs them all."""
    names = sys.argv[1:] or list(table)
    tests = []
    for n in names:
        if n not in table:
            fail(f"no case {n!r}; cases: {', '.join(table)}")
        tests += table[n]
    main(tests)


def traces_of(stats, name):
    """The traces (of a stats() dict) whose program is named name."""
    return sorted(t for t, s in stats.items()
                  if os.path.basename(s.get("program", "")) == name)


def check_blocks_each(stats, name, size, want, what):
    """The traces of program name hold, between them, these numbers of
    size-byte allocations (a sorted list, one per trace), all freed."""
    got = sorted(tuple(sized_counts(t, [size])[size])
                 for t in traces_of(stats, name))
    check_eq(got, sorted((n, n) for n in want), f"{what}: (allocations, "
             f"frees) of {size} bytes in each trace of {name}")
