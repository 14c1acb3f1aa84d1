/* Samples of the process's memory: RSS from /proc/self/statm, the end of
 * the brk heap, and at marks glibc's mallinfo2. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "../base/rmem.h"
#include "internal.h"
#include "records.h"

/* mallinfo2 walks every free chunk of every arena with the arena locked:
 * on a fragmented heap that can take a millisecond, longer than a short
 * batch.  In auto mode each call buys the right to the next one only
 * after MALLINFO_SPACING times its own duration, so that it costs at most
 * 1/MALLINFO_SPACING of the run: every mark of a program whose batches
 * are long enough, evenly spaced marks otherwise.  Its duration is the
 * thread's CPU time in it: time the thread waited for a core (a loaded
 * machine) or for an arena's lock does not cost the program.  Marks on
 * several threads race on the times harmlessly (one extra call at worst). */
#define MALLINFO_SPACING 50

static uint64_t mallinfo_next_ns; /* auto: not before this time */

void sampler_restart(void)
{
	mallinfo_next_ns = 0; /* times are from the start */
}

static int mallinfo_due(void)
{
	if (!hs_settings.glibc_heap || hs_settings.mallinfo == HS_MALLINFO_NEVER)
		return 0;
	return hs_settings.mallinfo == HS_MALLINFO_ALWAYS ||
	       now_ns() >= __atomic_load_n(&mallinfo_next_ns,
					   __ATOMIC_RELAXED);
}

static void mallinfo_spent(uint64_t cpu_ns)
{
	__atomic_store_n(&mallinfo_next_ns, now_ns() + MALLINFO_SPACING * cpu_ns,
			 __ATOMIC_RELAXED);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

void sampler_open(void)
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

void sampler_fork_prepare(void)
{
	lock_take(&statm_lock, hs_tid());
}

int sampler_owned(int self)
{
	return lock_owned(&statm_lock, self);
}

void sampler_abandoned(int self)
{
	if (lock_owned(&statm_lock, self))
		lock_give(&statm_lock);
}

void sampler_fork_parent(void)
{
	lock_give(&statm_lock);
}

void sampler_close(void)
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
		sampler_open();
		fd = __atomic_load_n(&statm_fd, __ATOMIC_ACQUIRE);
	}
	return fd >= 0 ? pread(fd, buf, cap, 0) : -1;
}

int sampler_take(struct sample *s, int with_mallinfo)
{
	char buf[128];
	int ok = 0;
	s->rss = 0;
	/* the recorder's fixed memory all counted from the first sample on
	 * (a mark may come before the writer has made it resident) */
	rmem_settle(NULL);
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
		s->rss = (uint64_t)resident * (uint64_t)getpagesize();
	}
	/* the end of the brk heap: what glibc keeps at its top shows.  The
	 * system call, not sbrk(0): that may set libc's own break variable,
	 * unsynchronized with the program's sbrk calls */
	long end = syscall(SYS_brk, 0);
	s->brk = end > 0 ? (uint64_t)end : 0;
	s->has_mi = with_mallinfo && mallinfo_due();
	if (s->has_mi) {
		uint64_t t0 = thread_cpu_ns();
		s->mi = mallinfo2();
		mallinfo_spent(thread_cpu_ns() - t0);
	} else {
		memset(&s->mi, 0, sizeof(s->mi));
	}
	return ok;
}

void sampler_append(uint64_t t, const struct sample *s)
{
	uint8_t *p = buffer_reserve(RECORDS_SAMPLE_MAX);
	if (!p)
		return;
	buffer_commit(records_sample(&hs_rec.enc, p, t, s->rss, &s->mi,
				     s->has_mi, s->brk));
	hs_rec.counts[HS_COUNT_SAMPLES]++;
}
