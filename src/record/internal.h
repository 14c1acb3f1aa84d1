/* What the recorder's modules share among themselves, below the event API
 * of recorder.h: the state of the trace being written, and each module's
 * functions, by file.  Every event is appended under one short lock
 * (hs_rec.lock), which is what keeps the order of a free and a later
 * reuse of the same address across threads. */
#ifndef HS_INTERNAL_H
#define HS_INTERNAL_H

#include <malloc.h>
#include <signal.h>
#include <sys/types.h>

#include "../format/encoder.h"
#include "modules.h"
#include "recorder.h"

/* The trace this process writes.  Guarded by lock unless noted. */
struct recorder {
	hs_rlock lock;       /* every append (biased: lock.h) */
	hs_lock mod_lock;    /* taken to collect the modules (events.c) */
	uint32_t gen;        /* a forked child's trace is a new generation */
	pid_t pid;           /* the process the state is for */
	struct hs_enc enc;   /* delta state of the chunk being filled */
	int events_since_tick;
	uint64_t counts[HS_COUNT_MAX];
	int failed;          /* recording stopped on an error */
	int fail_kind;       /* FAIL_*: how it stopped */
	int ended;           /* the trace's end record is written */
	int exiting;         /* its exiting record is written */
	int finishing;       /* the image ends: the last chance to write */
	int on_at_fork;      /* recording when fork() was called */
	uint64_t start_ns;   /* CLOCK_MONOTONIC at the trace's start */
	int argc;
	char **argv;
	char stop_reason[512]; /* why recording stopped, for the trace */
};
extern struct recorder hs_rec;

/* FAIL_IO: the trace cannot be written (a full disk); FAIL_FD: the
 * program closed or replaced its descriptor; FAIL_OTHER: the trace is
 * fine, recording is not */
enum { FAIL_OTHER, FAIL_IO, FAIL_FD };

/* ---- settings.c: the recorder's side of launch/contract.h ---- */

/* What `heapslope record` passed besides hs_settings. */
struct launch_env {
	char output[4096];   /* trace name template */
	char report[108];    /* abstract socket of `heapslope record` */
	char fd_token[128];  /* the first image's trace: fd:pid:dev:ino */
	char fd_path[4096];  /* and its path */
	char allocator[256]; /* for the header */
	char unwind[32];     /* unwinder, "" for the default */
	long root_pid;       /* the process `heapslope record` started */
	long execed_pid;     /* the process that exec'd this image, or 0 */
};
extern struct launch_env hs_env;
void settings_read(void);

/* ---- lifecycle.c ---- */

/* ns since the trace started */
uint64_t now_ns(void);
/* The nanoseconds from now to deadline (now_ns), 0 if it is past. */
uint64_t ns_until(uint64_t deadline);

/* ---- fail.c: how recording stops ---- */

/* Notes which file standard error is as the image starts: what hs_say
 * writes goes there only, never to a file of the program's that it put
 * on descriptor 2 since (a daemon's data file, a pipe a child's output is
 * read from). */
void hs_say_init(void);
/* One line (a newline is added) on standard error, by write(2), if it is
 * still the file it was as the image started (else nothing: the trace
 * keeps the reason of a stop). */
void hs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Stops recording, once: says why on stderr, keeps it for the trace's
 * last chunk (trace_write_stop) and wakes whoever waits on the writer. */
void hs_fail(const char *what, int err);
/* Around a write or truncate of the recorder's past RLIMIT_FSIZE, which
 * raises SIGXFSZ, whose default action kills the program: hs_xfsz_hold
 * blocks it, hs_xfsz_let_go takes back an instance the call raised
 * (err: its errno, EFBIG then; never when one was pending before, the
 * program's) and unblocks it if it was not blocked before. */
struct hs_xfsz {
	sigset_t old;
	int pending; /* one was pending (the program's) before the call */
};
void hs_xfsz_hold(struct hs_xfsz *x);
void hs_xfsz_let_go(const struct hs_xfsz *x, int err);
/* write(2) by the raw call: not a cancellation point (the recorder writes
 * with its lock held, in threads of the program's) */
ssize_t hs_write(int fd, const void *p, size_t n);

/* ---- events.c ---- */

/* Forgets the thread's events kept aside (a longjmp left them, or a
 * forked child has its parent's). */
void events_forget_thread(void);
/* The lists of modules, at start-up; -1 when out of memory. */
int events_modules_create(void);
/* Writes the records of the modules loaded or unloaded since the last
 * call; takes the loader's lock, so never call it with hs_rec.lock. */
void events_modules_changed(void);
/* The same if the loader's list changed since. */
void events_modules_poll(void);
/* A forked child's trace has seen no module. */
void events_modules_reset(void);
/* Nor any of the program's mappings. */
void events_maps_reset(void);
/* Lock held: the exiting record, now, if CPython began its finalization
 * (the writer's ticks, and each free). */
void events_exiting_poll(void);

/* ---- exiting.c: when the process begins to exit ---- */

/* Finds CPython's runtime state in the image, if it is one (start-up). */
void exiting_init(void);
/* Whether this image is CPython (it exports _PyRuntime or Py_Version). */
int exiting_in_python(void);
/* Whether CPython's finalization has begun (any thread). */
int exiting_python(void);
/* _PyRuntime._finalizing, if this image is CPython 3.11 or 3.12 */
extern const uintptr_t *exiting_py_finalizing;

/* ---- stacks.c ---- see stacks.h */

/* ---- buffer.c: the records being filled, before compression ---- */

#define BUFFER_SIZE (2u << 20) /* each of the two */
/* mapped for each: a chunk is compressed in place of its rows */
#define BUFFER_ROOM chunk_bound(BUFFER_SIZE)
int buffer_create(void);
/* With the lock held: room for n bytes, swapping buffers if needed;
 * NULL when recording stopped. */
uint8_t *buffer_reserve(size_t n);
void buffer_commit(uint8_t *end);
/* The trace's first chunk starts, at time 0. */
void buffer_start(void);
/* Forgets what is buffered (a forked child's is its parent's). */
void buffer_reset(void);
/* With the lock held: waits until the writer has no buffer in hand (the
 * lock is released meanwhile: other threads may append). */
int buffer_wait_idle(void);
/* With the lock held: writes everything buffered, then extra bytes in a
 * chunk of their own. */
int buffer_flush(const uint8_t *extra, size_t n);
/* With the lock held, the writer stopped: writes what is buffered;
 * what cannot be written stays. */
void buffer_drain(void);
/* For the writer thread, lock held: the buffer handed over, if any. */
int buffer_pending(uint8_t **src, size_t *n);
/* It was written (or given up); the appenders may go on. */
void buffer_written(void);
/* Hands the active buffer over if it holds records and nothing was
 * written for `age` ns. */
void buffer_flush_due(uint64_t t, uint64_t age);
/* Recording stopped: nobody waits for room any more. */
void buffer_unblock(void);

/* ---- writer.c: the thread that compresses and writes chunks ---- */

int writer_create(void);
int writer_start(void);
void writer_stop(void);
/* The same, then waits (a little) until the kernel has taken the thread
 * out of the process: calls it refuses to a process of several threads
 * come next. */
void writer_stop_reaped(void);
/* The same from a handler of a signal the process dies of: the lock
 * taken and the writer waited for until deadline (now_ns) at most; 0 if
 * it stopped, -1 if not (it may still write).  It is not joined. */
int writer_stop_by(uint64_t deadline);
/* The writer ended by itself (recording stopped): joins it. */
void writer_join(void);
int writer_running(void);
/* A forked child has no writer. */
void writer_forget(void);
/* Lock held, on the writer thread (writer_self), a buffer pending:
 * writes it, giving the lock away meanwhile; -1 if that failed. */
int writer_write_pending(void);
int writer_self(int self);
/* Wakes it: a buffer was handed over (all: or recording stopped). */
void writer_wake(int all);
/* Compresses n bytes of records into a chunk at dst, of cap >=
 * chunk_bound(n) bytes; its length, 0 on failure.  The caller owns the
 * compression context: the writer thread, or the writer is stopped. */
size_t writer_compress(const uint8_t *src, size_t n, uint8_t *dst,
		       size_t cap);
/* Compresses n bytes of records in a buffer (buffer.c) into a chunk, in
 * its place, and writes it.  After a failed write the buffer holds that
 * chunk, which a retry writes. */
int write_chunk(uint8_t *rows, size_t n);
/* The buffers were reset: no chunk waits in one. */
void write_chunk_forget(void);

/* ---- sampler.c: RSS, mallinfo2 and the program break ---- */

struct sample {
	uint64_t rss;
	uint64_t brk;     /* end of the brk heap; 0: unknown */
	int has_mi;
	struct mallinfo2 mi;
};
/* Opens /proc/self/statm for the samples (at the start of a trace);
 * around fork, keeps it whole; closes it in a forked child (whose trace
 * may not start). */
void sampler_open(void);
void sampler_close(void);
void sampler_fork_prepare(void);
void sampler_fork_parent(void);
void sampler_abandoned(int self); /* its lock, if self holds it */
int sampler_owned(int self);
/* The mallinfo2 schedule starts again with the trace's clock. */
void sampler_restart(void);
/* RSS, and mallinfo2 when asked and due and the heap is glibc's; 0 when
 * RSS is unknown. */
int sampler_take(struct sample *s, int with_mallinfo);
/* With the lock held: appends a sample record. */
void sampler_append(uint64_t t, const struct sample *s);

/* ---- trace.c: the trace file ---- */

/* Opens this process's trace (adopt: the one record opened, if the
 * token says it is ours), out of the program's way; 0 or -1. */
int trace_open(int adopt);
int trace_write_header(unsigned options);
/* Tells `heapslope record` where the trace is. */
void trace_report(void);
/* Writes a whole chunk at the end of the trace; -1 (and recording
 * stops) if it cannot be. */
int trace_write(const uint8_t *chunk, size_t n);
/* Lock held, after a failure: the trace's last chunk says why. */
void trace_write_stop(void);
int trace_has_fd(void);
/* In a new process: the parent's trace is not ours to write; the
 * program may have put a file of its own on its number. */
void trace_let_go(void);
/* No trace here after all: the descriptor record opened for this
 * process is not the program's to keep. */
void trace_drop_token(void);
/* Whether fd is open on the file (dev, ino). */
int fd_is(int fd, dev_t dev, ino_t ino);

#endif
