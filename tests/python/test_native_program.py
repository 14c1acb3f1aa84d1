"""C programs have no Python frames, and recording Python frames changes
nothing for them: the training-loop simulator (data/trainsim, 335 stacks,
deterministic) and a program whose threads allocate and free across each
other (av_xthread), recorded as they are and with --no-python, give the
same counts and the same stacks, no frame of kind python, and the same
stacks in every --python-frames mode (none at all in `python`).

Expected to fail until heapslope records Python frames: frames have no
kind, and --no-python and --python-frames are unknown options.
"""
from pyframes_common import (MODES, analyze_mode, check, check_eq, counts,
                             fail, has_python, main, prog, record,
                             report_text, stack_text, tmpdir, trainsim)


def stack_keys(report):
    """Each stack as its allocations and function names, in a fixed
    order (ranks tie between stacks that do not grow; av_xthread has no
    batch marks, so its growth depends on the run's timing)."""
    return sorted((s["allocations"],
                   tuple(f.get("function") or "?" for f in s["frames"]))
                  for s in report["stacks"])


def check_program(cmd, name):
    with tmpdir() as d:
        reps = {}
        for rec, opts in (("default", ()), ("no-python", ("--no-python",))):
            r = record(cmd, d, opts=opts, output=f"{name}-{rec}.hst")
            for mode in MODES:
                reps[rec, mode] = analyze_mode(r.trace(), mode)
    merged = reps["default", "merged"]
    check(merged["stacks"], f"{name}: no stacks")
    for (rec, mode), rep in reps.items():
        what = f"{name}, record {rec}, --python-frames={mode}"
        check(not has_python(rep), f"{what}: Python frames:\n" +
              report_text(rep))
        check_eq(counts(rep), counts(merged), f"{what}: totals")
        # every mode: a stack without Python frames shows its native ones
        for s in rep["stacks"]:
            check(s["frames"] and
                  all(f["kind"] == "native" for f in s["frames"]),
                  f"{what}: a stack without native frames\n" + stack_text(s))
        if stack_keys(rep) != stack_keys(merged):
            fail(f"{what}: the stacks differ from the default recording's "
                 f"merged ones:\n" + report_text(rep) + "\n  against\n" +
                 report_text(merged))


def test_trainsim():
    check_program([trainsim(), "--batches", "20", "--ops", "3000"],
                  "trainsim")


def test_threads():
    check_program([prog("av_xthread"), "4000"], "av_xthread")


if __name__ == "__main__":
    main([test_trainsim, test_threads])
