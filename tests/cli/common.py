"""Helpers shared by the end-to-end tests: run `heapslope record` on a
victim in a temporary directory, read traces back with `heapslope dump`.

Environment (set by tests/meson.build):
  HEAPSLOPE             the heapslope CLI
  HEAPSLOPE_PROGRAMS    directory of the built victim programs
  HEAPSLOPE_LIB         recorder library; if unset, HEAPSLOPE_LIB_DEFAULT
  HEAPSLOPE_VICTIM_LIB  the small shared library for the dlopen test
"""
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import struct
import tempfile
import time
import traceback

HEAPSLOPE = os.environ.get("HEAPSLOPE", "")
PROGRAMS = os.environ.get("HEAPSLOPE_PROGRAMS", "")
# the sanitizer build sets HEAPSLOPE_LIB to the normal build's recorder
if not os.environ.get("HEAPSLOPE_LIB") and \
        os.environ.get("HEAPSLOPE_LIB_DEFAULT"):
    os.environ["HEAPSLOPE_LIB"] = os.environ["HEAPSLOPE_LIB_DEFAULT"]
LIB = os.environ.get("HEAPSLOPE_LIB", "")

SIZE_MAX = 2**64 - 1
WRITTEN = "heapslope: trace written to "
# the rest of record's list of traces: which one is the main one, how many
# more were not listed
LISTING = (WRITTEN, "heapslope: main trace: ", "heapslope: ... and ")


def is_listing(line):
    """A line of record's list of traces (not a warning or a note)."""
    return line.startswith(LISTING)


def listed_path(line):
    """The trace a 'trace written to' line names: the path ends at the
    first run of two spaces (the columns follow)."""
    rest = line[len(WRITTEN):].rstrip("\n")
    return rest.split("  ", 1)[0]


class TestFailure(Exception):
    pass


def fail(msg):
    raise TestFailure(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def check_eq(got, want, what):
    if got != want:
        fail(f"{what}: got {got!r}, expected {want!r}")


def _setup():
    for name, val in (("HEAPSLOPE", HEAPSLOPE),
                      ("HEAPSLOPE_PROGRAMS", PROGRAMS),
                      ("HEAPSLOPE_LIB", LIB)):
        if not val:
            fail(f"{name} is not set (run the tests with `meson test`)")
    check(os.access(HEAPSLOPE, os.X_OK),
          f"HEAPSLOPE={HEAPSLOPE} is not executable")
    check(os.path.isdir(PROGRAMS),
          f"HEAPSLOPE_PROGRAMS={PROGRAMS} is not a directory")
    check(os.path.isfile(LIB), f"HEAPSLOPE_LIB={LIB} does not exist")


def prog(name):
    path = os.path.join(PROGRAMS, name)
    check(os.access(path, os.X_OK), f"victim {path} is not built")
    return path


def no_core():
    """preexec_fn: crashing victims leave no core files behind."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Run:
    """The result of one command: rc, stdout, stderr (bytes), and for a
    record run, the traces it reported (absolute paths, in order)."""

    def __init__(self, argv, rc, out, err, cwd, elapsed):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.cwd, self.elapsed = cwd, elapsed
        self.traces = []
        self.victim_err = err
        lines = err.decode(errors="replace").splitlines(keepends=True)
        # record's own report lines come last
        cut = len(lines)
        while cut > 0 and lines[cut - 1].startswith("heapslope"):
            cut -= 1
        for line in lines[cut:]:
            if line.startswith(WRITTEN):
                p = listed_path(line)
                self.traces.append(os.path.normpath(os.path.join(cwd, p)))
        self.victim_err = "".join(lines[:cut]).encode()
        self.tail = lines[cut:]

    def describe(self):
        return (f"command {self.argv} exited {self.rc}\n--- stdout (last 2000 "
                f"bytes):\n{self.out[-2000:].decode(errors='replace')}\n"
                f"--- stderr (last 3000 bytes):\n"
                f"{self.err[-3000:].decode(errors='replace')}")

    def trace(self):
        """The only trace of a run with one process."""
        if len(self.traces) != 1:
            fail(f"expected exactly one trace, got {self.traces}\n" +
                 self.describe())
        return self.traces[0]


def run(argv, cwd=None, timeout=120, stdin=b"", env=None, preexec=None):
    """Runs argv in a session of its own: on a timeout the whole process
    group goes (a hung victim, not only record)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, preexec_fn=preexec, start_new_session=True)
    try:
        out, err = p.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.kill()
        out, err = p.communicate()
        fail(f"{argv} did not finish within {timeout} s (deadlock?); "
             f"stderr: {err[-2000:].decode(errors='replace')}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return Run(argv, p.returncode, out, err, cwd or os.getcwd(),
               time.monotonic() - t0)


def record(cmd, cwd, opts=(), output="trace.hst", timeout=120, stdin=b"",
           env=None, preexec=None, ok=True, list_all=True):
    """heapslope record [-o OUTPUT] [--list all] OPTS -- CMD, run in cwd.
    With ok, the run must exit 0 and report at least one trace.  With
    list_all, every trace is listed (the tests read the list), not only
    the first LAUNCH_LIST_DEFAULT."""
    argv = [HEAPSLOPE, "record"]
    if output:
        argv += ["-o", output]
    if list_all:
        argv += ["--list", "all"]
    argv += list(opts) + ["--"] + list(cmd)
    r = run(argv, cwd=cwd, timeout=timeout, stdin=stdin, env=env,
            preexec=preexec)
    if ok:
        if r.rc != 0:
            fail("record failed:\n" + r.describe())
        if not r.traces:
            fail("record reported no trace:\n" + r.describe())
        for t in r.traces:
            check(os.path.isfile(t), f"reported trace {t} does not exist")
    return r


def sanitizer_report(text):
    return any(s in text for s in ("Segmentation", "AddressSanitizer",
                                   "LeakSanitizer", "runtime error:",
                                   "UndefinedBehaviorSanitizer",
                                   "core dumped"))


def dump_stats(path, timeout=120, allow_error=False):
    """dump --stats as a dict (numbers as ints).  The dump must exit 0
    unless allow_error, and never crash."""
    r = run([HEAPSLOPE, "dump", "--stats", path], timeout=timeout)
    err = r.err.decode(errors="replace")
    check(0 <= r.rc < 128 and not sanitizer_report(err),
          f"dump --stats {path} crashed:\n" + r.describe())
    if not allow_error and r.rc != 0:
        fail(f"dump --stats {path} failed:\n" + r.describe())
    s = {"_rc": r.rc, "_stderr": err}
    for line in r.out.decode(errors="replace").splitlines():
        k, sep, v = line.partition(": ")
        if not sep:
            continue
        s[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return s


def check_complete(s, what):
    """A trace closed normally: complete, and the recorder's own counts
    equal what the reader found."""
    check_eq(s.get("complete"), "yes", f"{what}: complete")
    check_eq(s.get("counts_verified"), "yes", f"{what}: counts_verified")


COUNT_KEYS = ("allocations", "frees", "reallocs", "failed_allocations")


def check_counts(s, want, what):
    for k, v in want.items():
        check_eq(s.get(k), v, f"{what}: {k}")


class Event:
    """One dump line: time, tid, rec (the record name), kv (key=value
    fields; 'seg' is a list), words (bare words after the name)."""
    __slots__ = ("time", "tid", "rec", "kv", "words", "line")

    def __init__(self, line):
        self.line = line
        t, tid, rest = line.split(" ", 2)
        self.time = float(t)
        self.tid = int(tid)
        name, _, rest = rest.partition(" ")
        self.words = []
        if name == "failed":
            name, _, rest = rest.partition(" ")
            name = "failed " + name
        self.rec = name
        self.kv = {}
        for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)|(\S+)', rest):
            if m.group(3) is not None:
                self.words.append(m.group(3))
                continue
            k, v = m.group(1), m.group(2)
            if v.startswith('"'):
                v = re.sub(r"\\x([0-9a-f]{2})",
                           lambda x: chr(int(x.group(1), 16)), v[1:-1])
                v = re.sub(r"\\(.)", r"\1", v)
            if k == "seg":
                self.kv.setdefault("seg", []).append(v)
            else:
                self.kv[k] = v

    def int(self, key):
        return int(self.kv[key], 0)

    def __repr__(self):
        return self.line


def dump_lines(path, timeout=300):
    """Streams `heapslope dump PATH`: yields each record line (str, without
    the newline), header lines excluded.  Fails if the dump fails."""
    p = subprocess.Popen([HEAPSLOPE, "dump", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1 << 20)
    deadline = time.monotonic() + timeout
    try:
        for line in p.stdout:
            if line.startswith("#"):
                continue
            yield line.rstrip("\n")
        if time.monotonic() > deadline:
            fail(f"dump {path} took more than {timeout} s")
        err = p.stderr.read()
        rc = p.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if rc != 0:
        fail(f"dump {path} exited {rc}: {err}")


def dump_events(path, timeout=300):
    for line in dump_lines(path, timeout):
        yield Event(line)


class Stacks:
    """The stack tree of a trace: id -> (parent, ip)."""

    def __init__(self):
        self.nodes = {}

    def add(self, ev):
        i = ev.int("id")
        if i in self.nodes:
            fail(f"stack id {i} defined twice: {ev}")
        parent = ev.int("parent")
        if parent and parent not in self.nodes:
            fail(f"stack node {i} names unknown parent {parent}: {ev}")
        self.nodes[i] = (parent, ev.int("ip"))

    def frames(self, sid):
        """ips of stack sid, innermost first."""
        out = []
        while sid:
            if sid not in self.nodes:
                fail(f"stack id {sid} used before it was defined")
            sid, ip = self.nodes[sid]
            out.append(ip)
            if len(out) > 10000:
                fail("stack tree has a cycle")
        return out


def load(path):
    """All events of a (small) trace, and its stack tree."""
    evs = list(dump_events(path))
    st = Stacks()
    for e in evs:
        if e.rec == "stack":
            st.add(e)
    return evs, st


ALLOC_RECS = {"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
              "aligned_alloc", "memalign", "valloc", "pvalloc"}


class Replay:
    """Live-block replay: address -> size, with order errors collected."""

    def __init__(self):
        self.live = {}
        self.errors = []
        self.reuses = 0
        self.seen = set()

    def _err(self, msg):
        if len(self.errors) < 20:
            self.errors.append(msg)
        else:
            self.errors.append(None)

    def alloc(self, ptr, size, line):
        if ptr in self.live:
            self._err(f"allocation of already-live address: {line}")
        if ptr in self.seen:
            self.reuses += 1
        self.seen.add(ptr)
        self.live[ptr] = size

    def free(self, ptr, line):
        if self.live.pop(ptr, None) is None:
            self._err(f"free of unknown address: {line}")

    def realloc(self, old, ptr, size, line):
        if self.live.pop(old, None) is None:
            self._err(f"realloc of unknown address: {line}")
        if ptr in self.live:
            self._err(f"realloc to already-live address: {line}")
        self.live[ptr] = size

    def feed(self, ev):
        r = ev.rec
        if r in ALLOC_RECS and "old" not in ev.kv:
            self.alloc(ev.int("ptr"), ev.int("size"), ev.line)
        elif r in ALLOC_RECS:
            self.realloc(ev.int("old"), ev.int("ptr"), ev.int("size"), ev.line)
        elif r in ("free", "realloc-free"):
            self.free(ev.int("ptr"), ev.line)

    def feed_line(self, line):
        """Fast path for big traces: no Event object."""
        parts = line.split(" ")
        r = parts[2]
        if r == "free" or r == "realloc-free":
            self.free(int(parts[3][4:], 16), line)
        elif r in ALLOC_RECS:
            if parts[3].startswith("old="):
                self.realloc(int(parts[3][4:], 16), int(parts[4][4:], 16),
                             int(parts[5][5:]), line)
            else:
                self.alloc(int(parts[3][4:], 16), int(parts[4][5:]), line)

    def error_text(self):
        n = len(self.errors)
        shown = [e for e in self.errors if e]
        return f"{n} order errors, first ones:\n  " + "\n  ".join(shown)


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="heapslope-test-")


@contextlib.contextmanager
def tmpfs(mnt, size="1m"):
    """A tmpfs of that size mounted on mnt (needs root) while the block
    runs: a disk that fills up."""
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                        "tmpfs", mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if m.returncode != 0:
        fail(f"cannot mount a {size} tmpfs for the full-disk test (needs "
             f"root): {m.stdout.decode().strip()}")
    try:
        yield mnt
    finally:
        u = subprocess.run(["umount", mnt], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if u.returncode != 0:
            subprocess.run(["umount", "-l", mnt])


PREAMBLE = 16      # magic, format version, reserved, header length
CHUNK_HEADER = 12  # "HSFR", compressed size, decompressed size


def trace_chunks(data):
    """(offset, compressed size) of each chunk of a trace's bytes."""
    blen = struct.unpack_from("<I", data, 12)[0]
    off, out = PREAMBLE + blen, []
    while off < len(data):
        check_eq(data[off:off + 4], b"HSFR", f"chunk magic at {off}")
        cs = struct.unpack_from("<I", data, off + 4)[0]
        out.append((off, cs))
        off += CHUNK_HEADER + cs
    return out


def write_file(d, name, data):
    """data written to d/name; returns the path."""
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


_baseline = None


def baseline():
    """dump --stats of the empty victim: libc's own allocations."""
    global _baseline
    if _baseline is None:
        with tmpdir() as d:
            r = record([prog("empty")], d)
            _baseline = dump_stats(r.trace())
            check_complete(_baseline, "empty victim")
    return _baseline



README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "README.md")


def readme_program(d, heading, prelude, must):
    """The one python block of README.md's section whose heading (a
    regex, after '### ') is given, after prelude, as d/snippet.py: its
    path.  The block must hold every string of must."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^### " + heading + r"[^\n]*\n(.*?)^##", text,
                  re.M | re.S)
    check(m, f"README.md: no '### {heading}' section")
    blocks = re.findall(r"^```python\n(.*?)^```", m.group(1), re.M | re.S)
    check_eq(len(blocks), 1, f"README.md: python blocks in '{heading}'")
    code = blocks[0]
    check(all(x in code for x in must),
          f"README.md: the python block of '{heading}' lacks one of "
          f"{must}:\n{code}")
    path = os.path.join(d, "snippet.py")
    with open(path, "w") as f:
        f.write(prelude + code)
    return path


def main(tests):
    """Runs test functions in order; exits 1 if any failed."""
    failed = []
    t0 = time.monotonic()
    try:
        _setup()
    except TestFailure as e:
        print(f"FAIL setup: {e}", file=sys.stderr)
        sys.exit(1)
    for t in tests:
        t1 = time.monotonic()
        try:
            t()
        except TestFailure as e:
            failed.append(t.__name__)
            print(f"FAIL {t.__name__}: {e}", file=sys.stderr)
        except Exception:
            failed.append(t.__name__)
            print(f"FAIL {t.__name__}: unexpected exception", file=sys.stderr)
            traceback.print_exc()
        else:
            print(f"ok   {t.__name__} ({time.monotonic() - t1:.1f} s)")
        sys.stdout.flush()
    print(f"{len(tests) - len(failed)}/{len(tests)} passed in "
          f"{time.monotonic() - t0:.1f} s")
    if failed:
        print("FAILED: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)
