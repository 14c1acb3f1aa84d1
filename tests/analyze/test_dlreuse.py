"""Symbols after dlclose (issue 11 item 6): av_dlreuse dlopens library A,
keeps blocks allocated in its keep_a, dlcloses it, dlopens library B,
which lands at A's old address, and keeps blocks allocated in keep_b.
A's return addresses now lie inside other code of B (its filler_b): each
frame must be resolved against the module mapped when its stack was
captured, so A's blocks are keep_a's and B's are keep_b's."""
import os

from analyze_common import (ALL_STACKS, analyze, check, check_eq, fail, main,
                            prog, record, tmpdir)

A_BYTES, B_BYTES, BLOCKS = 1111, 2222, 50


def lib(name):
    return prog(f"libav_dlreuse_{name}.so")


def top_frame(rep, leaked):
    found = [s for s in rep["stacks"] if s["leaked_bytes"] == leaked and
             s["leaked_blocks"] == BLOCKS]
    if len(found) != 1:
        fail(f"expected one stack leaking {BLOCKS} blocks, {leaked} bytes; "
             f"found {len(found)}")
    check(found[0]["frames"], f"the stack leaking {leaked} B has no frames")
    return found[0]["frames"][0]


def test_dlreuse():
    with tmpdir() as d:
        r = record([prog("av_dlreuse"), lib("a"), lib("b")], d, ok=False)
        if r.rc == 3:
            fail("library B was not loaded at library A's old address, so "
                 "this test cannot check anything:\n" + r.describe())
        check_eq(r.rc, 0, "av_dlreuse under record:\n" + r.describe())
        t = os.path.join(d, "trace.hst")
        base = r.out.decode().split()
        check(len(base) == 3 and base[0] == "base" and base[1] == base[2],
              f"av_dlreuse printed {r.out!r}, expected 'base A A'")
        rep = analyze(t, "--top", ALL_STACKS)
        a = top_frame(rep, A_BYTES * BLOCKS)
        b = top_frame(rep, B_BYTES * BLOCKS)
        check_eq((a["function"], os.path.basename(a["module"] or "")),
                 ("keep_a", "libav_dlreuse_a.so"),
                 "library A's blocks: innermost frame")
        check_eq((b["function"], os.path.basename(b["module"] or "")),
                 ("keep_b", "libav_dlreuse_b.so"),
                 "library B's blocks: innermost frame")
        # grouped by allocation site: the same
        rep = analyze(t, "--top", ALL_STACKS, "--group-by-site")
        check_eq(top_frame(rep, A_BYTES * BLOCKS)["function"], "keep_a",
                 "--group-by-site: library A's site")
        check_eq(top_frame(rep, B_BYTES * BLOCKS)["function"], "keep_b",
                 "--group-by-site: library B's site")


if __name__ == "__main__":
    main([test_dlreuse])
