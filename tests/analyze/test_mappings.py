"""Memory outside malloc (heapslope-analyze(1), MAPPINGS): av_maps maps
and keeps, per batch, anonymous, file-backed, memfd and shm_open memory
at known sizes; munmaps part of its mappings and grows one by mremap;
touches a big malloc'd block progressively.  The mapped slopes by kind
are exact, the verdicts are `mapped` and `touching` (never
`fragmentation`), and the mapping stacks name the functions that map."""
import os

from analyze_common import (analyze, analyze_run, check, check_eq, main,
                            prog, record, tmpdir, validate_report)

BATCHES = 20
KiB = 1024
PAGE = 4096
KINDS = {"anon": 64 * KiB, "file": 32 * KiB, "memfd": 16 * KiB,
         "shm": 8 * KiB}
FUNCS = {"anon": "map_anon_batch", "file": "map_file_batch",
         "memfd": "map_memfd_batch", "shm": "map_shm_batch"}


def report(mode, n=BATCHES, text=False):
    with tmpdir() as d:
        args = [prog("av_maps"), mode, str(n)] + ([d] if mode == "kinds"
                                                   else [])
        # meson's MALLOC_PERTURB_ would fill the big block at malloc
        # time: every page touched before the first batch
        env = {k: v for k, v in os.environ.items()
               if k != "MALLOC_PERTURB_"}
        t = record(args, d, env=env).trace()
        rep = analyze(t)
        out = analyze_run(t).out.decode() if text else None
    validate_report(rep, f"av_maps {mode}")
    check_eq(rep["batches"]["count"], n, f"{mode}: batches.count")
    check(rep["mappings"] is not None, f"{mode}: the report has mappings")
    return rep, out


def exact(got, want, what):
    check(abs(got - want) < 1e-6 * max(1, abs(want)),
          f"{what}: {got!r}, want {want!r}")


def test_kinds():
    rep, text = report("kinds", text=True)
    m = rep["mappings"]
    check_eq(rep["verdict"], "mapped", "kinds: verdict")
    total = sum(KINDS.values())
    exact(rep["growth"]["mapped_bytes_per_batch"], total,
          "kinds: growth.mapped_bytes_per_batch")
    for kind, per in KINDS.items():
        exact(m["by_kind"][kind]["bytes_per_batch"], per,
              f"kinds: mappings.by_kind.{kind}.bytes_per_batch")
        check_eq(m["by_kind"][kind]["bytes_at_end"], BATCHES * per,
                 f"kinds: mappings.by_kind.{kind}.bytes_at_end")
    for kind in ("sysv", "other"):
        check_eq(m["by_kind"][kind]["bytes_at_end"], 0,
                 f"kinds: mappings.by_kind.{kind}.bytes_at_end")
    check_eq(m["mapped_at_end_bytes"], BATCHES * total, "kinds: mapped at end")
    # the mapping stacks, ranked: anon, file, memfd, shm
    order = sorted(KINDS, key=lambda k: -KINDS[k])
    for rank, kind in enumerate(order):
        s = m["stacks"][rank]
        exact(s["bytes_per_batch"], KINDS[kind], f"kinds: stack {rank + 1}")
        check_eq(s["kind"], kind, f"kinds: stack {rank + 1} kind")
        check_eq(s["frames"][0]["function"], FUNCS[kind],
                 f"kinds: stack {rank + 1} innermost function")
        check_eq(s["still_mapped_bytes"], BATCHES * KINDS[kind],
                 f"kinds: stack {rank + 1} still mapped")
    check(m["stacks"][1]["path"].endswith("/av_maps.bin"),
          f"kinds: the file's path: {m['stacks'][1]['path']!r}")
    # the decomposition names mapped memory as RSS's growth
    terms = {t["term"]: t for t in rep["decomposition"]["terms"]}
    check(terms["mapped"]["share"] > 0.8,
          f"kinds: mapped's share of RSS's slope: {terms['mapped']}")
    # the top of the text report points at the mapping
    lines = text.splitlines()
    check("Verdict: mapped" in lines, "kinds: text verdict line")
    check(any(l.startswith("  grows most: the anon mapping made in "
                           "map_anon_batch") for l in lines),
          "kinds: the verdict names the top mapping stack:\n" + text[:1500])
    first = next((i for i, l in enumerate(lines) if l.startswith("#1 ")),
                 None)
    check(first is not None and "anon" in lines[first] and
          "map_anon_batch" in lines[first + 1],
          "kinds: the first growth listed is the anonymous mapping "
          "stack:\n" + "\n".join(lines[first:first + 3] if first else []))


def test_churn():
    rep, _ = report("churn")
    m = rep["mappings"]
    check_eq(rep["verdict"], "mapped", "churn: verdict")
    # 16 pages mapped, 4 of them unmapped, + 8 pages by mremap
    exact(rep["growth"]["mapped_bytes_per_batch"], 20 * PAGE,
          "churn: growth.mapped_bytes_per_batch")
    exact(m["by_kind"]["anon"]["bytes_per_batch"], 20 * PAGE,
          "churn: anon bytes per batch")
    check_eq(m["mapped_at_end_bytes"], BATCHES * 20 * PAGE + PAGE,
             "churn: mapped at the end")
    top = {s["frames"][0]["function"]: s for s in m["stacks"]}
    exact(top["map_and_cut"]["bytes_per_batch"], 12 * PAGE,
          "churn: map_and_cut per batch")
    check_eq(top["map_and_cut"]["still_mapped_ranges"], 2 * BATCHES,
             "churn: each cut mapping is two ranges")
    exact(top["grow_buffer"]["bytes_per_batch"], 8 * PAGE,
          "churn: grow_buffer per batch")
    check_eq((m["unmaps"], m["remaps"], m["ignored"]), (BATCHES, BATCHES, 0),
             "churn: (unmaps, remaps, ignored)")


def test_touching():
    rep, _ = report("touch", n=22)
    check_eq(rep["verdict"], "touching", "touch: verdict")
    check(rep["growth"]["rss_bytes_per_batch"] > 3 * 1024 * KiB,
          f"touch: RSS grows about 4 MiB a batch: {rep['growth']}")
    check(abs(rep["growth"]["live_bytes_per_batch"]) < KiB,
          "touch: the live heap is flat")


def test_commit():
    """A runtime's heap (V8's): reserved PROT_NONE, committed 64 KiB a
    batch by mprotect: mapped memory of the reservation's stack."""
    rep, _ = report("commit")
    m = rep["mappings"]
    check_eq(rep["verdict"], "mapped", "commit: verdict")
    exact(rep["growth"]["mapped_bytes_per_batch"], 16 * PAGE,
          "commit: growth.mapped_bytes_per_batch")
    top = m["stacks"][0]
    check_eq(top["frames"][0]["function"], "reserve_heap",
             "commit: the top mapping stack")
    exact(top["bytes_per_batch"], 16 * PAGE, "commit: reserve_heap per batch")
    check_eq(m["protects"], BATCHES, "commit: mprotect records applied")
    check_eq(m["reserved_at_end_bytes"], 16 * PAGE,
             "commit: the batch reserved but never committed")


if __name__ == "__main__":
    main([test_kinds, test_churn, test_touching, test_commit])
