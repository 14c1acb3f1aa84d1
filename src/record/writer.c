/* The output half of the recorder: the double buffer, the writer thread
 * that compresses full buffers into chunks, periodic samples and flushes.
 * Allocating threads only copy bytes; compression happens here. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"

#define TICK_NS (10 * 1000000ull)          /* time records */
#define FLUSH_NS (500 * 1000000ull)        /* at least twice per second */

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec -
	       hs_rec.start_ns;
}

void hs_say(const char *fmt, ...)
{
	char msg[4400];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	(void)!write(2, msg, (size_t)n);
}

void hs_fail(const char *what, int err)
{
	if (__atomic_exchange_n(&hs_rec.failed, 1, __ATOMIC_SEQ_CST))
		return;
	hs_live->on = 0;
	/* the trace's own last words (write_stop) */
	snprintf(hs_rec.stop_reason, sizeof(hs_rec.stop_reason), "%s%s%s",
		 what, err ? ": " : "", err ? strerror(err) : "");
	hs_say("heapslope: recording stopped: %s (the program continues)",
	       hs_rec.stop_reason);
	event_signal(&hs_rec.space, 1);
	event_signal(&hs_rec.wake_writer, 1);
}

void hs_fail_path(const char *verb, int err)
{
	char what[4200];
	snprintf(what, sizeof(what), "%s %.4000s", verb, hs_rec.path);
	hs_fail(what, err);
}

/* A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills
 * the program: it is blocked meanwhile, and an instance ours raised is
 * taken back before the mask is restored. */
int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	sigset_t xfsz, old;
	int rc = 0, err = 0;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : ENOSPC;
			rc = -1;
			break;
		}
		b += w;
		n -= (size_t)w;
	}
	if (err == EFBIG) {
		struct timespec zero = { 0, 0 };
		(void)sigtimedwait(&xfsz, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		errno = err;
	return rc;
}

/* Compresses and writes one buffer as a chunk; the caller owns cctx. */
int write_chunk(const uint8_t *src, size_t n)
{
	if (!n)
		return 0;
	size_t c = chunk_encode(hs_rec.cctx, src, n, hs_rec.cout,
				hs_rec.cout_cap, hs_rec.work);
	if (!c) {
		hs_fail("zstd compression failed", 0);
		return -1;
	}
	if (!fd_is(hs_rec.fd, hs_rec.dev, hs_rec.ino)) {
		/* the program closed our descriptor (and may have reused its
		 * number for a file of its own): never write there.  What is
		 * buffered is written at the end (write_stop) */
		hs_rec.fail_kind = FAIL_FD;
		hs_fail_path("the program closed or replaced the descriptor of", 0);
		return -1;
	}
	if (write_all(hs_rec.fd, hs_rec.cout, c)) {
		int err = errno;
		/* a full disk: cut the partial chunk so the trace stays whole
		 * up to its last complete chunk */
		(void)!ftruncate(hs_rec.fd, (off_t)hs_rec.file_off);
		if (!hs_rec.failed)
			hs_rec.fail_kind = FAIL_IO;
		hs_fail_path("write", err);
		return -1;
	}
	hs_rec.file_off += c;
	return 0;
}

/* Lock held.  Hands the active buffer to the writer, which must be idle. */
static void swap_buffers(void)
{
	struct recorder *R = &hs_rec;
	R->pending = 1;
	R->pending_len = R->len;
	R->active ^= 1;
	R->len = 0;
	enc_reset(&R->enc);
	/* every chunk starts with the time, so it decodes on its own */
	uint8_t *p = enc_timerec(&R->enc, R->buf[R->active], now_ns());
	R->len = (size_t)(p - R->buf[R->active]);
	event_signal(&R->wake_writer, 0);
}

uint8_t *reserve(size_t n)
{
	struct recorder *R = &hs_rec;
	if (R->len + n <= R->cap)
		return R->buf[R->active] + R->len;
	if (n + 64 > R->cap) {
		hs_fail("record larger than the buffer", 0);
		return NULL;
	}
	if (R->pending && getpid() != R->pid) {
		/* a child made without fork()'s handlers, where MADV_WIPEONFORK
		 * did not stop it: it has no writer to wait for */
		hs_live->on = 0;
		return NULL;
	}
	while (R->pending && hs_live->on)
		event_wait(&R->space, &R->lock, hs_tid(), 0);
	if (!hs_live->on)
		return NULL;
	swap_buffers();
	return R->buf[R->active] + R->len;
}

void commit(uint8_t *end)
{
	hs_rec.len = (size_t)(end - hs_rec.buf[hs_rec.active]);
}

int wait_idle(void)
{
	struct recorder *R = &hs_rec;
	if (R->pending && !R->writer_running) {
		if (write_chunk(R->buf[!R->active], R->pending_len))
			return -1;
		R->pending = 0;
	}
	while (R->pending && !R->failed)
		event_wait(&R->space, &R->lock, hs_tid(), 0);
	return R->failed ? -1 : 0;
}

int flush_sync(const uint8_t *extra, size_t n)
{
	struct recorder *R = &hs_rec;
	if (wait_idle())
		return -1;
	if (extra && n) {
		if (R->len + n > R->cap) {
			if (write_chunk(R->buf[R->active], R->len))
				return -1;
			R->len = 0;
		}
		memcpy(R->buf[R->active] + R->len, extra, n);
		R->len += n;
	}
	if (write_chunk(R->buf[R->active], R->len))
		return -1;
	R->len = 0;
	enc_reset(&R->enc);
	R->last_flush_ns = now_ns();
	return 0;
}

/* mallinfo2 walks every free chunk of every arena with the arena locked:
 * on a fragmented heap that can take a millisecond, longer than a short
 * batch.  In auto mode each call buys the right to the next one only
 * after MALLINFO_SPACING times its own duration, so that it costs at most
 * 1/MALLINFO_SPACING of the run: every mark of a program whose batches
 * are long enough, evenly spaced marks otherwise.  Marks on several
 * threads race on the times harmlessly (one extra call at worst). */
#define MALLINFO_SPACING 50

static int mallinfo_due(void)
{
	const struct recorder *R = &hs_rec;
	if (!R->has_mallinfo || R->mallinfo == MALLINFO_NEVER)
		return 0;
	return R->mallinfo == MALLINFO_ALWAYS ||
	       now_ns() >= __atomic_load_n(&R->mallinfo_next_ns,
					   __ATOMIC_RELAXED);
}

static void mallinfo_spent(uint64_t start, uint64_t end)
{
	__atomic_store_n(&hs_rec.mallinfo_next_ns,
			 end + MALLINFO_SPACING * (end - start),
			 __ATOMIC_RELAXED);
}

/* /proc/self/statm, kept open on a high descriptor.  It is opened when a
 * trace starts, before the program runs or, in a forked child, before it
 * goes on, so that sampling does not take one of the program's descriptor
 * numbers.  The program may close it (or reuse the number): the identity
 * check before each read notices, and it is opened again then (open
 * takes the lowest free number for a moment).  Our descriptor alone has
 * O_NONBLOCK, which procfs ignores: a descriptor the program opened on
 * the same file is never taken for ours when closing. */
static int statm_fd = -1;
static dev_t statm_dev;
static ino_t statm_ino;
static hs_lock statm_lock; /* taken to open it, and across fork */

static int statm_ours(int fd)
{
	return fd_is(fd, statm_dev, statm_ino);
}

void statm_open(void)
{
	lock_take(&statm_lock, hs_tid());
	/* another thread may have opened it meanwhile; the old number is
	 * not ours any more: never closed */
	if (!statm_ours(__atomic_load_n(&statm_fd, __ATOMIC_RELAXED))) {
		int fd = open("/proc/self/statm",
			      O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			fd = fd_high(fd, HS_FD_HIGH);
			struct stat st;
			if (fstat(fd, &st) == 0) {
				statm_dev = st.st_dev;
				statm_ino = st.st_ino;
			} else {
				close(fd);
				fd = -1;
			}
		}
		__atomic_store_n(&statm_fd, fd, __ATOMIC_RELEASE);
	}
	lock_give(&statm_lock);
}

void statm_fork_prepare(void)
{
	lock_take(&statm_lock, hs_tid());
}

int statm_owned(int self)
{
	return lock_owned(&statm_lock, self);
}

void statm_abandoned(int self)
{
	if (lock_owned(&statm_lock, self))
		lock_give(&statm_lock);
}

void statm_fork_parent(void)
{
	lock_give(&statm_lock);
}

void statm_close(void)
{
	statm_lock.v = 0; /* held across fork by the thread that forked */
	int fd = statm_fd, fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (fl >= 0 && (fl & O_NONBLOCK) && statm_ours(fd))
		close(fd);
	statm_fd = -1;
}

static ssize_t statm_read(char *buf, size_t cap)
{
	int fd = __atomic_load_n(&statm_fd, __ATOMIC_ACQUIRE);
	if (!statm_ours(fd)) {
		statm_open();
		fd = __atomic_load_n(&statm_fd, __ATOMIC_ACQUIRE);
	}
	return fd >= 0 ? pread(fd, buf, cap, 0) : -1;
}

int take_sample(uint64_t *rss, struct mallinfo2 *mi, int *has_mi,
		int with_mallinfo, uint64_t *brk)
{
	char buf[128];
	int ok = 0;
	*rss = 0;
	ssize_t n = statm_read(buf, sizeof(buf) - 1);
	if (n > 0) {
		/* strtoul, not sscanf: glibc's scanf registers a cleanup
		 * that a handler's longjmp out of it runs on a string
		 * stream without a lock, and crashes */
		char *end, *at;
		buf[n] = 0;
		strtoul(buf, &end, 10);
		unsigned long resident = strtoul(end, &at, 10);
		ok = end != buf && at != end;
		*rss = (uint64_t)resident * (uint64_t)getpagesize();
	}
	/* the end of the brk heap: what glibc keeps at its top shows.  The
	 * system call, not sbrk(0): that may set libc's own break variable,
	 * unsynchronized with the program's sbrk calls */
	long end = syscall(SYS_brk, 0);
	*brk = end > 0 ? (uint64_t)end : 0;
	*has_mi = with_mallinfo && mallinfo_due();
	if (*has_mi) {
		uint64_t t0 = now_ns();
		*mi = mallinfo2();
		mallinfo_spent(t0, now_ns());
	} else {
		memset(mi, 0, sizeof(*mi));
	}
	return ok;
}

void sample_append(uint64_t t, uint64_t rss, const struct mallinfo2 *mi,
		   int has_mi, uint64_t brk)
{
	uint8_t *p = reserve(1 + 11 * HS_VARINT_MAX);
	if (!p)
		return;
	*p++ = HS_REC_SAMPLE;
	p = enc_time(&hs_rec.enc, p, t);
	p = varint_put(p, rss);
	p = varint_put(p, (has_mi ? HS_SAMPLE_MALLINFO : 0) |
				  (brk ? HS_SAMPLE_BRK : 0));
	if (has_mi) {
		p = varint_put(p, mi->arena);
		p = varint_put(p, mi->ordblks);
		p = varint_put(p, mi->hblks);
		p = varint_put(p, mi->hblkhd);
		p = varint_put(p, mi->uordblks);
		p = varint_put(p, mi->fordblks);
		p = varint_put(p, mi->keepcost);
	}
	if (brk)
		p = varint_put(p, brk);
	commit(p);
	hs_rec.counts[HS_COUNT_SAMPLES]++;
}

static void *writer_main(void *arg)
{
	(void)arg;
	struct recorder *R = &hs_rec;
	hs_thread.busy = 1; /* nothing this thread does is the program's */
	internal_begin();
	int self = hs_tid();
	uint64_t next_tick = now_ns() + TICK_NS;
	uint64_t interval = (uint64_t)R->interval_ms * 1000000ull;
	uint64_t next_sample = interval ? now_ns() + interval : UINT64_MAX;

	lock_take(&R->lock, self);
	while (hs_live->on && !(R->stop && !R->pending)) {
		if (!R->pending && !R->stop) {
			uint64_t wake = next_tick < next_sample ? next_tick
								: next_sample;
			uint64_t now = now_ns();
			event_wait(&R->wake_writer, &R->lock, self,
				   wake > now ? wake - now : 1);
			if (!hs_live->on)
				break;
		}
		uint64_t t = now_ns();
		if (t >= next_tick) {
			next_tick = t + TICK_NS;
			if (R->events_since_tick) {
				uint8_t *p = reserve(1 + HS_VARINT_MAX);
				if (p)
					commit(enc_timerec(&R->enc, p, t));
				R->events_since_tick = 0;
			}
		}
		if (t >= next_sample) {
			next_sample = t + interval;
			uint64_t rss;
			struct mallinfo2 mi;
			int has_mi;
			uint64_t brk;
			lock_give(&R->lock);
			/* RSS only: mallinfo2 walks the arena under its lock,
			 * stalling the program; the analyzer needs the
			 * allocator's state at marks */
			int ok = take_sample(&rss, &mi, &has_mi, 0, &brk);
			lock_take(&R->lock, self);
			if (hs_live->on && ok)
				sample_append(now_ns(), rss, &mi, has_mi, brk);
		}
		/* the loader's lock is taken by threads that then free
		 * memory (dlclose): never ask it with our lock held */
		lock_give(&R->lock);
		if (modules_generation() != R->mod_generation)
			rec_modules_changed();
		lock_take(&R->lock, self);
		if (!R->pending && R->len && t - R->last_flush_ns >= FLUSH_NS &&
		    hs_live->on)
			swap_buffers();
		if (R->pending) {
			const uint8_t *src = R->buf[!R->active];
			size_t n = R->pending_len;
			lock_give(&R->lock);
			int rc = write_chunk(src, n);
			lock_take(&R->lock, self);
			if (rc && R->fail_kind == FAIL_FD)
				break; /* kept pending for write_stop */
			R->pending = 0;
			R->last_flush_ns = now_ns();
			event_signal(&R->space, 1);
			if (rc)
				break;
		}
	}
	if (R->failed)
		write_stop();
	lock_give(&R->lock);
	return NULL;
}

int writer_start(void)
{
	sigset_t all, old;
	sigfillset(&all);
	/* the writer takes none of the program's signals */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&hs_rec.writer, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		hs_fail("cannot start the writer thread", rc);
		return -1;
	}
	hs_rec.writer_running = 1;
	return 0;
}

void writer_stop(void)
{
	if (!hs_rec.writer_running)
		return;
	lock_take(&hs_rec.lock, hs_tid());
	hs_rec.stop = 1;
	event_signal(&hs_rec.wake_writer, 1);
	lock_give(&hs_rec.lock);
	pthread_join(hs_rec.writer, NULL);
	hs_rec.writer_running = 0;
}
