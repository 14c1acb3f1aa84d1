#include "unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "guard.h"
#include "unwind_fast.h"
#include "unwind_rules.h"

/* The recorder's own code, whose frames never appear in a stack. */
static struct code_range self;
static enum unwind_method method = UNWIND_LIBUNWIND;

static const char *const names[] = {
	[UNWIND_LIBUNWIND] = HS_UNWIND_LIBUNWIND,
	[UNWIND_FAST] = HS_UNWIND_FAST,
};

void unwind_module_range(const struct dl_phdr_info *info, uintptr_t *lo,
			 uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t target = (uintptr_t)data, lo, hi;
	unwind_module_range(info, &lo, &hi);
	if (target >= lo && target < hi) {
		self.lo = lo;
		self.hi = hi;
		return 1;
	}
	return 0;
}

/* The default is fast where it is available: it returns the same stacks
 * (tests/unit/test_unwind.c, tests/cli/test_unwind_equal.py). */
int unwind_init(const char *name)
{
	enum unwind_method m;
	if (!name || !*name)
		m = unwind_fast_init() == 0 ? UNWIND_FAST : UNWIND_LIBUNWIND;
	else if (strcmp(name, names[UNWIND_FAST]) == 0)
		m = UNWIND_FAST;
	else if (strcmp(name, names[UNWIND_LIBUNWIND]) == 0)
		m = UNWIND_LIBUNWIND;
	else
		return -1;
	if (m == UNWIND_FAST && unwind_fast_init())
		return -1;
	/* fast falls back to libunwind on the stacks it cannot follow */
	internal_begin(); /* libunwind opens its pipe here (see pipe2) */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	internal_end();
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&unwind_capture);
	method = m;
	return 0;
}

const char *unwind_name(void)
{
	return names[method];
}

/* libunwind's pipe for probing memory (see pipe2 in preload.c): it
 * writes into it and reads back.  If the program has put files of its
 * own on those numbers, libunwind must not run: it would write there.
 * Closed numbers are fine, libunwind opens a new pipe then. */
static struct {
	int fd[2];
	dev_t dev;
	ino_t ino;
} probe = { { -1, -1 }, 0, 0 };

void unwind_note_pipe(const int fds[2])
{
	struct stat st;
	if (fstat(fds[0], &st))
		return;
	probe.dev = st.st_dev;
	probe.ino = st.st_ino;
	probe.fd[0] = fds[0];
	probe.fd[1] = fds[1];
}

static int probe_pipe_ours(void)
{
	for (int i = 0; i < 2 && probe.fd[0] >= 0; i++) {
		struct stat st;
		if (fstat(probe.fd[i], &st) == 0 &&
		    (st.st_dev != probe.dev || st.st_ino != probe.ino))
			return 0;
	}
	return 1;
}

/* libunwind may allocate: its calls are the recorder's own.  It keeps no
 * state a fast capture changes, and blocks signals around its caches, so
 * a nested call may use it while a fast capture is interrupted. */
static int libunwind_capture(uintptr_t *ips, int max)
{
	void *raw[HS_DEPTH_MAX + 16];
	int cancel;
	if (!probe_pipe_ours())
		return 0;
	/* its probe pipe's read and write are cancellation points: never
	 * inside malloc */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	internal_begin();
	int n = unw_backtrace(raw, max + 16);
	internal_end();
	pthread_setcancelstate(cancel, NULL);
	int i = 0, out = 0;
	while (i < n && (uintptr_t)raw[i] >= self.lo &&
	       (uintptr_t)raw[i] < self.hi)
		i++;
	for (; i < n && out < max; i++)
		ips[out++] = (uintptr_t)raw[i];
	return out;
}

int unwind_capture_plain(uintptr_t *ips, int max)
{
	rules_generation = 0;
	if (max > HS_DEPTH_MAX)
		max = HS_DEPTH_MAX;
	return libunwind_capture(ips, max);
}

void unwind_forget(void)
{
	if (method == UNWIND_FAST)
		unwind_fast_forget();
}

int unwind_capture_walk(uintptr_t *ips, int max, struct unwind_walk *walk)
{
	rules_generation = 0;
	if (max > HS_DEPTH_MAX)
		max = HS_DEPTH_MAX;
	if (method == UNWIND_FAST) {
		int n = unwind_fast_capture(ips, max, &self, walk);
		if (n >= 0)
			return n;
	}
	*walk = (struct unwind_walk){ 0 }; /* libunwind keeps no walk */
	return libunwind_capture(ips, max);
}

int unwind_capture(uintptr_t *ips, int max, uint64_t *walk)
{
	struct unwind_walk w;
	int n = unwind_capture_walk(ips, max, &w);
	*walk = w.key;
	return n;
}
