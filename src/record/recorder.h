/* The recorder's state and its event entry points, called by the
 * interposers in preload.c.  Everything here runs inside the recorded
 * program: no malloc, no exit, no crash; on failure recording stops. */
#ifndef HS_RECORDER_H
#define HS_RECORDER_H

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced */
#include <zstd.h>

#include "../format/encoder.h"
#include "guard.h"
#include "lock.h"
#include "modules.h"
#include "stackmap.h"
#include "unwind.h"

#define HS_TLS __attribute__((tls_model("initial-exec")))

/* A heap event of a nested call (see rec_nested), kept aside while its
 * thread holds the lock: written when the thread gives the lock back. */
#define SIDE_EVENTS 4
#define SIDE_DEPTH 32
struct side_event {
	uint8_t kind, fn; /* HS_REC_ALLOC... */
	uint16_t n;
	uint64_t old, ptr, size;
	uintptr_t ips[SIDE_DEPTH];
};

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
	uint32_t seen_gen; /* generation the thread was announced in */
	pid_t tid;
	uintptr_t scratch[HS_DEPTH_MAX]; /* stack of a realloc in flight */
	int nside;
	struct side_event side[SIDE_EVENTS];
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

/* Global state, guarded by lock unless noted. */
struct recorder {
	hs_lock lock;
	hs_event wake_writer; /* a full buffer is pending, or stop */
	hs_event space;       /* the pending buffer was written */
	int failed;
	int started;       /* a trace was started in this process */
	int ended;         /* its end record is written */
	int finishing;     /* the image ends: the last chance to write */
	int fail_kind;     /* FAIL_*: how recording stopped */
	int on_at_fork;    /* recording when fork() was called */
	int stop;
	uint32_t gen;
	pid_t pid;
	/* double buffer: appenders fill buf[active], the writer compresses
	 * buf[!active] while pending */
	uint8_t *buf[2];
	size_t cap, len, pending_len;
	int active, pending;
	struct hs_enc enc;
	int events_since_tick;
	uint64_t counts[HS_COUNT_MAX];
	struct modlist known, scratch;
	uint64_t mod_generation;
	/* output */
	int fd;
	uint64_t file_off; /* end of the last complete chunk */
	dev_t dev;         /* identity of the trace file behind fd */
	ino_t ino;
	char path[4096];
	ZSTD_CCtx *cctx;
	uint8_t *cout;
	uint8_t *work; /* room to transpose a buffer into columns */
	size_t cout_cap;
	uint64_t last_flush_ns;
	pthread_t writer;
	int writer_running;
	/* settings */
	int depth;
	int interval_ms;
	int follow;
	int record_mmap;
	int has_mallinfo;    /* the allocator is glibc's */
	int mallinfo;        /* MALLINFO_*: when marks read mallinfo2 */
	uint64_t mallinfo_next_ns; /* auto: not before this time */
	uint64_t start_ns; /* CLOCK_MONOTONIC at start */
	int argc;
	char **argv;
	char stop_reason[512]; /* why recording stopped, for the trace */
};
extern struct recorder hs_rec;

enum { MALLINFO_NEVER, MALLINFO_AUTO, MALLINFO_ALWAYS };
/* FAIL_IO: the trace cannot be written (a full disk); FAIL_FD: the
 * program closed or replaced its descriptor; FAIL_OTHER: the trace is
 * fine, recording is not */
enum { FAIL_OTHER, FAIL_IO, FAIL_FD };

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

void recorder_orphan(void);

static inline enum hook_mode hook_mode(const struct tstate *t)
{
	if (__builtin_expect(hs_live->on && !t->busy, 1))
		return HOOK_RECORD;
	if (!hs_live->on) {
		if (__builtin_expect(!hs_live->owner && hs_rec.started, 0))
			recorder_orphan();
		return HOOK_PASS;
	}
	return hs_guard.internal || hs_guard.real ? HOOK_INNER : HOOK_NESTED;
}

void recorder_init(int argc, char **argv);
void recorder_finish(unsigned reason);
void recorder_before_exec(const char *path);
void recorder_exec_failed(void); /* exec returned: record again */
void recorder_fork_prepare(void);
void recorder_fork_parent(void);
void recorder_fork_child(void);

/* Events.  Each captures the caller's stack where the event has one. */
void rec_alloc(unsigned fn, const void *p, size_t size);
void rec_fail(unsigned fn, size_t size);
void rec_free(unsigned fn, const void *p); /* before the real free */
void rec_munmap(const void *p, size_t len);
/* A call of the allocation API made while the thread runs recorder code
 * (busy, not guard.h's internal): the allocator calling itself, or a
 * signal handler that interrupted the recorder and that it could not
 * defer (one installed by a raw system call, or a fault's).  Its stack
 * comes from libunwind, never from the fast unwinder, whose state the
 * interrupted code may be changing; when the thread holds the lock, the
 * event waits aside until it gives the lock back.  ra: the caller. */
void rec_nested(unsigned kind, unsigned fn, const void *old, const void *p,
		size_t size, const void *ra);
/* A realloc-like call of a nested caller: the lock is taken across it
 * (rec_nested_lock: 0 when the thread holds it already), then the event
 * is recorded, or set aside when the lock was the thread's. */
int rec_nested_lock(void);

void rec_nested_realloc_end(int locked, unsigned fn, const void *old,
			    const void *ptr, size_t size, int n,
			    const uintptr_t *ips);
/* The program left recorder code it had interrupted, with longjmp from
 * a signal handler (signals.c): its locks are given back, the event in
 * flight is counted as unrecorded. */
void recorder_abandoned(struct tstate *t);
/* realloc-like calls run between begin and end with the lock held, so
 * that no other thread can reuse the old address in between. */
void rec_realloc_begin(int *depth, uintptr_t *ips);
void rec_realloc_end(unsigned fn, const void *old, const void *p,
		     size_t size, int depth, const uintptr_t *ips);
/* the same for mremap: recorded only for the program's anonymous maps */
void rec_mremap_end(const void *old, size_t old_len, const void *p,
		    size_t len, int depth, const uintptr_t *ips);
void rec_mark(unsigned kind, const char *label);
void rec_thread_name(const char *name);
void rec_modules_changed(void);

/* The recorder lock, for program threads: giving it back writes the
 * thread's nested events kept aside meanwhile. */
void rec_lock(void);
void rec_unlock(void);

/* fd, moved to a descriptor out of the program's way (from `from` up,
 * HS_FD_HIGH for the trace and statm; close-on-exec), or left where it
 * is if none can be had. */
#define HS_FD_HIGH 700
int fd_high(int fd, int from);
/* Whether fd is open on the file (dev, ino). */
int fd_is(int fd, dev_t dev, ino_t ino);

/* writer.c */
int writer_start(void);
void writer_stop(void);
uint64_t now_ns(void);
/* Opens /proc/self/statm for the samples (at the start of a trace);
 * around fork, keeps it whole; closes it in a forked child (whose trace
 * may not start). */
void statm_open(void);
void statm_fork_prepare(void);
void statm_fork_parent(void);
void statm_close(void);
void statm_abandoned(int self); /* its lock, if self holds it */
int statm_owned(int self);
/* RSS, mallinfo2 when asked and the allocator is glibc, and the end of
 * the brk heap (0: unknown). */
int take_sample(uint64_t *rss, struct mallinfo2 *mi, int *has_mi,
		int with_mallinfo, uint64_t *brk); /* 0: RSS unknown */
/* With the lock held: appends a sample record. */
void sample_append(uint64_t t, uint64_t rss, const struct mallinfo2 *mi,
		   int has_mi, uint64_t brk);
/* With the lock held: waits until the writer has no buffer in hand (the
 * lock is released meanwhile: other threads may append). */
int wait_idle(void);
/* With the lock held: writes everything buffered, then extra bytes. */
int flush_sync(const uint8_t *extra, size_t n);
/* One line (a newline is added) on standard error, by write(2). */
void hs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hs_fail(const char *what, int err);
/* Lock held, after a failure: the trace's last chunk says why. */
void write_stop(void);
/* Compresses n bytes of records and writes them as a chunk; the caller
 * owns the compression context (the writer thread, or it is stopped). */
int write_chunk(const uint8_t *src, size_t n);
void hs_fail_path(const char *verb, int err); /* "VERB <trace path>" */
int write_all(int fd, const void *p, size_t n);
/* With the lock held: makes room for n bytes, swapping buffers if needed;
 * NULL when recording stopped. */
uint8_t *reserve(size_t n);
void commit(uint8_t *end);

#endif
