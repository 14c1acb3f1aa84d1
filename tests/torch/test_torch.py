"""A real PyTorch training loop (data/torch_train.py), recorded with and
without --keep, which keeps 160 KiB of each step's output.  The sequences
grow by GROW tokens a step (a length curriculum), so every step's
activations are a little bigger than the last's: glibc keeps the freed
ones, and RSS grows many times faster than the live heap.  The report must
agree with what glibc's mallinfo2() saw in the same run (live and
retained), find the kept tensors' allocation in c10, and give the verdict
the slopes call for.

Environment (set by tests/torch/meson.build), besides analyze_common's:
  HEAPSLOPE_TORCH_SCRIPT  data/torch_train.py
  HEAPSLOPE_TORCH_PYTHON  the Python that has torch (Debian: python3-torch
                          in /usr/bin/python3); without torch the test fails
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

import analyze_common  # noqa: E402
from analyze_common import (analyze, check, check_eq, functions, main, near,
                            record, slope, tmpdir, validate_report)

SCRIPT = os.environ.get("HEAPSLOPE_TORCH_SCRIPT", "")
STEPS = 40
GROW = 2
TIMEOUT = 300  # one recording takes ~30 s on a 2-core machine


def torch_python():
    return analyze_common.torch_python(SCRIPT, "HEAPSLOPE_TORCH_SCRIPT")


def script_line(text):
    """The number of the line of the script holding text (once)."""
    with open(SCRIPT) as f:
        lines = [i + 1 for i, line in enumerate(f) if text in line]
    check(len(lines) == 1, f"{SCRIPT}: {text!r} on lines {lines}")
    return lines[0]


def record_run(d, python, keep):
    """Records the script; returns its report and its own --stats."""
    name = "keep" if keep else "nokeep"
    stats = os.path.join(d, name + ".json")
    cmd = [python, SCRIPT, "--steps", str(STEPS), "--grow-seq", str(GROW),
           "--stats", stats]
    t = record(cmd + (["--keep"] if keep else []), d, output=name + ".hst",
               timeout=TIMEOUT).trace()
    rep = analyze(t, timeout=TIMEOUT)
    validate_report(rep, f"torch_train ({name}) report")
    check_eq(rep["trace"]["complete"], True, f"{name}: trace.complete")
    # C++ new and delete, Python's allocator and c10's posix_memalign all
    # pair up: every free is of a block the trace saw allocated
    check_eq(rep["totals"]["unmatched_frees"], 0, f"{name}: unmatched_frees")
    b = rep["batches"]
    check_eq(b["source"], "marker", f"{name}: batches.source")
    check_eq(b["count"], STEPS, f"{name}: batches.count")
    with open(stats) as f:
        st = json.load(f)
    check_eq(len(st["series"]), STEPS, f"{name}: steps in --stats")
    return rep, st


def test_keep():
    python = torch_python()
    with tmpdir() as d:
        rep, st = record_run(d, python, keep=True)
        base, _ = record_run(d, python, keep=False)
    kept = st["kept_tensor_bytes"]
    check(kept > 0, f"kept_tensor_bytes {kept}")
    g = rep["growth"]
    live = g["live_bytes_per_batch"]
    warmup = rep["batches"]["warmup"]

    # (a) the live heap grows as glibc's bytes in use did, batch for batch
    in_use = slope([s["in_use"] for s in st["series"]], warmup)
    near(live, in_use, 0.15,
         f"growth.live_bytes_per_batch vs mallinfo2 in_use slope "
         f"(batches {warmup}..{STEPS - 1})")
    # (b) and by one kept tensor per batch more than without --keep
    base_live = base["growth"]["live_bytes_per_batch"]
    check(abs(base_live) < 0.05 * kept,
          f"without --keep the live heap grows {base_live:.0f} B/batch")
    near(live, base_live + kept, 0.15,
         "growth.live_bytes_per_batch vs no-keep slope + kept tensor")

    # (c) RSS is sampled at the marks, so it has a slope
    rss, rss_r2 = g["rss_bytes_per_batch"], g["rss_r2"]
    check(rss is not None, "growth.rss_bytes_per_batch is null")

    # (d) the verdict follows the two slopes: RSS growing over 4x faster
    # than the live heap is the allocator's doing; otherwise the live
    # growth explains RSS, and the history is freed at exit: retention
    if rss_r2 >= 0.5 and rss >= 4 * live:
        check(rep["verdict"] in ("mixed", "fragmentation"),
              f"verdict {rep['verdict']!r} with RSS {rss:.0f} B/batch "
              f">= 4 x live {live:.0f} B/batch")
    else:
        check(rep["verdict"] in ("retention", "mixed"),
              f"verdict {rep['verdict']!r} with live {live:.0f} B/batch, "
              f"RSS {rss:.0f} B/batch (R2 {rss_r2:.2f})")

    # what glibc keeps, from the trace alone, against its own free bytes
    f = rep["fragmentation"]
    free = slope([s["free"] for s in st["series"]], warmup)
    retained = f["retained_bytes_per_batch"]
    print(f"live {live:.0f} B/batch (mallinfo2 in_use {in_use:.0f}, "
          f"without --keep {base_live:.0f}, kept tensor {kept}), RSS "
          f"{rss:.0f} B/batch (R2 {rss_r2:.2f}), retained {retained:.0f} "
          f"(holes {f['holes_bytes_per_batch']:.0f}, top "
          f"{f['top_bytes_per_batch']:.0f}; mallinfo2 free {free:.0f}), "
          f"verdict {rep['verdict']}")
    near(retained, free, 0.25,
         "fragmentation.retained_bytes_per_batch vs mallinfo2 free slope")
    dec = f["decomposition"]
    check(dec is not None, "no decomposition of the RSS slope")
    check(dec["live_bytes_per_batch"] + dec["retained_bytes_per_batch"]
          >= 0.75 * dec["rss_bytes_per_batch"],
          f"live + retained should explain most of the RSS slope: {dec}")

    # (e) the top stack is the kept tensors': c10's CPU allocator (the
    # caller of posix_memalign, the innermost frame), reached from ATen
    top = rep["stacks"][0]
    fns = [f or "" for f in functions(top)]
    check("alloc_cpu" in fns[0] and
          os.path.basename(top["frames"][0]["module"]).startswith("libc10"),
          f"stacks[0] innermost frame {top['frames'][0]}: not c10's "
          f"alloc_cpu; functions {fns[:6]}")
    check(any("empty" in f and "cpu" in f for f in fns[:8]),
          f"stacks[0] does not come from ATen's empty*_cpu: {fns[:8]}")
    near(top["bytes_per_batch"], kept, 0.01, "stacks[0].bytes_per_batch")
    # the whole history, but for the first step's copy, which may come
    # from a stack of its own (first-call paths in ATen)
    end = top["live_bytes_at_end"]
    check((STEPS - 1) * kept <= end <= STEPS * kept,
          f"stacks[0].live_bytes_at_end {end}: not {STEPS - 1} or {STEPS} "
          f"kept tensors of {kept} B")
    check_eq(top["leaked_bytes"], 0, "stacks[0].leaked_bytes (freed at exit)")

    # (f) with Python frames merged in: the line of the script that keeps
    # the output (with --grow-seq, the copy it keeps), called from
    # <module>, outside the C++ frames of the copy
    py = [f for f in top["frames"] if f["kind"] == "python"]
    where = [(f["function"], os.path.basename(f["file"]), f["line"])
             for f in py]
    want = [("main", "torch_train.py", script_line(".clone()")),
            ("<module>", "torch_train.py", script_line("    main()"))]
    check_eq(where, want, "stacks[0] Python frames")
    first = top["frames"].index(py[0])
    native = [f["function"] or "" for f in top["frames"][:first]]
    check(all(f["kind"] == "native" for f in top["frames"][:first]) and
          any("clone" in f for f in native),
          f"stacks[0]: the C++ frames of clone() inside the Python line: "
          f"{native}")
    for s in base["stacks"]:
        if "alloc_cpu" in (functions(s)[0] or ""):
            check(s["bytes_per_batch"] < 0.05 * kept,
                  f"without --keep, tensors grow {s['bytes_per_batch']} "
                  f"B/batch: {functions(s)[:4]}")


if __name__ == "__main__":
    main([test_keep])
