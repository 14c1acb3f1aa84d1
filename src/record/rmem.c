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

void rmem_unmap(void *p, size_t size)
{
	if (p)
		syscall(SYS_munmap, p, size);
}
