/* Allocations through a call inlined into an inlined call: the report's
 * stack must name both inlined functions, each at its own line, and
 * main at the line of its call (test_frames.py).  The lines are found
 * by the comments on them. */
#include <stdlib.h>
#include <string.h>

static inline __attribute__((always_inline)) void *fill(size_t n)
{
	char *p = malloc(n); /* fill's allocation */
	if (p)
		memset(p, 1, n);
	return p;
}

static inline __attribute__((always_inline)) void *make(size_t n)
{
	return fill(n + 1); /* make's call */
}

static void *kept[4000];

int main(void)
{
	for (int i = 0; i < 4000; i++)
		kept[i] = make(100 + (size_t)(i % 7)); /* main's call */
	return kept[1] == NULL;
}
