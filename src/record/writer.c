/* The writer thread: compresses the buffers handed over into chunks and
 * writes them, flushes at least twice a second, takes the periodic
 * samples and notices new modules.  Allocating threads never compress. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx */
#include <zstd.h>

#include "../base/rmem.h"
#include "internal.h"

/* 3, not 1: the stack records of a program with ever-new deep stacks
 * (import torch) come out 10% smaller, for no more of the writer's time
 * on the simulator (both measured) and 1 MB more of its context */
#define ZSTD_LEVEL 3
#define TICK_NS (10 * 1000000ull)          /* time records */
#define FLUSH_NS (500 * 1000000ull)        /* at least twice per second */
#define ORPHAN_NS (100 * 1000000ull)       /* orphaned() asked this often */

static struct {
	hs_wakeup wake;  /* a full buffer is pending, or stop */
	int stop;
	pthread_t thread;
	int running;
	ZSTD_CCtx *cctx;
	uint8_t *work;  /* room to transpose a buffer into columns */
	int tid;        /* the writer thread's, while it runs */
	int done;       /* it has given everything back and is ending */
	/* glibc's count of the threads that keep the process: when the
	 * last one leaves (pthread_exit from main, then the others return),
	 * glibc ends the process with exit(0).  The writer is not one of
	 * them: it is taken out of the count while it runs.  NULL: not
	 * found (the writer then notices, orphaned()) */
	unsigned *nthreads;
} W;

/* A chunk that was compressed in place of its rows and not written: what
 * a retry of that buffer writes, its rows being gone. */
static struct {
	const uint8_t *at;
	size_t len;
} unwritten;

int writer_create(void)
{
	W.nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
	if (!W.nthreads)
		(void)dlerror();
	/* a static context: its whole workspace is resident before the
	 * first sample, so the first compression does not show up as
	 * program growth */
	size_t ws_size = ZSTD_estimateCCtxSize(ZSTD_LEVEL);
	void *ws = rmem_map_later(ws_size);
	W.work = rmem_map_later(chunk_work_size(BUFFER_SIZE));
	W.cctx = ws ? ZSTD_initStaticCCtx(ws, ws_size) : NULL;
	if (!W.work || !W.cctx)
		return -1;
	ZSTD_CCtx_setParameter(W.cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(W.cctx, ZSTD_c_checksumFlag, 1);
	return 0;
}

size_t writer_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap)
{
	return chunk_encode(W.cctx, src, n, dst, cap, W.work);
}

int write_chunk(uint8_t *rows, size_t n)
{
	if (!n)
		return 0;
	/* in place: the rows are in the columns before the chunk is
	 * written over them (no 2 MiB of output kept resident) */
	size_t c = unwritten.at == rows ? unwritten.len
				       : writer_compress(rows, n, rows,
							 BUFFER_ROOM);
	unwritten.at = NULL;
	if (!c) {
		hs_fail("zstd compression failed", 0);
		return -1;
	}
	if (trace_write(rows, c)) {
		unwritten.at = rows;
		unwritten.len = c;
		return -1;
	}
	return 0;
}

void write_chunk_forget(void)
{
	unwritten.at = NULL;
}

int writer_self(int self)
{
	return __atomic_load_n(&W.tid, __ATOMIC_RELAXED) == self;
}

int writer_write_pending(void)
{
	struct recorder *R = &hs_rec;
	uint8_t *src;
	size_t n;
	if (!buffer_pending(&src, &n))
		return 0;
	rlock_give(&R->lock);
	int rc = write_chunk(src, n);
	rlock_take(&R->lock, W.tid);
	if (rc && R->fail_kind == FAIL_FD)
		return -1; /* kept pending for trace_write_stop */
	buffer_written();
	return rc ? -1 : 0;
}

void writer_wake(int all)
{
	wakeup_signal(&W.wake, all);
}

/* Lock held: a time record, if events came since the last one; the
 * exiting record once CPython began to finalize. */
static void tick(uint64_t t)
{
	if (hs_rec.events_since_tick) {
		uint8_t *p = buffer_reserve(1 + HS_VARINT_MAX);
		if (p)
			buffer_commit(enc_timerec(&hs_rec.enc, p, t));
		hs_rec.events_since_tick = 0;
	}
	events_exiting_poll();
}

/* Lock held, and given back meanwhile: RSS only, since mallinfo2 walks
 * the arena under its lock, stalling the program; the analyzer needs the
 * allocator's state at marks. */
static void sample(int self)
{
	struct sample s;
	rlock_give(&hs_rec.lock);
	int ok = sampler_take(&s, 0);
	rlock_take(&hs_rec.lock, self);
	if (hs_live->on && ok)
		sampler_append(now_ns(), &s);
}

/* Tests: held up, as by a scheduler that runs the program's threads
 * (valgrind's), while the program fills the other buffer. */
static void stall(int self)
{
	int ms = hs_settings.writer_stall_ms;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	rlock_give(&hs_rec.lock);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	rlock_take(&hs_rec.lock, self);
}

/* rmem_settle's: the program is ending, and needs no more of that */
static int stopping(void)
{
	return __atomic_load_n(&W.stop, __ATOMIC_RELAXED) || !hs_live->on;
}

/* path: /proc/self/task/ID/what, ID the main thread's as /proc numbers
 * it (in a pid namespace that kept its parent's /proc, not getpid()'s);
 * -1 if /proc cannot say. */
static int main_task_path(char path[64], const char *what)
{
	char self[16];
	ssize_t l = readlink("/proc/self", self, sizeof(self) - 1);
	if (l <= 0)
		return -1;
	self[l] = 0;
	snprintf(path, 64, "/proc/self/task/%s/%s", self, what);
	return 0;
}

/* The main thread's exit status, as wait reports it (field 52 of its
 * stat); 0 if it cannot be read. */
static int main_status(void)
{
	char path[64], buf[1024];
	if (main_task_path(path, "stat"))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* past the name, which may hold any */
	if (!p)
		return 0;
	p++;
	long v = 0;
	for (int field = 3; field <= 52; field++) {
		char *end;
		while (*p == ' ')
			p++;
		if (field == 3) {
			p++; /* the state, a letter */
			continue;
		}
		v = strtol(p, &end, 10);
		if (end == p)
			return 0;
		p = end;
	}
	return (int)v;
}

/* The program's threads are all gone, the main one included: this one
 * alone keeps the process, which natively would have ended (they left
 * by the raw exit system call, or glibc's count was not found).  The
 * main thread, gone, has no executable in /proc any more, and its
 * remains are the only entry of the task directory besides this
 * thread's. */
static int orphaned(void)
{
	char path[64], link[8];
	struct stat st;
	if (main_task_path(path, "exe") ||
	    readlink(path, link, sizeof(link)) >= 0 || errno != ENOENT ||
	    stat("/proc/self/task", &st) || st.st_nlink != 2 + 2)
		return 0;
	return 1;
}

static void *writer_main(void *arg)
{
	(void)arg;
	struct recorder *R = &hs_rec;
	hs_thread.busy = 1; /* nothing this thread does is the program's */
	internal_begin();
	int self = hs_tid();
	uint64_t next_tick = now_ns() + TICK_NS;
	uint64_t interval = (uint64_t)hs_settings.interval_ms * 1000000ull;
	uint64_t next_sample = interval ? now_ns() + interval : UINT64_MAX;
	uint64_t next_orphan = now_ns() + ORPHAN_NS;
	int orphan = 0;
	uint8_t *src;
	size_t n;

	__atomic_store_n(&W.tid, self, __ATOMIC_RELAXED);
	/* its takes of the lock leave the program thread's bias */
	__atomic_store_n(&R->lock.periodic, self, __ATOMIC_RELAXED);
	/* the recorder's memory made resident here, not in the program's
	 * start; before this thread's first sample (sampler_take) */
	rmem_settle(stopping);
	rlock_take(&R->lock, self);
	while (hs_live->on && !(W.stop && !buffer_pending(&src, &n))) {
		if (!buffer_pending(&src, &n) && !W.stop) {
			uint64_t wake = next_tick < next_sample ? next_tick
								: next_sample;
			uint64_t now = now_ns();
			rwakeup_wait(&W.wake, &R->lock, self,
				   wake > now ? wake - now : 1);
			if (!hs_live->on)
				break;
		}
		if (hs_settings.writer_stall_ms && buffer_pending(&src, &n))
			stall(self);
		uint64_t t = now_ns();
		if (t >= next_tick) {
			next_tick = t + TICK_NS;
			tick(t);
		}
		if (t >= next_sample) {
			next_sample = t + interval;
			sample(self);
		}
		/* the loader's lock is taken by threads that then free
		 * memory (dlclose): never ask it with our lock held */
		rlock_give(&R->lock);
		events_modules_poll();
		if (t >= next_orphan) {
			next_orphan = t + ORPHAN_NS;
			orphan = orphaned();
		}
		rlock_take(&R->lock, self);
		if (orphan)
			break;
		buffer_flush_due(t, FLUSH_NS);
		if (writer_write_pending())
			break;
	}
	if (R->failed)
		trace_write_stop();
	__atomic_store_n(&W.tid, 0, __ATOMIC_RELAXED);
	/* under the lock: a thread waiting for room, whose wake-up from
	 * hs_fail (sent without the lock) it may have missed, sees this */
	buffer_unblock();
	rlock_give(&R->lock);
	if (orphan) {
		/* the trace ended as _exit ends it, then the process with
		 * the main thread's status, as the kernel ends it when its
		 * last thread leaves (the last one's would count here) */
		int status = main_status();
		W.running = 0;
		recorder_end(HS_END__EXIT);
		syscall(SYS_exit_group, status >> 8 & 0xff);
	}
	/* glibc counts this thread out as it ends: counted back in first,
	 * unless the count is 0, when its last thread already called
	 * exit(0) (that exit is why the writer stops), which must not
	 * come again from here */
	unsigned c = W.nthreads ? __atomic_load_n(W.nthreads, __ATOMIC_ACQUIRE)
				: 0;
	while (c && !__atomic_compare_exchange_n(W.nthreads, &c, c + 1, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
		;
	__atomic_store_n(&W.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int writer_start(void)
{
	sigset_t all, old;
	sigfillset(&all);
	W.stop = 0;
	W.done = 0;
	/* the writer takes none of the program's signals */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&W.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		hs_fail("cannot start the writer thread", rc);
		return -1;
	}
	/* counted in by pthread_create: not one that keeps the process */
	if (W.nthreads)
		__atomic_fetch_sub(W.nthreads, 1, __ATOMIC_ACQ_REL);
	W.running = 1;
	return 0;
}

/* Joining the writer may free what glibc allocated for it when it was
 * made (its TLS vector, at once when its stack is too large for glibc's
 * cache): the recorder's own, never the program's.  The thread is marked
 * internal for it, and takes no signal meanwhile: a handler of the
 * program's would run with that mark (a signal the process sends itself
 * is not held back in internal code), its allocations through libc taken
 * for ours. */
static void join(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	internal_begin();
	pthread_join(W.thread, NULL);
	internal_end();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void writer_stop(void)
{
	if (!W.running)
		return;
	rlock_take(&hs_rec.lock, hs_tid());
	W.stop = 1;
	writer_wake(1);
	rlock_give(&hs_rec.lock);
	join();
	W.running = 0;
}

int writer_stop_by(uint64_t deadline)
{
	if (!W.running)
		return 0;
	if (rlock_take_within(&hs_rec.lock, hs_tid(), ns_until(deadline)))
		return -1;
	W.stop = 1;
	writer_wake(1);
	rlock_give(&hs_rec.lock);
	while (!__atomic_load_n(&W.done, __ATOMIC_ACQUIRE)) {
		if (now_ns() >= deadline)
			return -1;
		hs_nap();
	}
	W.running = 0;
	return 0;
}

void writer_stop_reaped(void)
{
	/* (set once the thread runs: it may not have yet) */
	pid_t tid = (pid_t)__atomic_load_n(&W.tid, __ATOMIC_RELAXED);
	writer_stop();
	/* pthread_join returns as the thread's stack is let go, before the
	 * kernel takes the thread out of the process: a tgkill of it fails
	 * from then on.  At most 200 ms. */
	pid_t pid = getpid();
	for (int i = 0; tid > 0 && i < 2000 &&
			syscall(SYS_tgkill, pid, tid, 0) == 0;
	     i++)
		hs_nap();
}

void writer_join(void)
{
	if (W.running) {
		join();
		W.running = 0;
	}
}

int writer_running(void)
{
	return W.running;
}

void writer_forget(void)
{
	W.running = 0;
	W.stop = 0;
	W.tid = 0;
}
