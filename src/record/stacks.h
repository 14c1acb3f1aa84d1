/* Stack identity: the one module that gives a call stack its id.  Ids
 * are nodes of a tree of (parent, return address) (stackmap.h), each
 * written to the trace once, when it is made.  Callers hold the recorder
 * lock. */
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include <stdint.h>

#include "recorder.h" /* HS_TLS */
#include "unwind.h"   /* UNWIND_WALK_BITS */

/* The table, at start-up; -1 when out of memory. */
int stacks_create(void);
/* Forgets every node and what the calling thread remembers of them: a
 * forked child, whose only thread it is, starts a new trace; -1 when out
 * of memory. */
int stacks_reset(void);

/* The id of the stack ips[0..n), innermost first, appending at *pp the
 * records of its nodes not seen before (*fresh set then).  key: the
 * caller's name for exactly these frames, 0 if none: the unwinder's walk
 * key for a native stack (unwind.h); a stack with frames of another kind
 * must bring their identity into it, or pass 0.  0 when the table cannot
 * grow (recording stops). */
uint32_t stacks_intern(const uintptr_t *ips, int n, uint64_t key,
		       uint8_t **pp, int *fresh);

/* The id of the stack the calling thread interned with this key before;
 * else 0 (stacks_intern then).  Inline, with its table: every allocation
 * asks.  An empty entry has key 0 and id 0. */
struct stacks_keyed {
	uint64_t key;
	uint64_t id;
};
#define STACKS_KEYED (1u << UNWIND_WALK_BITS) /* one per unwinder walk */
extern __thread struct stacks_keyed *stacks_keyed HS_TLS; /* or NULL */

static inline uint32_t stacks_known(uint64_t key)
{
	const struct stacks_keyed *k = stacks_keyed;
	if (!k)
		return 0;
	k += key & (STACKS_KEYED - 1);
	return k->key == key ? (uint32_t)k->id : 0;
}

#endif
