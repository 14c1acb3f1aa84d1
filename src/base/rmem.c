#include "rmem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Raw system calls: the recorder's own mmap is interposed too. */

#define HUGE_PAGE ((size_t)2 << 20)

static void *map(size_t size, int flags)
{
	long p = syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	return p == -1 ? NULL : (void *)p;
}

void *rmem_map(size_t size)
{
	return map(size, 0);
}

void *rmem_map_resident(size_t size)
{
	return map(size, MAP_POPULATE);
}

/* ---- resident later ---- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define LATER_MAX 8
#define SETTLE_STEP (512u << 10) /* between looks at stop */

static struct {
	uint8_t *p;
	size_t size;
} later[LATER_MAX];
static unsigned nlater;
static int populates = -1; /* whether the kernel does; -1: not asked yet */
static int settled;        /* every region of later[] is resident */

void *rmem_map_later(size_t size)
{
	if (nlater == LATER_MAX || !populates)
		return rmem_map_resident(size);
	/* on 2 MiB pages where it can: made resident in a few faults, not
	 * one per 4 KiB, in the program's start-up, when the writer's page
	 * faults cost the program's thread a flush of the other CPU's TLB
	 * at each of its own copy-on-write faults */
	uint8_t *p = rmem_map_table(size);
	if (!p) /* its 2 MiB more, for the alignment, too much for a limit */
		p = map(size, 0);
	if (!p)
		return NULL;
	if (populates < 0 &&
	    !(populates = syscall(SYS_madvise, p, (size_t)4096,
				  MADV_POPULATE_WRITE) == 0)) {
		rmem_unmap(p, size);
		return rmem_map_resident(size);
	}
	later[nlater].p = p;
	later[nlater].size = size;
	nlater++;
	__atomic_store_n(&settled, 0, __ATOMIC_RELAXED);
	return p;
}

int rmem_settle(int (*stop)(void))
{
	if (__atomic_load_n(&settled, __ATOMIC_ACQUIRE))
		return 0;
	for (unsigned i = 0; i < nlater; i++)
		for (size_t at = 0; at < later[i].size; at += SETTLE_STEP) {
			if (stop && stop())
				return -1;
			size_t n = later[i].size - at;
			/* a hint: without the memory the pages come later */
			syscall(SYS_madvise, later[i].p + at,
				n < SETTLE_STEP ? n : SETTLE_STEP,
				MADV_POPULATE_WRITE);
		}
	__atomic_store_n(&settled, 1, __ATOMIC_RELEASE);
	return 0;
}

void *rmem_map_table(size_t size)
{
	const size_t huge = HUGE_PAGE;
	if (size < huge)
		return map(size, 0);
	uint8_t *m = map(size + huge, 0);
	if (!m)
		return NULL;
	uint8_t *p = (uint8_t *)(((uintptr_t)m + huge - 1) &
				 ~(uintptr_t)(huge - 1));
	if (p > m)
		syscall(SYS_munmap, m, (size_t)(p - m));
	syscall(SYS_munmap, p + size, (size_t)(m + huge - p));
#ifdef MADV_HUGEPAGE
	syscall(SYS_madvise, p, size, MADV_HUGEPAGE); /* a hint */
#endif
	return p;
}

void *rmem_remap(void *p, size_t size, size_t new_size)
{
	long q = syscall(SYS_mremap, p, size, new_size, MREMAP_MAYMOVE);
	return q == -1 ? NULL : (void *)q;
}

void *rmem_remap_table(void *p, size_t size, size_t new_size)
{
	if (new_size < HUGE_PAGE)
		return rmem_remap(p, size, new_size);
	uint8_t *q = rmem_map_table(new_size);
	if (!q)
		return rmem_remap(p, size, new_size);
	long r = syscall(SYS_mremap, p, size, new_size,
			 MREMAP_MAYMOVE | MREMAP_FIXED, q);
	/* on failure q is left as it is: the kernel may have unmapped it
	 * already, and another thread mapped something there since */
	if (r == -1)
		return rmem_remap(p, size, new_size);
#ifdef MADV_HUGEPAGE
	syscall(SYS_madvise, q, new_size, MADV_HUGEPAGE); /* a hint */
#endif
	return q;
}

void rmem_unmap(void *p, size_t size)
{
	if (p)
		syscall(SYS_munmap, p, size);
}
