#!/usr/bin/env python3
"""A PyTorch training loop with regions around forward, backward, the
optimizer and an evaluation (tests/regions/torch_regions.py).  With
--leak-eval the evaluation forgets torch.no_grad() and keeps its outputs:
the region "eval" must be the one that grows, by most of the live heap's
slope, and forward, backward and the optimizer must not.  Without it,
nothing grows in "eval".  Recorded with the system Python, which has
torch (Debian's python3-torch); without torch the test fails."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

import analyze_common  # noqa: E402
from analyze_common import (analyze, check, check_eq, main, record, tmpdir,
                            validate_report)

SCRIPT = os.environ.get("HEAPSLOPE_REGIONS_TORCH", "")
STEPS = 30
TIMEOUT = 300


def torch_python():
    return analyze_common.torch_python(SCRIPT, "HEAPSLOPE_REGIONS_TORCH")


def regions_of(d, *opts):
    name = "leak.hst" if opts else "ok.hst"
    t = record([torch_python(), SCRIPT, "--steps", str(STEPS), *opts], d,
               output=name, timeout=TIMEOUT).trace()
    rep = analyze(t, timeout=TIMEOUT)
    validate_report(rep)
    check_eq(rep["batches"]["count"], STEPS, "batches")
    names = {w["name"]: w for w in rep["regions"]["by_name"]}
    for n in ("step", "forward", "backward", "optimizer", "eval"):
        check(n in names, f"no region {n!r}: {sorted(names)}")
    paths = {" > ".join(w["path"]) for w in rep["regions"]["by_path"]}
    check("step > eval" in paths, f"no path 'step > eval': {paths}")
    return rep, names


def test_eval_grows():
    with tmpdir() as d:
        rep, names = regions_of(d, "--leak-eval")
        live = rep["growth"]["live_bytes_per_batch"]
        ev = names["eval"]["bytes_per_batch"]
        check_eq(rep["regions"]["by_name"][0]["name"], "eval",
                 "the region that grows most")
        check(ev > 32 * 1024 and ev >= 0.9 * live,
              f"eval grows {ev:.0f} B/batch of the live heap's {live:.0f}")
        check(names["eval"]["r2"] > 0.99, f"eval: R² {names['eval']['r2']}")
        for n in ("forward", "backward", "optimizer"):
            g = names[n]["bytes_per_batch"]
            check(abs(g) < 0.02 * ev,
                  f"{n} grows {g:.0f} B/batch (eval {ev:.0f})")
            check(names[n]["allocated_bytes_per_batch"] > 1000,
                  f"{n}: allocates nothing? {names[n]}")
        total = sum(w["bytes_per_batch"] for w in rep["regions"]["by_name"])
        check(abs(total - live) < 1e-6 * max(1.0, abs(live)),
              f"rows add up to {total}, live slope {live}")
        check(names["eval"]["stacks"], "eval: no growing stacks")


def test_no_grad():
    with tmpdir() as d:
        _, names = regions_of(d)
        ev = names["eval"]["bytes_per_batch"]
        check(abs(ev) < 1024, f"eval under no_grad grows {ev:.0f} B/batch")


if __name__ == "__main__":
    main([test_eval_grows, test_no_grad])
