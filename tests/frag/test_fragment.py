"""heapslope on the fragmentation victim (fragment.c): the verdict, the
retained memory against glibc's own free bytes measured in the same run,
the pinning blocks' stack, a steady run, and the same program under four
allocators side by side.

Environment (set by tests/frag/meson.build):
  HEAPSLOPE             the heapslope CLI
  HEAPSLOPE_LIB         recorder library; if unset, HEAPSLOPE_LIB_DEFAULT
  HEAPSLOPE_FRAGMENT    the built fragment program
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "analyze"))

from analyze_common import (analyze, analyze_run, check, check_eq,  # noqa: E402
                            fail, functions, main, near, record, slope,
                            tmpdir, validate_report)

FRAGMENT = os.environ.get("HEAPSLOPE_FRAGMENT", "")
BATCHES = 40
PIN_BYTES = 1536  # live bytes fragment.c keeps per batch
ALLOCATORS = ("glibc", "jemalloc", "tcmalloc", "mimalloc")


def fragment():
    check(FRAGMENT and os.access(FRAGMENT, os.X_OK),
          f"HEAPSLOPE_FRAGMENT={FRAGMENT!r} is not an executable")
    return FRAGMENT


def shown_sizes(line):
    """The sizes a side-by-side line shows (live, RSS, retained, mapped,
    other), in bytes: '1.5 KiB', '498 B'."""
    units = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
    f = line.split()[3:]
    return [float(f[i]) * units[f[i + 1]] for i in range(0, 10, 2)]


def recorded(d, *opts, allocator=None, name="trace.hst", rec_opts=()):
    """Records fragment OPTS --stats FILE: (report, native stats)."""
    stats = os.path.join(d, name + ".json")
    rec = (["--allocator", allocator] if allocator else []) + list(rec_opts)
    t = record([fragment(), "--batches", str(BATCHES), *opts, "--stats",
                stats], d, opts=rec, output=name).trace()
    rep = analyze(t)
    validate_report(rep, f"fragment {' '.join(opts)}")
    with open(stats) as f:
        native = json.load(f)
    check_eq(len(native["series"]), BATCHES, "native stats: batches")
    check_eq(rep["batches"]["count"], BATCHES, "batches.count")
    return t, rep, native


def test_fragmentation():
    with tmpdir() as d:
        # a sample at every mark: under load (the sanitizer run in CI) the
        # automatic budget may skip enough of them to leave no slope
        t, rep, native = recorded(d, rec_opts=("--mallinfo", "always"))
        text = analyze_run(t).out.decode()
    g, f = rep["growth"], rep["fragmentation"]
    w = rep["batches"]["warmup"]
    check_eq(rep["verdict"], "fragmentation", "verdict")
    # the summaries it keeps are what pins the holes: the why says so
    check("below blocks of the growing stacks" in rep["verdict_reason"],
          f"verdict reason: {rep['verdict_reason']!r}")
    near(g["live_bytes_per_batch"], PIN_BYTES, 0.01, "live slope")
    check(g["rss_bytes_per_batch"] >= 10 * g["live_bytes_per_batch"],
          f"RSS slope {g['rss_bytes_per_batch']:.0f} is not 10x the live "
          f"slope {g['live_bytes_per_batch']:.0f}")
    # glibc's free bytes, measured by the program itself right after each
    # mark, over the batches the analyzer fitted
    free = slope([e["free"] for e in native["series"][w:]])
    in_use = slope([e["in_use"] for e in native["series"][w:]])
    print(f"retained {f['retained_bytes_per_batch']:.0f} B/batch, "
          f"mallinfo2 free {free:.0f}, in use {in_use:.0f}, live "
          f"{g['live_bytes_per_batch']:.0f}, RSS "
          f"{g['rss_bytes_per_batch']:.0f}")
    near(f["retained_bytes_per_batch"], free, 0.20,
         "retained slope vs mallinfo2's free slope")
    near(f["allocator_state"]["free_bytes_per_batch"], free, 0.05,
         "the trace's mallinfo2 free slope vs the program's")
    dec = f["decomposition"]
    check(dec is not None, "no decomposition with glibc and RSS samples")
    check(dec["retained_bytes_per_batch"] > 0.8 * dec["rss_bytes_per_batch"],
          f"retained memory should explain most of RSS growth: {dec}")
    # the long-lived blocks hold the holes open
    check(f["pinning_matters"] is True, "pinning_matters")
    pins = f["pinning_stacks"]
    check(pins, "no pinning stacks")
    check_eq(functions(pins[0])[0], "pin_small_block",
             "innermost function of the first pinning stack")
    check(pins[0]["pinned_bytes"] >= 0.8 * f["releasable_bytes"],
          f"the first pinning stack holds most of the free pages: "
          f"{pins[0]['pinned_bytes']} of {f['releasable_bytes']}")
    check(f["holes_bytes"] >= f["releasable_bytes"] > 0,
          f"holes {f['holes_bytes']} >= releasable {f['releasable_bytes']}")
    check("Blocks that pin the heap" in text and "pin_small_block" in text,
          "the text report names the pinning blocks:\n" + text)
    check("retained by glibc" in text,
          "the text report splits the growth:\n" + text)


def test_steady():
    with tmpdir() as d:
        t, rep, native = recorded(d, "--steady")
        text = analyze_run(t).out.decode()
    f = rep["fragmentation"]
    check_eq(rep["verdict"], "stable", "steady: verdict")
    check_eq(f["pinning_matters"], False, "steady: pinning_matters")
    check(abs(f["retained_bytes_per_batch"]) < 4096,
          f"steady: retained slope {f['retained_bytes_per_batch']}")
    check("Blocks that pin the heap" not in text,
          "steady: pinning reported as a problem:\n" + text)


def test_allocators():
    """The same program under four allocators: one line each; the live
    slope agrees, RSS does not have to."""
    with tmpdir() as d:
        traces = []
        for a in ALLOCATORS:
            t, rep, _ = recorded(d, allocator=a, name=f"{a}.hst")
            check_eq(rep["fragmentation"]["allocator"], a, f"{a}: allocator")
            traces.append(t)
        r = analyze_run(traces[0], *traces[1:])
        check_eq(r.rc, 0, "analyze of four traces:\n" + r.describe())
        table = r.out.decode()
        print(table)
        r = analyze_run(traces[0], "--json", "-", *traces[1:])
        doc = json.loads(r.out)
    check_eq(doc["schema"], "heapslope.comparison/1", "schema")
    reps = doc["reports"]
    check_eq([x["fragmentation"]["allocator"] for x in reps],
             [ALLOCATORS[1], ALLOCATORS[2], ALLOCATORS[3], ALLOCATORS[0]],
             "reports in the order given")
    for x in reps:
        validate_report(x, x["fragmentation"]["allocator"])
        a = x["fragmentation"]["allocator"]
        near(x["growth"]["live_bytes_per_batch"], PIN_BYTES, 0.01,
             f"{a}: live slope")
        check(x["growth"]["rss_bytes_per_batch"] is not None,
              f"{a}: RSS slope")
        has = x["fragmentation"]["retained_bytes_per_batch"] is not None
        check_eq(has, a == "glibc", f"{a}: retained slope known")
    for a in ALLOCATORS:
        lines = [ln for ln in table.splitlines()
                 if ln.strip().startswith(f"{a}.hst")]
        if len(lines) != 1 or a not in lines[0].split()[1]:
            fail(f"no line for {a} in the table:\n{table}")
    # the glibc line's columns are the JSON report's figures
    rep = next(x for x in reps if x["fragmentation"]["allocator"] == "glibc")
    cols = shown_sizes(next(ln for ln in table.splitlines()
                            if ln.strip().startswith("glibc.hst")))
    dec = rep["fragmentation"]["decomposition"]
    for name, got in zip(("live", "rss", "retained", "mapped", "other"),
                         cols):
        want = dec[name + "_bytes_per_batch"]
        check(abs(got - want) <= max(0.06 * 1024, 0.001 * abs(want)),
              f"glibc line: {name} shows {got:.0f}, the report says "
              f"{want:.0f}:\n{table}")


if __name__ == "__main__":
    main([test_fragmentation, test_steady, test_allocators])
