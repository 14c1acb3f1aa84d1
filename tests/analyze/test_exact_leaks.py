"""Exact leaks (av_leaks.c): per stack, leaked bytes and blocks equal what
the program leaked, and the totals equal the sum over its stacks plus the
empty victim's (libc's own) blocks."""
from analyze_common import (ALL_STACKS, analyze, baseline_report, check,
                            check_eq, functions, leak_totals, main,
                            one_stack_at, prog, record_trace, stacks_at,
                            sum_leaks, tmpdir, validate_report)

MIB32 = 32 << 20
# mode -> {innermost function: (leaked_bytes, leaked_blocks, allocations
#          or None)}
EXPECT = {
    "cycle": {"leak_cycle_node": (480, 10, 10)},
    "chain": {"grow_chain": (8 + 1000 * 50, 1, None),
              "chain_start": (0, 0, 1)},
    "ones": {"leak_one_byte": (1000, 1000, 1000)},
    "big": {"leak_big_block": (MIB32, 1, 1)},
    "zero": {"leak_zero_block": (0, 1, 1)},
    "noise": {"churn_and_free": (0, 0, 200)},
}
OWN = {fn for e in EXPECT.values() for fn in e}


def leaks_report(*modes):
    with tmpdir() as d:
        t = record_trace([prog("av_leaks"), *modes], d)
        rep = analyze(t, "--top", ALL_STACKS)
    validate_report(rep, f"av_leaks {' '.join(modes)}")
    check_eq(rep["trace"]["complete"], True, "trace.complete")
    return rep


def check_stacks(rep, expect, what):
    for fn, (nbytes, blocks, allocs) in expect.items():
        s = one_stack_at(rep, fn)
        check_eq(s["leaked_bytes"], nbytes, f"{what}: {fn} leaked_bytes")
        check_eq(s["leaked_blocks"], blocks, f"{what}: {fn} leaked_blocks")
        if allocs is not None:
            check_eq(s["allocations"], allocs, f"{what}: {fn} allocations")


def check_totals(rep, own_bytes, own_blocks, what):
    base = baseline_report()
    bb, bn = leak_totals(base)
    lb, ln = leak_totals(rep)
    check_eq(lb - bb, own_bytes, f"{what}: totals.leaked_bytes minus libc's")
    check_eq(ln - bn, own_blocks, f"{what}: totals.leaked_blocks minus libc's")
    # every stack is listed: their sum is the totals
    check_eq(sum_leaks(rep["stacks"]), (lb, ln),
             f"{what}: (leaked_bytes, leaked_blocks) summed over all stacks")
    others = [s for s in rep["stacks"] if functions(s)[:1] and
              functions(s)[0] not in OWN]
    check_eq(sum_leaks(others), (bb, bn),
             f"{what}: leaks of the stacks that are not the program's")
    check_eq(rep["totals"]["unmatched_frees"], 0, f"{what}: unmatched_frees")
    # the counting rules hold per stack: a realloc's new home is no
    # allocation of its stack
    check_eq(sum(s["allocations"] for s in rep["stacks"]),
             rep["totals"]["allocations"],
             f"{what}: allocations summed over all stacks")


def test_each_mode_alone():
    for mode, expect in EXPECT.items():
        rep = leaks_report(mode)
        check_stacks(rep, expect, mode)
        nb = sum(v[0] for v in expect.values())
        nn = sum(v[1] for v in expect.values())
        check_totals(rep, nb, nn, mode)


def test_all_together():
    rep = leaks_report("all")
    expect = {k: v for e in EXPECT.values() for k, v in e.items()}
    check_stacks(rep, expect, "all")
    own = [s for fn in expect for s in stacks_at(rep, fn)]
    nb, nn = sum_leaks(own)
    check_eq((nb, nn), (480 + 50008 + 1000 + MIB32, 10 + 1 + 1000 + 1 + 1),
             "all: leaks summed over the program's stacks")
    check_totals(rep, nb, nn, "all")
    t = rep["totals"]
    base = baseline_report()["totals"]
    check_eq(t["reallocs"] - base["reallocs"], 50, "all: totals.reallocs")
    check_eq(t["allocations"] - base["allocations"], 10 + 1 + 1000 + 1 + 1 + 200,
             "all: totals.allocations")
    check_eq(t["frees"] - base["frees"], 200, "all: totals.frees")
    check(t["peak_live_bytes"] >= t["leaked_bytes"],
          "all: peak_live_bytes below leaked_bytes")
    # ranked by bytes_per_batch, then by leaked bytes: without marks there
    # is no growth, so the 32 MiB block comes first
    check_eq(functions(rep["stacks"][0])[0], "leak_big_block",
             "all: first stack")


if __name__ == "__main__":
    main([test_each_mode_alone, test_all_together])
