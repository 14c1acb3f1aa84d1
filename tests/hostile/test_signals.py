#!/usr/bin/env python3
"""6 and 7. Signal handlers that allocate, and handlers that siglongjmp
out of whatever they interrupted, the recorder's hooks included.

6a: with lfalloc (async-signal-safe, lock-free), a 100 us timer whose
handler allocates 555 bytes while the main loop allocates 777: every
block is in the trace, or the trace says counts_verified: no and record
says why.  6b: the same on glibc's malloc, single-threaded (undefined,
but it runs natively): no deadlock, same output, same rule for counts.
7a, 7b: with lfalloc, a handler that allocates and then siglongjmps back
into the loop at random ticks, installed by sigaction (7a) or by the raw
system call with a restorer of its own (7b): no hang, at exit either;
counts exact, the 999-byte blocks made after the timer stopped included
(a thread left "busy" would lose them), or honestly not verified.
Regression: SIGPROF every 100 us during heavy allocation, the handler
allocation-free: exact counts.  Two signals racing: one arriving while the
recorder sets another aside (made to, every time, by a shim) takes neither
its place nor its siginfo."""
import os

from hostile import (HANG, Case, cases, check, check_eq, hprog, lfalloc,
                     read_counts, sized_counts, verified_or_explained)

N = 200000


def with_lfalloc():
    return dict(os.environ, LD_PRELOAD=lfalloc())


def run_signals(c, cmd, opts, native_env, allow_unverified=True):
    """Runs cmd natively and recorded; (stats of the one trace, the
    recorded run's counts file, {size: [allocations, frees]}), printed."""
    c.both(cmd + ["@SIDE@/counts"], opts=opts, native_env=native_env,
           timeout=HANG)
    (t, s), = c.stats(allow_unverified=allow_unverified).items()
    k = read_counts(c.side("rec", "counts"))
    got = sized_counts(t, [555, 777, 999])
    print(f"   {c.what}: {k}; recorded (allocations, frees): {got}; "
          f"counts_verified: {s.get('counts_verified')}, unrecorded: "
          f"{s.get('unrecorded', 0)}, stopped: {s.get('stopped', '-')}")
    return s, k, got


def sigalloc_case(what, mode, native_env=None, opts=()):
    quiet = "alloc" not in mode
    with Case(what) as c:
        s, k, got = run_signals(c, [hprog("sigalloc"), mode, str(N)], opts,
                                native_env, allow_unverified=not quiet)
        if quiet:
            c.check_quiet()
        check(k["ticks"] > 0, f"{what}: the timer never fired ({k})")
        # one block of each size is made before the timer starts
        check_eq(got[777], [N + 1, N + 1], f"{what}: (allocations, frees) "
                 "of the main loop's 777 bytes")
        want = 1 if quiet else k["blocks"] + 1
        if verified_or_explained(c, s, what):
            check_eq(got[555], [want, want], f"{what}: (allocations, frees) "
                     f"of the handler's 555 bytes, {k['ticks']} signals, "
                     "counts_verified: yes")
        else:
            check(got[555][0] <= want, f"{what}: {got[555]} of 555 bytes, "
                  f"more than the {want} made")


def test_handler_allocates_lfalloc():
    sigalloc_case("sigalloc, lfalloc", "alarm-alloc",
                  native_env=with_lfalloc(), opts=["--allocator", lfalloc()])


def test_handler_allocates_glibc():
    sigalloc_case("sigalloc, glibc", "alarm-alloc")


def test_sigprof_quiet_handler():
    sigalloc_case("sigalloc prof-quiet", "prof-quiet")


def sigjmp_case(mode):
    what = f"sigjmp {mode}"
    m = 1000
    with Case(what) as c:
        s, k, got = run_signals(c, [hprog("sigjmp"), mode, str(N), str(m)],
                                ["--allocator", lfalloc()], with_lfalloc())
        check(c.n.rc != 77, f"{what}: raw rt_sigaction is not available")
        check(k["jumps"] > 0, f"{what}: the handler never jumped ({k})")
        if verified_or_explained(c, s, what):
            # a thread left "busy" by a jump would miss these
            check_eq(got[999], [m, m], f"{what}: (allocations, frees) of "
                     "the 999 bytes made after the last jump, "
                     "counts_verified: yes")
            check_eq(got[555], [k["blocks"], k["blocks"]],
                     f"{what}: (allocations, frees) of the handler's 555 "
                     f"bytes, counts_verified: yes ({k})")
            # a jump may abandon a block between malloc and free
            check(N <= got[777][0] <= N + k["jumps"] and
                  got[777][1] >= N - k["jumps"],
                  f"{what}: {got[777]} allocations and frees of 777 bytes "
                  f"for {N} loop rounds and {k['jumps']} jumps, "
                  "counts_verified: yes")


def test_siglongjmp():
    sigjmp_case("sigaction")


def test_siglongjmp_raw():
    sigjmp_case("raw")


def test_bounds_masked():
    """The fast unwinder asks pthread_getattr_np for a thread's stack
    bounds with every signal blocked: glibc reads the main thread's from
    /proc/self/maps with sscanf, whose cleanup a raw handler's siglongjmp
    ran on a string stream without a lock (a crash in 5% of the runs of
    siglongjmp-raw).  The program's own pthread_getattr_np, which the
    recorder's call reaches, notes the mask at each call."""
    with Case("bounds-masked") as c:
        c.both([hprog("getattrmask"), "2000", "@SIDE@/counts"])
        c.stats()
        k = read_counts(c.side("rec", "counts"))
        print(f"   recorded: {k}")
        check(k["calls"] >= 2, f"the recorder asked for the bounds of the "
              f"two threads {k['calls']} times")
        check_eq(k["unmasked"], 0, "calls with SIGALRM not blocked")


def test_signals_race():
    """sigrace under sigrace_shim.so: a SIGRTMIN with a value arrives while
    the recorder is busy, a SIGALRM while the recorder sets the SIGRTMIN
    aside.  Both slots once took the same place: SIGRTMIN lost, a stale
    slot replayed (6,246 SIGRTMIN sent, 0 handled)."""
    shim = os.path.join(os.path.dirname(hprog("sigrace")),
                        "libsigrace_shim.so")
    check(os.path.isfile(shim), f"{shim} is not built")
    env = dict(os.environ, LD_PRELOAD=shim)
    # record itself gets the shim too: a sanitized build's record must not
    # refuse to run with it preloaded before the sanitizer's runtime
    asan = os.environ.get("ASAN_OPTIONS", "")
    rec_env = dict(env, ASAN_OPTIONS=(asan + ":" if asan else "") +
                   "verify_asan_link_order=0")
    want = b"every signal once, with its own siginfo: yes\n"
    with Case("signals-race") as c:
        # natively the shim sends nothing: the counts on stderr differ
        c.native([hprog("sigrace")], env=env, timeout=HANG)
        c.record([hprog("sigrace")], env=rec_env, timeout=HANG)
        check_eq((c.n.rc, c.n.out), (0, want), "sigrace natively")
        check_eq((c.r.rc, c.r.out), (0, want),
                 "sigrace recorded\n" + c.r.describe())
        c.stats()
        err = c.r.err.decode(errors="replace")
        print("   recorded: " + " ".join(
            line for line in err.splitlines() if line.startswith("sigrace:")))
        check("SIGRTMIN sent 0," not in err,
              f"the shim sent nothing under the recorder: {err!r}")


if __name__ == "__main__":
    cases({"sigalloc-lfalloc": [test_handler_allocates_lfalloc],
           "sigalloc-glibc": [test_handler_allocates_glibc],
           "siglongjmp": [test_siglongjmp],
           "siglongjmp-raw": [test_siglongjmp_raw],
           "bounds-masked": [test_bounds_masked],
           "sigprof": [test_sigprof_quiet_handler],
           "signals-race": [test_signals_race]})
