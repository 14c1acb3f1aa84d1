/* Defines malloc, free, calloc and realloc itself (a bump allocator in a
 * static arena), so that no call reaches a preloaded library's: nothing
 * can be recorded, and the recorder must say so.
 *   ownmalloc N */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pairs.h"

static _Alignas(16) char arena[64 << 20];
static size_t used;
static long calls;

void *malloc(size_t n)
{
	size_t need = (n + 16 + 15) & ~(size_t)15;
	if (need < n || need > sizeof(arena) - used)
		return NULL;
	char *p = arena + used;
	used += need;
	*(size_t *)p = n;
	calls++;
	return p + 16;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t n, size_t m)
{
	if (m && n > (size_t)-1 / m)
		return NULL;
	return malloc(n * m); /* the arena is never reused: zeroed */
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	if (q && p) {
		size_t old = *(size_t *)((char *)p - 16);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	long before = calls;
	pairs(n, 777);
	printf("own allocator: %ld blocks of 777 bytes, %ld calls\n", n,
	       calls - before);
	return 0;
}
