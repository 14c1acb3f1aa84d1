#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE (2u << 20)

static size_t mapped_size(size_t bytes)
{
	return (bytes + HUGE - 1) & ~(size_t)(HUGE - 1);
}

void *bigmem_zalloc(size_t bytes)
{
	if (bytes < BIGMEM_MIN)
		return calloc(1, bytes ? bytes : 1);
	size_t len = mapped_size(bytes);
	if (len < bytes)
		return NULL; /* overflow */
	uint8_t *m = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	/* keep the aligned part, give back the rest */
	uint8_t *p = (uint8_t *)(((uintptr_t)m + HUGE - 1) &
				 ~(uintptr_t)(HUGE - 1));
	if (p > m)
		munmap(m, (size_t)(p - m));
	munmap(p + len, (size_t)(m + HUGE - p));
#ifdef MADV_HUGEPAGE
	madvise(p, len, MADV_HUGEPAGE); /* a hint: without it, small pages */
#endif
	return p;
}

void bigmem_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < BIGMEM_MIN)
		free(p);
	else
		munmap(p, mapped_size(bytes));
}

void *bigmem_realloc(void *p, size_t old, size_t bytes)
{
	if (bytes < BIGMEM_MIN && old < BIGMEM_MIN) {
		uint8_t *n = realloc(p, bytes ? bytes : 1);
		if (n && bytes > old)
			memset(n + old, 0, bytes - old);
		return n;
	}
	uint8_t *n = bigmem_zalloc(bytes);
	if (!n)
		return NULL;
	if (p)
		memcpy(n, p, old < bytes ? old : bytes);
	bigmem_free(p, old);
	return n;
}
