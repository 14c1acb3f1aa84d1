#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"

#define HUGE (2u << 20)

/* Whole huge pages: BIGMEM_MIN bytes and more are at least one. */
static size_t mapped_size(size_t bytes)
{
	return (bytes + HUGE - 1) & ~(size_t)(HUGE - 1);
}

void *bigmem_zalloc(size_t bytes)
{
	if (bytes < BIGMEM_MIN)
		return calloc(1, bytes ? bytes : 1);
	size_t len = mapped_size(bytes);
	return len < bytes ? NULL /* overflow */ : rmem_map_table(len);
}

void bigmem_free(void *p, size_t bytes)
{
	if (bytes < BIGMEM_MIN)
		free(p);
	else
		rmem_unmap(p, mapped_size(bytes));
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

int bigmem_room(void **v, size_t *n, size_t i, size_t size, size_t first)
{
	if (i < *n)
		return 0;
	size_t cap = *n ? *n : first;
	while (cap <= i)
		cap *= 2;
	void *nv = bigmem_realloc(*v, *n * size, cap * size);
	if (!nv)
		return -1;
	*v = nv;
	*n = cap;
	return 0;
}
