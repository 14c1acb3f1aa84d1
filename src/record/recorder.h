/* The recorder's event API, for the interposers (preload.c, process.c,
 * cxx.c, signals.c): they tell it what the program's calls did, as they
 * happen.  Everything behind it runs inside the recorded program: no
 * malloc, no exit, no crash; on failure recording stops.  What the
 * recorder's own modules share among themselves is in internal.h. */
#ifndef HS_RECORDER_H
#define HS_RECORDER_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "../format/trace_format.h"
#include "../launch/contract.h"
#include "guard.h"
#include "lock.h"

#define HS_TLS __attribute__((tls_model("initial-exec")))

/* Signals that arrived while the thread was busy, kept blocked until it
 * is not (signals.c); pid: the process it arrived in (a forked child
 * keeps its own, not its parent's). */
#define DEFER_MAX 4
struct deferred {
	int sig;
	pid_t pid;
	siginfo_t info;
};

/* Per-thread state.  busy counts the recorder's entries on this thread:
 * while it is set the thread runs recorder code (or must not be recorded
 * at all), signal handlers wait, and allocations made underneath are
 * either the recorder's own (guard.h) or nested calls (rec_nested). */
struct tstate {
	int busy;
	uintptr_t busy_sp; /* frame of the outermost busy entry */
	uint32_t seen_gen; /* trace generation the thread was announced in */
	pid_t tid;
	uintptr_t scratch[HS_DEPTH_MAX]; /* stack of a realloc in flight */
	int ndeferred;
	struct deferred deferred[DEFER_MAX];
	int fork_nested; /* fork() while this thread held a lock */
};
extern __thread struct tstate hs_thread HS_TLS;

/* What a forked process must not inherit: a page the kernel gives a
 * child as zeros (MADV_WIPEONFORK), so that a process made without
 * fork()'s handlers (_Fork, clone) records nothing and never waits on
 * its parent's locks or writer. */
struct live {
	int on;    /* recording: read without the lock by the hooks */
	int owner; /* the recorder state belongs to this process */
	hs_lock table_lock; /* signals.c's table of the program's handlers */
};
extern struct live *hs_live;
/* A trace was started in this process (unlike hs_live->owner, kept by a
 * child made without fork()'s handlers: that is how it is told). */
extern int hs_started;

/* Allocations the program made before its trace started (the loader's,
 * its libraries' constructors'): not recorded, counted for the trace's
 * header, since their frees are.  The recorder's own and the
 * allocator's inner calls are not counted. */
extern int hs_begun; /* the recorder's start-up is done: counting ends
		      * (allocations of other threads between there and
		      * recording's first event are neither) */
extern uint64_t hs_before_allocs, hs_before_bytes;
extern __thread unsigned hs_before_mine /* this thread's count */
	__attribute__((tls_model("initial-exec")));
static inline int before_start(void)
{
	return __builtin_expect(!__atomic_load_n(&hs_begun, __ATOMIC_RELAXED),
				0);
}
static inline void note_before_start(const void *p, size_t n)
{
	if (before_start() && p && !hs_guard.internal && !hs_guard.real) {
		hs_before_mine++;
		__atomic_add_fetch(&hs_before_allocs, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&hs_before_bytes, n, __ATOMIC_RELAXED);
	}
}

/* What `heapslope record` asked for (launch/contract.h), read at
 * start-up (settings.c). */
struct settings {
	int depth;
	int interval_ms;
	int follow;
	int record_mmap;
	int python;        /* Python frames are read (python.c) */
	int pymalloc_set;  /* record set PYTHONMALLOC=malloc, still in force */
	int mallinfo;      /* enum hs_mallinfo: when marks read mallinfo2 */
	int glibc_heap;    /* glibc's malloc is underneath: mallinfo2 says
			    * how its heap is used */
	int record_operators; /* C++ new and delete are recorded as such
			       * (cxx.c): the allocator underneath has
			       * operators of its own, which never reach
			       * malloc */
	int writer_stall_ms;  /* HS_ENV_TEST_WRITER_STALL */
	int test_py_verify;   /* HS_ENV_TEST_PY_VERIFY */
};
extern struct settings hs_settings;

static inline pid_t hs_tid(void)
{
	struct tstate *t = &hs_thread;
	if (__builtin_expect(!t->tid, 0))
		t->tid = gettid();
	return t->tid;
}

static inline int recorder_wants(const struct tstate *t)
{
	return hs_live->on && !t->busy;
}

/* signals.c: lets the signals deferred while busy through; in a forked
 * child, forgets them (they were the parent's) */
void signals_replay(struct tstate *t);
/* Recording started: the signals the program leaves to a default action
 * that ends the process end the trace first (signals.c). */
void signals_arm(void);
void signals_forget(struct tstate *t);

/* The thread enters and leaves recorder code.  Leaving the outermost
 * entry lets the signals that arrived meanwhile through. */
static inline void busy_enter(struct tstate *t)
{
	/* the stack pointer, not __builtin_frame_address: that would give
	 * every hook an RBP frame, which the fast unwinder's skip of our
	 * own frames cannot take */
	if (!t->busy++) {
#if defined(__x86_64__)
		uintptr_t sp;
		__asm__("mov %%rsp, %0" : "=r"(sp));
		t->busy_sp = sp;
#else
		t->busy_sp = (uintptr_t)__builtin_frame_address(0);
#endif
	}
}

static inline void busy_leave(struct tstate *t)
{
	if (!--t->busy && __builtin_expect(t->ndeferred != 0, 0))
		signals_replay(t);
}

/* How an interposer handles a call. */
enum hook_mode {
	HOOK_PASS,   /* not recorded */
	HOOK_RECORD, /* recorded */
	HOOK_NESTED, /* made while the thread runs recorder code: see
		      * rec_nested */
	HOOK_INNER,  /* made while the real allocator or the recorder's own
		      * calls (guard.h) run: theirs (PASS) when the caller is
		      * in those objects, else a nested one (preload.c) */
};

/* A process made without fork()'s handlers (_Fork, clone, a raw system
 * call) found on its first call: recording stays off here. */
void recorder_orphan(void);

static inline enum hook_mode hook_mode(const struct tstate *t)
{
	if (__builtin_expect(hs_live->on && !t->busy, 1))
		return HOOK_RECORD;
	if (!hs_live->on) {
		if (__builtin_expect(!hs_live->owner && hs_started, 0))
			recorder_orphan();
		return HOOK_PASS;
	}
	return hs_guard.internal || hs_guard.real ? HOOK_INNER : HOOK_NESTED;
}

/* ---- lifecycle.c: the image starts, execs, ends ---- */

void recorder_init(int argc, char **argv);
void recorder_end(unsigned reason);
void recorder_before_exec(const char *path);
/* From a handler of signal sig, whose default action ends the process
 * (signals.c): the trace is ended now, as at exit, when that can be done
 * within a bounded time. */
void recorder_end_signal(int sig);
/* The thread holds the recorder's lock in recorder code (not across the
 * allocator's call, as a realloc does): what it writes is half done. */
int recorder_mid_update(void);
void recorder_exec_failed(void); /* exec returned: record again */
/* Around a call the kernel refuses to a process of more than one thread
 * (unshare of a user namespace, setns into one or into a mount
 * namespace): the writer thread stopped, having written what it held
 * (1), or nothing done (0: none running, or the thread is inside the
 * recorder); then started again. */
int recorder_writer_pause(void);
void recorder_writer_resume(int paused);
/* The environment for the image exec is about to start, made from envp
 * in room (cap bytes) when it fits, else in memory mapped for it (*map,
 * *map_size, which the caller unmaps if exec returns). */
char *const *recorder_exec_env(char *const envp[], char *room, size_t cap,
			       void **map, size_t *map_size);
/* The program left recorder code it had interrupted, with longjmp from
 * a signal handler (signals.c): its locks are given back, the event in
 * flight is counted as unrecorded. */
void recorder_abandoned(void);

/* ---- events.c: heap events, each with the caller's stack where the
 * event has one ---- */

void rec_alloc(unsigned fn, const void *p, size_t size);
void rec_fail(unsigned fn, size_t size);
void rec_free(unsigned fn, const void *p); /* before the real free */
/* A call of the allocation API made while the thread runs recorder code
 * (busy, not guard.h's internal): the allocator calling itself, or a
 * signal handler that interrupted the recorder and that it could not
 * defer (one installed by a raw system call, or a fault's).  Its stack
 * comes from libunwind, never from the fast unwinder, whose state the
 * interrupted code may be changing; when the thread holds the lock, the
 * event waits aside until it gives the lock back.  ra: the caller. */
void rec_nested(unsigned kind, unsigned fn, const void *old, const void *p,
		size_t size, const void *ra);
/* The caller's stack, for an event recorded later (operator new):
 * HS_DEPTH_MAX frames of room in ips; returns the depth. */
int rec_stack(uintptr_t *ips);
/* realloc-like calls run between begin and end with the lock held, so
 * that no other thread can reuse the old address in between.  *w: what
 * begin's capture said of its walk (unwind.h), for end; NULL at an end
 * whose frames another capture found. */
struct unwind_walk;
void rec_realloc_begin(int *depth, uintptr_t *ips, struct unwind_walk *w);
void rec_realloc_end(unsigned fn, const void *old, const void *p,
		     size_t size, int depth, const uintptr_t *ips,
		     const struct unwind_walk *w);
/* The same for a nested caller: its stack by libunwind (rec_nested),
 * and the lock taken unless the thread holds it already (returns 0
 * then), in which case the event is set aside. */
int rec_nested_realloc_begin(int *depth, uintptr_t *ips);
void rec_nested_realloc_end(int locked, unsigned fn, const void *old,
			    const void *ptr, size_t size, int n,
			    const uintptr_t *ips);

/* The program's own mappings: mmap (anonymous or of a descriptor) and
 * shmat; those the allocator, the loader or the recorder make are not
 * told.  Only the unmaps and remaps of mappings told are recorded. */
struct map_call {
	uintptr_t addr;
	uint64_t len, prot, flags, offset; /* shmat: shmflg, the shmid */
	int fd;    /* the descriptor mapped, without MAP_ANONYMOUS */
	int shmid; /* shmat's segment, else -1 */
};
void rec_map(const struct map_call *m);
void rec_unmap(const void *addr, size_t len); /* before the real munmap */
void rec_shmdt(const void *addr);             /* before the real shmdt */
/* mprotect succeeded: recorded if it touches a mapping told */
void rec_protect(const void *addr, size_t len, int prot);
/* mremap runs between rec_realloc_begin and this */
void rec_mremap_end(const void *old, size_t old_len, const void *p,
		    size_t len, int flags, int depth, const uintptr_t *ips,
		    const struct unwind_walk *w);
/* The process begins to exit: exit() (the recorder also sees CPython's
 * finalization by itself, exiting.c); what follows is teardown. */
void rec_exiting(void);
/* A call the recorder saw but could not record (counted in the trace). */
void rec_unrecorded(void);
void rec_mark(unsigned kind, const char *label);
/* heapslope_region_begin(name), or with name NULL heapslope_region_end */
void rec_region(const char *name);
void rec_thread_name(const char *name);

/* The recorder lock, for program threads: giving it back writes the
 * thread's nested events kept aside meanwhile. */
void rec_lock(void);
void rec_unlock(void);

/* ---- trace.c: descriptors out of the program's way ---- */

/* fd, moved to a descriptor out of the program's way (from `from` up,
 * HS_FD_HIGH for the trace and statm; close-on-exec), or left where it
 * is if none can be had. */
#define HS_FD_HIGH 700
int fd_high(int fd, int from);

#endif
