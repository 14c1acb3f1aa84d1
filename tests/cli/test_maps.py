#!/usr/bin/env python3
"""The program's own mappings (recorded by default), and the start of exit.

Every kind of mapping is a map record with its kind, file identity, path
and a stack that names the function that mapped it; partial munmaps,
mremap and shmdt are recorded exactly; the allocators' own mappings (glibc's
large blocks, jemalloc's, tcmalloc's and mimalloc's) are never written;
--no-mmap writes none; exit() and CPython's finalization write an exiting
record before the teardown's frees."""
import json
import os
import subprocess

from common import (check, check_complete, check_eq, dump_lines, dump_stats,
                    fail, load, main, prog, record, tmpdir)

PAGE = 4096


def symbols(path):
    """function name -> (offset, size) in the object, from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


def module_base(evs, path):
    for e in evs:
        if e.rec == "module" and e.kv.get("path") == path:
            return e.int("base")
    fail(f"no module record for {path}")


def maps_of(evs):
    return [e for e in evs if e.rec in ("map", "unmap", "remap", "protect")]


def test_kinds():
    exe = prog("mapkinds")
    with tmpdir() as d:
        r = record([exe, d], d)
        s = dump_stats(r.trace())
        check_complete(s, "mapkinds")
        shown = [line.split() for line in r.out.decode().splitlines()]
        check_eq([x[0] for x in shown],
                 ["anon", "file", "memfd", "shm", "sysv", "anon", "remap",
                  "reserve"], "the victim's mappings")
        evs, stacks = load(r.trace())
        base = module_base(evs, exe)
        syms = symbols(exe)
        recs = maps_of(evs)
        maps = [e for e in recs if e.rec == "map"]
        check_eq(len(maps), 7, "map records")
        want = [("anon", 8 * PAGE, "map_anon", 0),
                ("file", 3 * PAGE, "map_file", 1),
                ("memfd", 5 * PAGE, "map_memfd", 2),
                ("shm", 6 * PAGE, "map_shm", 3),
                ("sysv", 7 * PAGE, "map_sysv", 4),
                ("anon", 2 * PAGE, "map_anon", 5),
                ("anon", 64 * PAGE, "main", 7)]
        for e, (kind, length, fn, line) in zip(maps, want):
            what = f"map of {kind} ({e})"
            check_eq(e.kv["kind"], kind, what + ": kind")
            check_eq(e.int("len"), length, what + ": len")
            check_eq(e.int("addr"), int(shown[line][1], 16), what + ": addr")
            off, size = syms[fn]
            frames = stacks.frames(e.int("stack"))
            check(any(base + off <= ip < base + off + size for ip in frames),
                  f"{what}: no frame of its stack is in {fn}()")
        check_eq(maps[1].kv["path"], os.path.join(d, "mapped.bin"),
                 "file map: path")
        st = os.stat(os.path.join(d, "mapped.bin"))
        check_eq((maps[1].int("dev"), maps[1].int("ino")),
                 (st.st_dev, st.st_ino), "file map: dev and ino")
        check(maps[2].kv["path"].startswith("/memfd:hs-batch"),
              f"memfd map: path {maps[2].kv['path']}")
        check(maps[3].kv["path"].startswith("/dev/shm/hs-mapkinds-"),
              f"shm map: path {maps[3].kv['path']}")
        check_eq(maps[1].int("flags") & 0x3, 0x1, "file map: MAP_SHARED")
        check_eq(maps[0].int("flags") & 0x3, 0x2, "anon map: MAP_PRIVATE")
        check_eq(maps[6].int("prot"), 0, "reservation: PROT_NONE")
        a = maps[0].int("addr")
        unmaps = [(e.int("addr"), e.int("len")) for e in recs
                  if e.rec == "unmap"]
        check_eq(unmaps[:3], [(a + 2 * PAGE, 2 * PAGE), (a, 2 * PAGE),
                              (a + 4 * PAGE, 4 * PAGE)],
                 "the anonymous map given back in three pieces")
        remaps = [e for e in recs if e.rec == "remap"]
        check_eq(len(remaps), 1, "remap records")
        check_eq((remaps[0].int("old"), remaps[0].int("old_len"),
                  remaps[0].int("addr"), remaps[0].int("len")),
                 (maps[5].int("addr"), 2 * PAGE, int(shown[6][1], 16),
                  16 * PAGE), "remap: old and new")
        # shmdt: the segment at its address, len 0; the others exactly
        check_eq(unmaps[3:], [(maps[1].int("addr"), 3 * PAGE),
                              (maps[2].int("addr"), 5 * PAGE),
                              (maps[3].int("addr"), 6 * PAGE),
                              (maps[4].int("addr"), 0),
                              (int(shown[6][1], 16), 16 * PAGE),
                              (maps[6].int("addr"), 64 * PAGE)],
                 "the unmaps and the shmdt")
        prot = [e for e in recs if e.rec == "protect"]
        check_eq([(e.int("addr"), e.int("len"), e.int("prot")) for e in prot],
                 [(maps[6].int("addr") + 8 * PAGE, 16 * PAGE, 3)],
                 "protect records: the reservation's commit only")
        check_eq(s["mmaps"], 8, "dump --stats mmaps (7 maps, 1 remap)")
        hdr = subprocess.run([os.environ["HEAPSLOPE"], "dump", r.trace()],
                             capture_output=True, text=True).stdout
        check("pythonmalloc" not in hdr, "a C program's header says "
              "nothing of PYTHONMALLOC")
        check_eq(s["munmaps"], 9, "dump --stats munmaps")

        r = record([exe, d], d, opts=["--no-mmap"], output="none.hst")
        evs, _ = load(r.trace())
        check_eq(maps_of(evs), [], "--no-mmap: map records")
        check_complete(dump_stats(r.trace()), "mapkinds --no-mmap")


def test_allocators_own_maps():
    """malloc's mmapped blocks are the heap, whatever the allocator."""
    for alloc in ("glibc", "jemalloc", "tcmalloc", "mimalloc"):
        with tmpdir() as d:
            r = record([prog("mapkinds"), "bigmalloc"], d,
                       opts=["--allocator", alloc])
            evs, _ = load(r.trace())
            check_eq(maps_of(evs), [], f"{alloc}: map records of malloc's "
                     "own blocks")
            allocs = [e for e in evs if e.rec == "malloc"
                      and e.int("size") >= 1 << 20]
            check_eq(len(allocs), 20, f"{alloc}: the large mallocs")


def test_exiting():
    """exit() writes the exiting record, before the exit handlers run."""
    with tmpdir() as d:
        r = record([prog("mapkinds"), "exit"], d, ok=False)
        check_eq(r.rc, 3, "exit status")
        lines = list(dump_lines(r.trace()))
        ex = [i for i, line in enumerate(lines) if " exiting" in line]
        check_eq(len(ex), 1, "exiting records")
        end = [i for i, line in enumerate(lines) if " end " in line]
        check(end and ex[0] < end[0], "exiting comes before the end record")
        check_eq(dump_stats(r.trace()).get("counts_verified"), "yes",
                 "counts_verified")



def test_python_finalization():
    """CPython frees its heap in Py_FinalizeEx, before main returns: the
    exiting record comes before those frees."""
    script = ("import time\ncache = [bytes(4096 + i) for i in range(3000)]\n"
              "time.sleep(0.05)\n")
    with tmpdir() as d:
        r = record(["/usr/bin/python3", "-c", script], d)
        evs = [line.split(" ", 3) for line in dump_lines(r.trace())]
        names = [e[2] for e in evs]
        check_eq(names.count("exiting"), 1, "exiting records")
        at = names.index("exiting")
        big_frees = 0
        sizes = {}
        for e in evs:
            if e[2] in ("malloc", "calloc"):  # bytes(n) is calloc'd
                kv = dict(x.split("=", 1) for x in e[3].split()
                          if "=" in x)
                if 4096 <= int(kv["size"]) < 4096 + 3000:
                    sizes[kv["ptr"]] = 1
        for e in evs[at:]:
            if e[2] == "free" and e[3].split("=", 1)[1].split()[0] in sizes:
                big_frees += 1
        check(big_frees >= 2900, f"the cache's frees after the exiting "
              f"record: {big_frees} of 3000")
        hdr = subprocess.run([os.environ["HEAPSLOPE"], "dump", r.trace()],
                             capture_output=True, text=True).stdout
        check("# pythonmalloc malloc (set by record)" in hdr,
              "the header says record set PYTHONMALLOC=malloc")
        # the interpreter's start-up mappings do not grow: not listed
        text = subprocess.run([os.environ["HEAPSLOPE"], "analyze",
                               r.trace()], capture_output=True,
                              text=True).stdout
        check("No mapping stack grows" in text and
              "Top mapping stacks" not in text,
              "analyze lists mapping stacks that do not grow")


def test_freed_only_at_exit():
    """a history kept until exit, which CPython's finalization frees:
    retention whose why says the blocks are freed only as the process
    exits; cleared by the program before it exits, plain retention"""
    script = ("import ctypes, sys\n"
              "mark = ctypes.CDLL(None).heapslope_mark_batch\n"
              "keep = []\n"
              "for i in range(30):\n"
              "    keep.append(bytearray(50000))\n"
              "    mark()\n"
              "if sys.argv[1] == 'clear':\n"
              "    keep.clear()\n")
    for mode, only in (("keep", True), ("clear", False)):
        with tmpdir() as d:
            r = record(["/usr/bin/python3", "-c", script, mode], d)
            j = subprocess.run([os.environ["HEAPSLOPE"], "analyze",
                                "--json", "-", r.trace()],
                               capture_output=True, text=True).stdout
            rep = json.loads(j)
            check_eq(rep["verdict"], "retention", f"{mode}: verdict")
            said = "freed only as the process exits" in rep["verdict_reason"]
            check_eq(said, only, f"{mode}: verdict reason "
                     f"{rep['verdict_reason']!r}")


def test_pymalloc_kept():
    """--keep-pymalloc: PYTHONMALLOC is not set (nor said to be), and
    pymalloc's arenas are recorded as the program's mappings."""
    script = "x = [str(i) for i in range(200000)]\n"
    with tmpdir() as d:
        r = record(["/usr/bin/python3", "-c", script], d,
                   opts=["--keep-pymalloc"])
        evs, _ = load(r.trace())
        arenas = [e for e in evs if e.rec == "map" and
                  e.int("len") == 1 << 20 and e.kv["kind"] == "anon"]
        check(len(arenas) >= 8, f"pymalloc's 1 MiB arenas as maps: "
              f"{len(arenas)}")
        hdr = subprocess.run([os.environ["HEAPSLOPE"], "dump", r.trace()],
                             capture_output=True, text=True).stdout
        check("pythonmalloc" not in hdr, "--keep-pymalloc: header says "
              "nothing of PYTHONMALLOC")
        # objects kept every batch, in pymalloc's arenas: a mapped
        # verdict, which says whose heap that is
        grow = ("import ctypes, time\n"
                "mark = ctypes.CDLL(None).heapslope_mark_batch\n"
                "keep = []\n"
                "for i in range(30):\n"
                "    keep.extend(('x%d' % j, j) for j in range(3000))\n"
                "    mark()\n")
        r = record(["/usr/bin/python3", "-c", grow], d,
                   opts=["--keep-pymalloc"], output="grow.hst")
        text = subprocess.run([os.environ["HEAPSLOPE"], "analyze",
                               r.trace()], capture_output=True,
                              text=True).stdout
        check("Verdict: mapped" in text and
              "runtime: it is CPython's own object allocator" in text,
              "--keep-pymalloc growth: the verdict and whose heap it is:\n"
              + text[:1500])
        env = dict(os.environ, PYTHONMALLOC="malloc")
        r = record(["/usr/bin/python3", "-c", "pass"], d, env=env,
                   output="own.hst")
        hdr = subprocess.run([os.environ["HEAPSLOPE"], "dump", r.trace()],
                             capture_output=True, text=True).stdout
        check("pythonmalloc" not in hdr, "the user's own PYTHONMALLOC is "
              "not said to be record's")


if __name__ == "__main__":
    main([test_kinds, test_allocators_own_maps, test_exiting,
          test_freed_only_at_exit,
          test_python_finalization, test_pymalloc_kept])
