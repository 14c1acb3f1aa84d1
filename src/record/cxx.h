/* C++ operator new and delete, interposed in cxx.c.  While the real
 * operator new of a recorded call runs, the thread is busy; if it throws,
 * the exception object was allocated meanwhile, unrecorded, and is freed
 * later, recorded.  The malloc interposers note such blocks here so that
 * the throw can record the allocation its free will match. */
#ifndef HS_CXX_H
#define HS_CXX_H

#include <stddef.h>
#include <stdint.h>

#include "recorder.h"

/* The last blocks allocated while a call is in flight: the exception
 * object's, and those the unwinder may allocate after it. */
#define CXX_NOTED 16

struct cxx_block {
	unsigned fn;
	const void *p;
	size_t size;
};

/* A recorded operator new in progress on this thread. */
struct cxx_flight {
	unsigned fn;
	size_t size;
	int depth;
	const uintptr_t *ips; /* the caller's stack, taken before the call */
	unsigned noted;       /* blocks noted so far */
	struct cxx_block blocks[CXX_NOTED];
};
extern __thread struct cxx_flight *cxx_flight HS_TLS;

/* The real operators new that call malloc: their ranges (by operator,
 * the eight forms of new; hi 0: not known), and the smallest range that
 * holds them all. */
#define CXX_WRAPPERS 8
struct cxx_wrappers {
	uintptr_t lo, hi;
	struct {
		uintptr_t lo, hi;
	} range[CXX_WRAPPERS];
};
extern struct cxx_wrappers cxx_wrappers;

/* Whether ip, a stack's innermost frame, is in a real operator new. */
static inline int cxx_wraps(uintptr_t ip)
{
	const struct cxx_wrappers *w = &cxx_wrappers;
	if (__builtin_expect(ip <= __atomic_load_n(&w->lo, __ATOMIC_RELAXED) ||
				     ip > __atomic_load_n(&w->hi, __ATOMIC_RELAXED),
			     1))
		return 0;
	for (unsigned i = 0; i < CXX_WRAPPERS; i++) {
		uintptr_t hi = __atomic_load_n(&w->range[i].hi, __ATOMIC_ACQUIRE);
		if (hi && ip > w->range[i].lo && ip <= hi)
			return 1;
	}
	return 0;
}

/* At start-up, before the program runs: looks up the operators the
 * global scope has after the recorder.  Lookups of the others, on their
 * first call, then make no call of the loader's. */
void cxx_init(void);

/* By the malloc interposers, for a call they did not record. */
static inline void cxx_note(unsigned fn, const void *p, size_t size)
{
	struct cxx_flight *f = cxx_flight;
	if (__builtin_expect(f != NULL, 0) && p)
		f->blocks[f->noted++ % CXX_NOTED] =
			(struct cxx_block){ fn, p, size };
}

#endif
