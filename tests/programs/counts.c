/* Known numbers of calls to each allocation function.
 *   counts FUNC N     N calls of FUNC (each followed by a free, except
 *                     for free itself, whose N blocks come from malloc)
 *   counts mix N      N rounds of every function, see below
 *   counts marks N    N batch marks and N labelled marks, no allocation
 *   counts deep N     one malloc(777) at the bottom of N nested calls
 * Prints nothing: stdio would allocate its buffers. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "heapslope.h"
#include "sink.h"

static void *one(const char *fn, size_t i)
{
	void *p = NULL;
	size_t n = 16 + i % 64;
	if (!strcmp(fn, "malloc"))
		p = malloc(n);
	else if (!strcmp(fn, "calloc"))
		p = calloc(n, 3);
	else if (!strcmp(fn, "realloc"))
		p = realloc(opaque(NULL), n);
	else if (!strcmp(fn, "reallocarray"))
		p = reallocarray(opaque(NULL), n, 2);
	else if (!strcmp(fn, "posix_memalign")) {
		if (posix_memalign(&p, 64, n))
			p = NULL;
	} else if (!strcmp(fn, "aligned_alloc"))
		p = aligned_alloc(32, 64);
	else if (!strcmp(fn, "memalign"))
		p = memalign(128, n);
	else if (!strcmp(fn, "valloc"))
		p = valloc(n);
	else if (!strcmp(fn, "pvalloc"))
		p = pvalloc(n);
	sink(p);
	return p;
}

__attribute__((noinline)) static void *deep(size_t n)
{
	void *p = n ? deep(n - 1) : malloc(777);
	sink(p); /* not a tail call: every level keeps its frame */
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	const char *fn = argv[1];
	size_t n = strtoul(argv[2], NULL, 10);
	if (!strcmp(fn, "mix")) {
		/* per round: 9 allocations, 2 reallocs, 9 frees */
		for (size_t i = 0; i < n; i++) {
			void *v[9];
			v[0] = malloc(16);
			v[1] = calloc(4, 8);
			v[0] = realloc(v[0], 64);
			v[1] = reallocarray(v[1], 8, 16);
			v[2] = realloc(opaque(NULL), 32);
			v[3] = reallocarray(opaque(NULL), 4, 4);
			if (posix_memalign(&v[4], 64, 100))
				return 1;
			v[5] = aligned_alloc(64, 128);
			v[6] = memalign(32, 48);
			v[7] = valloc(10);
			v[8] = pvalloc(10);
			for (int k = 0; k < 9; k++) {
				if (!v[k])
					return 1;
				sink(v[k]);
				free(v[k]);
			}
		}
		return 0;
	}
	if (!strcmp(fn, "deep")) {
		void *p = deep(n);
		free(p);
		return 0;
	}
	if (!strcmp(fn, "marks")) {
		for (size_t i = 0; i < n; i++) {
			HEAPSLOPE_MARK_BATCH();
			HEAPSLOPE_MARK("a label");
		}
		return 0;
	}
	if (!strcmp(fn, "free")) {
		for (size_t i = 0; i < n; i++) {
			void *p = malloc(8);
			sink(p);
			free(p);
		}
		free(NULL); /* not a free: no event */
		return 0;
	}
	if (!strcmp(fn, "realloc-grow")) {
		/* one allocation, then n reallocs of a non-NULL pointer */
		char *p = malloc(1);
		for (size_t i = 0; i < n; i++) {
			p = realloc(p, 2 + i * 8);
			if (!p)
				return 1;
			sink(p);
		}
		free(p);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		void *p = one(fn, i);
		if (!p)
			return 1;
		free(p);
	}
	return 0;
}
