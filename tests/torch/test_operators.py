"""Growth by operator on a real PyTorch training loop: data/torch_train.py
--keep keeps each step's encoder output, allocated by the encoder's last
layer norm.  With --operators torch the operator that allocates it,
native_layer_norm (the factories it calls, empty_memory_format, give way
to it), comes first, growing by the kept bytes a step within 5%; the rows
add up to the live heap's slope.  The same trace grouped by a Python
frame (a regex on file:qualname) names the model's forward.

Environment: as test_torch.py's.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (analyze, analyze_run, check, check_eq,  # noqa
                            main, near, record, tmpdir, validate_report)
from test_torch import SCRIPT, TIMEOUT, torch_python  # noqa: E402

STEPS = 30


def rows_add_up(rep, what):
    rows = rep["groups"]["rows"]
    live = rep["growth"]["live_bytes_per_batch"]
    total = sum(r["bytes_per_batch"] for r in rows)
    check(abs(total - live) <= 1e-6 * abs(live),
          f"{what}: the rows add up to {total}, the live heap grows {live}")
    check(rows[-1]["unmatched"], f"{what}: no unmatched row last")
    return rows


def test_operators_torch():
    python = torch_python()
    with tmpdir() as d:
        stats = os.path.join(d, "stats.json")
        t = record([python, SCRIPT, "--keep", "--steps", str(STEPS),
                    "--stats", stats], d, output="ops.hst",
                   timeout=TIMEOUT).trace()
        with open(stats) as f:
            kept = json.load(f)["kept_tensor_bytes"]
        check_eq(kept, 160 * 1024, "the script's kept bytes a step")

        rep = analyze(t, "--operators", "torch", timeout=TIMEOUT)
        validate_report(rep, "--operators torch")
        g = rep["groups"]
        check_eq(g["preset"], "torch", "groups.preset")
        check_eq(g["pattern"], "at::_ops::*::call, at::_ops::*::redispatch",
                 "groups.pattern")
        rows = rows_add_up(rep, "--operators torch")
        first = rows[0]
        check_eq(first["name"], "native_layer_norm",
                 f"the first operator (rows: "
                 f"{[(r['name'], r['bytes_per_batch']) for r in rows[:5]]})")
        near(first["bytes_per_batch"], kept, 0.05,
             "native_layer_norm's growth against the kept bytes a step")
        check(first["r2"] > 0.99, f"native_layer_norm R² {first['r2']}")
        fns = [f["function"] or "" for f in first["top_stack"]["frames"]]
        check(any(f.startswith("at::_ops::native_layer_norm::call(")
                  for f in fns),
              f"its top stack does not pass the operator's entry: {fns}")
        # operators are names, not mangled blobs or argument lists
        for r in rows[:-1]:
            check(r["name"] and "(" not in r["name"] and
                  "::" not in r["name"] and not r["name"].startswith("_Z"),
                  f"operator row name {r['name']!r}")
        # the factories that allocated for another operator gave way
        check(rows[0]["name"] != "empty_memory_format",
              "empty_memory_format named instead of its caller")

        out = analyze_run(t, "--operators", "torch", "--top", "1",
                          timeout=TIMEOUT).out.decode()
        check("Growth by operator (--operators torch" in out,
              f"no 'Growth by operator' section:\n{out[:3000]}")

        # the top stack names the training step's line and the lines
        # that called it, under the operator's C++ frames
        lines = open(SCRIPT).read().splitlines()

        def line_of(text):
            return next(i + 1 for i, l in enumerate(lines) if text in l)
        want = [("train_step", line_of("hidden, logits = model(tokens)")),
                ("main", line_of("= train_step(")),
                ("<module>", line_of("    main()"))]
        top = rep["stacks"][0]
        py = [(f.get("function"), f.get("line")) for f in top["frames"]
              if f.get("kind") == "python" and
              os.path.basename(f.get("file") or "") == "torch_train.py"]
        check(py[-3:] == want,
              f"the top stack's torch_train.py frames {py}, want them to "
              f"end with {want}")
        first_py = next(i for i, f in enumerate(top["frames"])
                        if f.get("kind") == "python")
        check(first_py > 0 and top["frames"][0].get("kind") == "native",
              "the top stack does not begin with the operator's native "
              "frames")

        # the Python frames: by file:qualname, the model's forward
        rep = analyze(t, "--group-by-frame", r"re:torch_train\.py:(.*)$",
                      timeout=TIMEOUT)
        rows = rows_add_up(rep, "by a Python frame")
        check_eq(rows[0]["name"], "Model.forward", "the first Python row")
        near(rows[0]["bytes_per_batch"], kept, 0.05,
             "Model.forward's growth against the kept bytes a step")


if __name__ == "__main__":
    main([test_operators_torch])
