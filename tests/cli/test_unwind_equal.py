#!/usr/bin/env python3
"""The fast unwinder records exactly the stacks libunwind records.  Each
victim is recorded twice, with HEAPSLOPE_UNWIND=libunwind and =fast; every
event's full stack (stack ids resolved through the 'stack id= parent= ip='
records, each address made module-relative since the two runs load
modules at different places) must be identical, event by event, in order.
Threads are compared as whole per-thread sequences, in any order; where
the work is shared out between threads at run time, as the multiset of
all (record, stack) pairs."""
import bisect
import os

from common import (PROGRAMS, check, check_complete, check_eq, dump_events,
                    dump_stats, fail, main, prog, record, run, tmpdir,
                    HEAPSLOPE)


class Modules:
    """Address -> (module path, offset), from the trace's module records."""

    def __init__(self):
        self.ranges = []  # (lo, hi, path, base), sorted

    def add(self, ev):
        base = ev.int("base")
        path = ev.kv.get("path", "?")
        for s in ev.kv.get("seg", []):
            rng = s.partition(":")[0]
            vaddr, _, memsz = rng.partition("+")
            lo = base + int(vaddr, 16)
            bisect.insort(self.ranges, (lo, lo + int(memsz, 16), path, base))

    def resolve(self, ip):
        i = bisect.bisect_right(self.ranges, (ip, float("inf"))) - 1
        if i >= 0:
            lo, hi, path, base = self.ranges[i]
            if lo <= ip < hi:
                return (os.path.basename(path), ip - base)
        return ("?", ip)


def unwind_name(path):
    r = run([HEAPSLOPE, "dump", path], timeout=300)
    for line in r.out.decode(errors="replace").splitlines():
        if line.startswith("# unwind "):
            return line.split()[2]
        if not line.startswith("#"):
            break
    return None


def threads(path):
    """Per thread, the list of (record, size, stack) in trace order; the
    stack as a tuple of (module, offset), innermost first."""
    nodes, mods, per_tid = {}, Modules(), {}
    for ev in dump_events(path):
        if ev.rec == "module":
            mods.add(ev)
        elif ev.rec == "stack":
            nodes[ev.int("id")] = (ev.int("parent"),
                                   mods.resolve(ev.int("ip")))
        elif "stack" in ev.kv:
            frames, sid = [], ev.int("stack")
            while sid:
                check(sid in nodes, f"{path}: unknown stack id {sid}: {ev}")
                sid, frame = nodes[sid]
                frames.append(frame)
            per_tid.setdefault(ev.tid, []).append(
                (ev.rec, ev.kv.get("size"), tuple(frames)))
    return per_tid


def show(stack):
    return " ".join(f"{m}+{off:#x}" for m, off in stack)


def compare(cmd, what, threaded=False, shared=False, env=None, sizes=True):
    seqs = {}
    with tmpdir() as d:
        for method in ("libunwind", "fast"):
            e = dict(os.environ, **(env or {}), HEAPSLOPE_UNWIND=method)
            r = record(cmd, d, output=f"{method}.hst", env=e)
            t = r.trace()
            check_complete(dump_stats(t), f"{what} ({method})")
            check_eq(unwind_name(t), method, f"{what}: trace's unwind method")
            seqs[method] = threads(t)
            if not sizes:
                seqs[method] = {tid: [(r, None, st) for r, _, st in evs]
                                for tid, evs in seqs[method].items()}
    a, b = seqs["libunwind"], seqs["fast"]
    if shared:
        ma = sorted((r, st) for t in a.values() for r, _, st in t)
        mb = sorted((r, st) for t in b.values() for r, _, st in t)
        check_eq(len(ma), len(mb), f"{what}: events")
        for ea, eb in zip(ma, mb):
            if ea != eb:
                fail(f"{what}: stacks differ\n  libunwind: {ea[0]} "
                     f"{show(ea[1])}\n  fast:      {eb[0]} {show(eb[1])}")
        print(f"{what}: {len(ma)} events, same stacks")
        return
    if not threaded:
        check_eq(len(a), 1, f"{what}: threads (libunwind)")
        check_eq(len(b), 1, f"{what}: threads (fast)")
    la, lb = sorted(a.values()), sorted(b.values())
    check_eq(len(la), len(lb), f"{what}: threads")
    events = 0
    for ta, tb in zip(la, lb):
        check_eq(len(ta), len(tb), f"{what}: events of a thread")
        for i, (ea, eb) in enumerate(zip(ta, tb)):
            if ea != eb:
                fail(f"{what}: event {i} of a thread differs\n"
                     f"  libunwind: {ea[0]} size={ea[1]}\n"
                     f"    {show(ea[2])}\n"
                     f"  fast:      {eb[0]} size={eb[1]}\n"
                     f"    {show(eb[2])}")
        events += len(ta)
    check(events > 0, f"{what}: no event with a stack")
    print(f"{what}: {events} events in {len(la)} thread(s), same stacks")


def trainsim():
    """The bundled simulator, when built next to the test programs."""
    path = os.environ.get("HEAPSLOPE_TRAINSIM") or os.path.join(
        PROGRAMS, "..", "..", "data", "trainsim")
    return path if os.access(path, os.X_OK) else None


# A Python program: its stacks are trimmed where Python frames stand for
# the interpreter's (the fast unwinder's kept walk then gives the trimmed
# stack's nodes, stacks.c), deep under the import machinery and calls.
PY_PROGRAM = """
import json, re
def leaf(i):
    return {"k%d" % i: [i] * (i % 7), "s": "x" * (i % 50)}
def mid(i, d):
    return mid(i, d - 1) if d else [leaf(i), json.dumps({"i": i})]
keep = []
for i in range(3000):
    keep.append(mid(i, i % 9))
    if i % 500 == 0:
        re.compile("a%d(b|c)*" % i)
"""


def python_program(d):
    path = os.path.join(d, "prog.py")
    with open(path, "w") as f:
        f.write(PY_PROGRAM)
    return path


def test_unwind_equal():
    compare([prog("churn"), "30000", "0"], "churn")
    compare([prog("tstress"), "4", "3000"], "tstress", threaded=True)
    compare([prog("xthread"), "2000"], "xthread", shared=True)
    lib = os.environ.get("HEAPSLOPE_VICTIM_LIB", "")
    if os.path.isfile(lib):
        compare([prog("dlopener"), lib, "5"], "dlopener")
    ts = trainsim()
    if ts:
        compare([ts, "--batches", "3", "--ops", "20000"], "trainsim")
    with tmpdir() as d:
        # sizes aside: the interpreter copies the environment, where
        # HEAPSLOPE_UNWIND's value differs
        compare(["/usr/bin/python3", python_program(d)], "python",
                env={"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"},
                sizes=False)


if __name__ == "__main__":
    main([test_unwind_equal])
