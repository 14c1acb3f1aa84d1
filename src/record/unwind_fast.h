/* The "fast" capture method: a DWARF CFI unwinder for x86_64 with a
 * lock-free rule cache and a per-thread copy of the previous stack, whose
 * unchanged outer part is reused.  Internal to unwind.c and its tests. */
#ifndef HS_UNWIND_FAST_H
#define HS_UNWIND_FAST_H

#include <stdint.h>

#include "unwind.h" /* struct unwind_walk */

/* Maps the rule cache; -1 where the method is not available. */
int unwind_fast_init(void);

/* Addresses [lo, hi): the recorder's own code. */
struct code_range {
	uintptr_t lo, hi;
};

/* Return addresses and what is known of the walk (never NULL) as
 * unwind_capture_walk gives them, leading frames inside self left out;
 * -1 when this stack needs libunwind. */
int unwind_fast_capture(uintptr_t *ips, int max, const struct code_range *self,
			struct unwind_walk *walk);

/* Forgets the calling thread's kept and filed walks (one may have been
 * left half made by a capture that never finished). */
void unwind_fast_forget(void);

/* Counters of the calling thread, for tests and benchmarks. */
struct unwind_fast_stats {
	uint64_t captures;  /* calls of unwind_fast_capture */
	uint64_t fallbacks; /* of which returned -1 */
	uint64_t reused;    /* of which copied an outer part */
	uint64_t recalled;  /* of which took a whole walk filed before */
};
void unwind_fast_stats(struct unwind_fast_stats *s);

#endif
