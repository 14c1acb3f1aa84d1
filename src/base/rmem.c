#include "rmem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Raw system calls: the recorder's own mmap is interposed too. */

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

void *rmem_map_table(size_t size)
{
	const size_t huge = 2u << 20;
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

void rmem_unmap(void *p, size_t size)
{
	if (p)
		syscall(SYS_munmap, p, size);
}
