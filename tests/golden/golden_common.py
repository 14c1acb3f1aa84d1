"""What the golden test runs, shared by make_golden.py and test_golden.py.

Every output is run from a directory of its own that links traces/ and
debug/ from here, with traces/NAME.hst as the path, so that the paths
heapslope prints are the same wherever the checkout is; the analyzer
finds the programs' files under debug/ by build-id."""
import hashlib
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "traces")
DEBUG = os.path.join(HERE, "debug")
OUT = os.path.join(HERE, "out")

# dumped record by record (the others, larger, as --stats only)
FULL_DUMPS = ("edge", "crash", "marks", "forker-child", "dlopener", "maps")
# dumped record by record, kept as a digest (too long to keep whole)
DIGEST_DUMPS = ("trainsim", "xthread", "timed", "leak", "cxxnew")
# analyzed with the options besides the default report
VARIANTS = {
    "trainsim": [["--group-by-site"], ["-n", "3", "--warmup", "0"],
                 ["--batches", "time:50ms"], ["--json", "-", "-n", "2"],
                 ["--group-by-site", "--json", "-", "-n", "2"]],
    "fragment": [["--group-by-site", "-n", "2"]],
    "leaks": [["--group-by-site"]],
    "timed": [["--batches", "time:100ms"], ["--batches", "marker"]],
}
# traces compared side by side
COMPARE = [["leak", "retention", "steady"]]
# trainsim.hst cut in the middle of its first chunk, and right after it
# (before the chunk with the end record)
CUTS = ("mid", "boundary")


def trace(name):
    return os.path.join("traces", name + ".hst")


def names():
    return sorted(f[:-4] for f in os.listdir(TRACES) if f.endswith(".hst"))


def analyze(*args):
    return ["analyze", "--debuginfo-path", "debug"] + list(args)


def outputs():
    """(output file name, heapslope argv) of every golden output."""
    out = []
    for n in names():
        t = trace(n)
        out.append((n + ".txt", analyze(t)))
        out.append((n + ".json", analyze("--json", "-", t)))
        out.append((n + ".stats", ["dump", "--stats", t]))
        if n in FULL_DUMPS:
            out.append((n + ".dump", ["dump", t]))
        if n in DIGEST_DUMPS:
            out.append((n + ".dump.sha256", ["dump", t]))
        for i, v in enumerate(VARIANTS.get(n, [])):
            out.append((f"{n}.v{i}", analyze(*v, t)))
    for c in COMPARE:
        out.append(("compare-" + "-".join(c) + ".txt",
                    analyze(*[trace(n) for n in c])))
    for cut in CUTS:
        t = os.path.join("cut", f"trainsim-{cut}.hst")
        out.append((f"cut-{cut}.txt", analyze(t)))
        out.append((f"cut-{cut}.stats", ["dump", "--stats", t]))
    return out


def make_cuts(work):
    """The cut traces of CUTS, from traces/trainsim.hst, in work/cut/."""
    os.makedirs(os.path.join(work, "cut"))
    data = open(os.path.join(TRACES, "trainsim.hst"), "rb").read()
    first = 16 + int.from_bytes(data[12:16], "little")
    size = int.from_bytes(data[first + 4:first + 8], "little")
    at = {"mid": first + 12 + size // 2, "boundary": first + 12 + size}
    for cut in CUTS:
        with open(os.path.join(work, "cut", f"trainsim-{cut}.hst"),
                  "wb") as f:
            f.write(data[:at[cut]])


class Workdir:
    """The directory the outputs are run from (see above)."""

    def __enter__(self):
        self.t = tempfile.TemporaryDirectory(prefix="heapslope-golden-")
        for d in ("traces", "debug"):
            os.symlink(os.path.join(HERE, d), os.path.join(self.t.name, d))
        make_cuts(self.t.name)
        return self.t.name

    def __exit__(self, *exc):
        self.t.cleanup()


def run_output(hs, argv, work):
    """What heapslope prints: stdout, then stderr and the exit status."""
    r = subprocess.run([hs] + argv, cwd=work, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    if argv[0] == "dump" and len(argv) == 2 and \
            os.path.basename(argv[1])[:-4] in DIGEST_DUMPS:
        r.stdout = (f"{len(r.stdout.splitlines())} lines, sha256 "
                    f"{hashlib.sha256(r.stdout).hexdigest()}\n").encode()
    return (r.stdout + b"--- stderr\n" + r.stderr +
            f"--- exit {r.returncode}\n".encode())


MODULE = re.compile(rb' module base=\S+ path="([^"]*)" build_id=([0-9a-f]*)')


def trace_modules(hs, path):
    """(path, build-id) of each module a trace names, once each."""
    r = subprocess.run([hs, "dump", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    seen = []
    for m in MODULE.finditer(r.stdout):
        k = (m.group(1).decode(), m.group(2).decode())
        if k not in seen:
            seen.append(k)
    return seen
