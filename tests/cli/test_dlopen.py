#!/usr/bin/env python3
"""5. Reentrancy and modules.  The recorder's own allocations never appear
(exact counts are test_counts; here: no recorded stack passes through the
recorder or the libraries it uses).  A library loaded with dlopen shows up
as a module with its build-id, the stacks of its allocations point into its
code, and a module-gone record follows its dlclose."""
import os

from common import (check, check_complete, check_eq, dump_stats, fail, load,
                    main, prog, record, tmpdir)

N = 7


def segments(ev):
    """[(lo, hi, flags)] of a module line, absolute addresses."""
    base = ev.int("base")
    out = []
    for s in ev.kv.get("seg", []):
        rng, _, flags = s.partition(":")
        vaddr, _, memsz = rng.partition("+")
        lo = base + int(vaddr, 16)
        out.append((lo, lo + int(memsz, 16), flags))
    return out


def test_dlopen():
    lib = os.environ.get("HEAPSLOPE_VICTIM_LIB", "")
    check(os.path.isfile(lib), f"HEAPSLOPE_VICTIM_LIB={lib!r} is not built")
    lib = os.path.realpath(lib)
    with tmpdir() as d:
        r = record([prog("dlopener"), lib, str(N)], d)
        s = dump_stats(r.trace())
        check_complete(s, "dlopener")
        evs, st = load(r.trace())

        mods = [(i, e) for i, e in enumerate(evs) if e.rec == "module"]
        mine = [(i, e) for i, e in mods
                if os.path.realpath(e.kv.get("path", "")) == lib]
        check_eq(len(mine), 1, f"dlopener: module lines for {lib}")
        mi, mod = mine[0]
        bid = mod.kv.get("build_id", "")
        check(len(bid) >= 16 and all(c in "0123456789abcdef" for c in bid),
              f"dlopener: module without a build-id: {mod}")
        code = [(lo, hi) for lo, hi, fl in segments(mod) if "x" in fl]
        check(code, f"dlopener: module has no executable segment: {mod}")
        base = mod.int("base")

        allocs = [(i, e) for i, e in enumerate(evs)
                  if e.rec == "malloc" and 50000 <= e.int("size") < 50000 + N]
        check_eq(sorted(e.int("size") for _, e in allocs),
                 list(range(50000, 50000 + N)),
                 "dlopener: sizes of the library's allocations")
        for _, e in allocs:
            frames = st.frames(e.int("stack"))
            check(any(lo <= ip < hi for ip in frames for lo, hi in code),
                  f"dlopener: no frame of {e} is inside {lib} "
                  f"({[hex(x) for x in frames]}, code {code})")
        # the first free of each of the library's blocks (the addresses are
        # reused later)
        pending = {e.int("ptr") for _, e in allocs}
        last_free = -1
        for i in range(max(i for i, _ in allocs) + 1, len(evs)):
            e = evs[i]
            if e.rec == "free" and e.int("ptr") in pending:
                pending.discard(e.int("ptr"))
                last_free = i
        check(not pending, "dlopener: the library's blocks were not freed")
        gone = [i for i, e in enumerate(evs)
                if e.rec == "module-gone" and e.int("base") == base]
        check(gone, f"dlopener: no 'module-gone base={base:#x}' after dlclose")
        check(gone[0] > last_free and gone[0] > mi,
              "dlopener: module-gone comes before the library was done")

        # reentrancy: no recorded allocation was made by the recorder or by
        # the libraries it calls (zstd, libunwind)
        own = []
        for _, e in mods:
            name = os.path.basename(e.kv.get("path", ""))
            if name.startswith(("libheapslope", "libzstd", "libunwind")):
                own += [(lo, hi, name) for lo, hi, fl in segments(e)
                        if "x" in fl]
        check(any(n.startswith("libheapslope") for _, _, n in own),
              "dlopener: the recorder library is not among the modules")
        for e in evs:
            if "stack" in e.kv and e.int("stack"):
                for ip in st.frames(e.int("stack")):
                    for lo, hi, name in own:
                        if lo <= ip < hi:
                            fail(f"dlopener: a recorded event has a frame "
                                 f"in {name}: {e}")


def test_dlopen_dlclose_loop():
    """dlopen/dlclose in a loop in 2 threads: module records are made while
    the loader is busy, and the loader frees memory under its own locks.
    The recorder must not deadlock against it."""
    lib = os.path.realpath(os.environ.get("HEAPSLOPE_VICTIM_LIB", ""))
    rounds = 2000  # natively 0.4 s
    with tmpdir() as d:
        for i in range(2):
            r = record([prog("dlstress"), lib, "2", str(rounds)], d,
                       output=f"loop{i}.hst", timeout=20)
            check_eq(r.out, b"ok\n", "dlstress: output")
            s = dump_stats(r.trace())
            check_complete(s, "dlstress")
            check(s["allocations"] >= 2 * rounds * 3,
                  f"dlstress: {s['allocations']} allocations")


if __name__ == "__main__":
    main([test_dlopen, test_dlopen_dlclose_loop])
