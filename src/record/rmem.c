#include "rmem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Raw system calls: the recorder's own mmap is interposed too. */

void *rmem_map(size_t size)
{
	long p = syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == -1 ? NULL : (void *)p;
}

void rmem_unmap(void *p, size_t size)
{
	if (p)
		syscall(SYS_munmap, p, size);
}

/* Each block keeps its mapping size in a 64-byte prefix (keeps alignment). */
#define PREFIX 64

void *rmem_alloc(void *opaque, size_t size)
{
	(void)opaque;
	size_t total = size + PREFIX;
	uint8_t *p = rmem_map(total);
	if (!p)
		return NULL;
	*(size_t *)p = total;
	return p + PREFIX;
}

void rmem_free(void *opaque, void *ptr)
{
	(void)opaque;
	if (!ptr)
		return;
	uint8_t *p = (uint8_t *)ptr - PREFIX;
	rmem_unmap(p, *(size_t *)p);
}
