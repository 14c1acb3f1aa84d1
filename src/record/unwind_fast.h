/* The "fast" capture method: a DWARF CFI unwinder for x86_64 with a
 * lock-free rule cache and a per-thread copy of the previous stack, whose
 * unchanged outer part is reused.  Internal to unwind.c and its tests. */
#ifndef HS_UNWIND_FAST_H
#define HS_UNWIND_FAST_H

#include <stdint.h>

/* Maps the rule cache; -1 where the method is not available. */
int unwind_fast_init(void);

/* Return addresses as unwind_capture gives them, leading frames inside
 * [self_lo, self_hi) left out; -1 when this stack needs libunwind. */
int unwind_fast_capture(uintptr_t *ips, int max, uintptr_t self_lo,
			uintptr_t self_hi);
/* The walk key (unwind.h) of the calling thread's last capture that
 * returned frames.  A variable, not a call: it is read at every capture,
 * whose own frames the fast method steps over as they were (a tail call
 * here keeps their number). */
extern __thread uint64_t unwind_fast_walk
	__attribute__((tls_model("initial-exec")));

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
