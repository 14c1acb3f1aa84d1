/* The hostile programs' own allocations, which the tests count exactly
 * by their distinctive sizes (777, 555, 999 bytes). */
#ifndef HOSTILE_PAIRS_H
#define HOSTILE_PAIRS_H

#include <stdlib.h>

#include "sink.h"

/* n blocks of size bytes, each freed at once */
static inline void pairs(long n, size_t size)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(size);
		sink(p);
		free(p);
	}
}

#endif
