/* Keeps the compiler from removing an allocation whose result is unused:
 * victims must make exactly the calls they are written to make. */
#ifndef VICTIM_SINK_H
#define VICTIM_SINK_H

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* A value the compiler cannot see through: realloc(NULL, n) must stay a
 * realloc, not be folded into malloc(n). */
static inline void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

#endif
