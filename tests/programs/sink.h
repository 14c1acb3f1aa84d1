/* Keeps the compiler from removing an allocation whose result is unused:
 * victims must make exactly the calls they are written to make. */
#ifndef VICTIM_SINK_H
#define VICTIM_SINK_H

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

#endif
