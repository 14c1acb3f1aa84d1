"""The fragmentation victim (fragment.c) run natively, without the
recorder: glibc's own numbers (mallinfo2, /proc/self/statm) must show RSS
growing at least 10x faster per batch than the live heap, the difference
held as free memory by malloc, and --steady flat.

Environment (set by tests/frag/meson.build):
  HEAPSLOPE_FRAGMENT    the built fragment program
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))
from analyze_common import slope  # noqa: E402

FRAGMENT = os.environ.get("HEAPSLOPE_FRAGMENT", "")

WARMUP = 4          # batches left out of the slopes
PIN_BYTES = 1536    # live bytes kept per batch (fragment.c)
MIN_RATIO = 10      # RSS slope / in_use slope
FLAT_RSS = 4096     # steady: |RSS slope| below a page per batch
FLAT_IN_USE = 64    # steady: |in_use slope|, bytes per batch


class TestFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def run_stats(*opts):
    """fragment OPTS --stats FILE: the parsed stats, checked for shape."""
    with tempfile.TemporaryDirectory(prefix="hs-frag-") as d:
        path = os.path.join(d, "stats.json")
        argv = [FRAGMENT, *opts, "--stats", path]
        t0 = time.monotonic()
        r = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        took = time.monotonic() - t0
        check(r.returncode == 0,
              f"{' '.join(argv)}: exit {r.returncode}\n"
              f"stderr: {r.stderr.decode(errors='replace')}")
        check(os.path.exists(path), f"{' '.join(argv)}: no stats file")
        with open(path) as f:
            try:
                stats = json.load(f)
            except ValueError as e:
                raise TestFailure(f"{' '.join(argv)}: bad JSON: {e}")
    series = stats.get("series", [])
    check(stats.get("batches") == len(series) and len(series) > WARMUP + 4,
          f"{' '.join(opts)}: batches {stats.get('batches')}, "
          f"{len(series)} samples")
    check([s["batch"] for s in series] == list(range(len(series))),
          f"{' '.join(opts)}: batch indices out of order")
    return series, took


def slopes(series):
    after = series[WARMUP:]
    return {k: slope([s[k] for s in after])
            for k in ("rss", "in_use", "free", "arena", "live")}


def show(what, s, took):
    print(f"  {what}: bytes/batch rss {s['rss']:,.0f}, "
          f"in_use {s['in_use']:,.0f}, free {s['free']:,.0f}, "
          f"live {s['live']:,.0f} ({took * 1000:.0f} ms)")


def fragmenting(*opts):
    series, took = run_stats(*opts)
    s = slopes(series)
    what = " ".join(opts) or "default"
    show(what, s, took)
    check(abs(s["live"] - PIN_BYTES) < 1e-6,
          f"{what}: the program's live slope is {s['live']:.1f}, "
          f"expected {PIN_BYTES}")
    # the live heap grows by the pinned blocks only (chunk headers aside)
    check(s["live"] <= s["in_use"] <= 1.05 * s["live"] + 64,
          f"{what}: mallinfo2 in_use grows {s['in_use']:,.0f} B/batch, "
          f"not just the {PIN_BYTES} B the program keeps")
    check(s["rss"] >= MIN_RATIO * s["in_use"],
          f"{what}: RSS slope {s['rss']:,.0f} B/batch is not {MIN_RATIO}x "
          f"the in_use slope {s['in_use']:,.0f} B/batch "
          f"(ratio {s['rss'] / s['in_use']:.1f})")
    # the growth is malloc's free memory, not something else in the process
    check(s["free"] >= 0.8 * (s["rss"] - s["in_use"]),
          f"{what}: mallinfo2 free grows {s['free']:,.0f} B/batch, much "
          f"less than RSS minus in_use "
          f"({s['rss'] - s['in_use']:,.0f} B/batch)")
    # glibc extends the heap by a scratch buffer plus 128 KiB of top pad:
    # a batch that fits in that pad adds nothing to free (it loses the
    # pinned block), the next one adds both batches' holes
    after = series[WARMUP:]
    flat = [b["batch"] for a, b in zip(after, after[2:])
            if b["free"] <= a["free"]]
    check(not flat, f"{what}: mallinfo2 free did not grow over the two "
          f"batches up to batch {', '.join(map(str, flat))}")
    print(f"  {what}: RSS / in_use slope ratio {s['rss'] / s['in_use']:.1f}")


def test_default():
    fragmenting()


def test_long():
    fragmenting("--batches", "200")


def test_steady():
    series, took = run_stats("--steady")
    s = slopes(series)
    show("steady", s, took)
    check(abs(s["rss"]) < FLAT_RSS,
          f"steady: RSS slope {s['rss']:,.0f} B/batch, expected flat")
    check(abs(s["in_use"]) < FLAT_IN_USE,
          f"steady: in_use slope {s['in_use']:,.0f} B/batch, expected flat")
    check(abs(s["free"]) < FLAT_RSS,
          f"steady: free slope {s['free']:,.0f} B/batch, expected flat")
    check(s["live"] == 0,
          f"steady: the program's live slope is {s['live']:.1f}, expected 0")


def main():
    if not FRAGMENT or not os.access(FRAGMENT, os.X_OK):
        print(f"FAIL setup: HEAPSLOPE_FRAGMENT={FRAGMENT!r} is not an "
              "executable (run the tests with `meson test`)", file=sys.stderr)
        sys.exit(1)
    failed = []
    for t in (test_default, test_long, test_steady):
        try:
            t()
        except TestFailure as e:
            failed.append(t.__name__)
            print(f"FAIL {t.__name__}: {e}", file=sys.stderr)
        else:
            print(f"ok   {t.__name__}")
        sys.stdout.flush()
    if failed:
        print("FAILED: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
