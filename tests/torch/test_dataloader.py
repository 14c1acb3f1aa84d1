"""A PyTorch DataLoader with two worker processes (tests/torch/
dataloader.py): the workers build each batch in shared memory and the
loop maps it.  With --keep the loop keeps every input batch; the batches
are shared-memory mappings, so the malloc heap hardly moves while RSS
grows a batch a step.  The report must say so: verdict `mapped`, the top
mapping stack growing by the batch's bytes a step, of kind shm, and the
mapped term of the decomposition explaining the RSS slope.  Without --keep
the mappings come and go: nothing grows.

Environment (tests/torch/meson.build): as test_torch.py's, and
  HEAPSLOPE_DATALOADER   tests/torch/dataloader.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

import analyze_common  # noqa: E402
from analyze_common import (analyze, check, check_eq, main, near, record,
                            tmpdir, validate_report)

SCRIPT = os.environ.get("HEAPSLOPE_DATALOADER", "")
STEPS = 60
KIB = 64
TIMEOUT = 300


def record_run(d, keep):
    python = analyze_common.torch_python(SCRIPT, "HEAPSLOPE_DATALOADER")
    name = "keep" if keep else "nokeep"
    cmd = [python, SCRIPT, "--steps", str(STEPS), "--batch-kib", str(KIB)]
    r = record(cmd + (["--keep"] if keep else []), d,
               output=name + ".hst", timeout=TIMEOUT)
    # the loop's process: the workers are traces of their own
    main_trace = os.path.join(d, name + ".hst")
    check(main_trace in r.traces, f"{name}: no trace {main_trace}: "
          f"{r.traces}")
    check(len(r.traces) >= 3, f"{name}: the two workers' traces are "
          f"missing: {r.traces}")
    rep = analyze(main_trace, timeout=TIMEOUT)
    validate_report(rep, f"dataloader ({name}) report")
    check_eq(rep["batches"]["source"], "marker", f"{name}: batches.source")
    check_eq(rep["batches"]["count"], STEPS, f"{name}: batches.count")
    return rep


def test_keep():
    batch = KIB * 1024
    with tmpdir() as d:
        rep = record_run(d, keep=True)
        base = record_run(d, keep=False)
    g = rep["growth"]
    m = rep["mappings"]
    check(m is not None, "no mappings in the report")
    print(f"   keep: verdict {rep['verdict']}, RSS "
          f"{g['rss_bytes_per_batch']:.0f} B/batch, live "
          f"{g['live_bytes_per_batch']:.0f}, mapped "
          f"{g['mapped_bytes_per_batch']:.0f}; without --keep: verdict "
          f"{base['verdict']}, mapped "
          f"{base['growth']['mapped_bytes_per_batch']:.0f}")
    check_eq(rep["verdict"], "mapped", "verdict with --keep")
    near(g["mapped_bytes_per_batch"], batch, 0.05,
         "growth.mapped_bytes_per_batch vs the batch's bytes")
    near(m["by_kind"]["shm"]["bytes_per_batch"], batch, 0.05,
         "mappings.by_kind.shm.bytes_per_batch")
    top = m["stacks"][0]
    check_eq(top["kind"], "shm", "the top mapping stack's kind")
    check((top["path"] or "").startswith("/dev/shm/torch_"),
          f"the top mapping stack's file: {top['path']!r}")
    near(top["bytes_per_batch"], batch, 0.05,
         "mappings.stacks[0].bytes_per_batch")
    # RSS grows by the touched batch; the mapped term explains it
    near(g["rss_bytes_per_batch"], batch, 0.25, "growth.rss_bytes_per_batch")
    terms = {t["term"]: t for t in rep["decomposition"]["terms"]}
    check(terms["mapped"]["share"] >= 0.75,
          f"the mapped term's share of the RSS slope: {terms}")
    check(abs(g["live_bytes_per_batch"]) < 0.1 * batch,
          f"the live heap grows {g['live_bytes_per_batch']:.0f} B/batch")

    bg = base["growth"]
    check(base["verdict"] != "mapped", f"without --keep: verdict "
          f"{base['verdict']}")
    check(abs(bg["mapped_bytes_per_batch"]) < 0.05 * batch,
          f"without --keep the mappings grow "
          f"{bg['mapped_bytes_per_batch']:.0f} B/batch")


if __name__ == "__main__":
    main([test_keep])
