/* Stack identity: the one module that gives a call stack its id.  Ids
 * are nodes of a tree of (parent, return address) (stackmap.h), each
 * written to the trace once, when it is made.  Callers hold the recorder
 * lock. */
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include <stdint.h>

#include "python.h"   /* struct py_raw */
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
/* Python frames (python.h) f[0..n), innermost first, as a node of a tree
 * of their own, written as HS_EXT_PY_FRAME records:
 * - stacks_py_common: how many outer frames the thread's previous Python
 *   stack had the same (reused without a lookup); -1 when the thread has
 *   no cache (its Python frames are then left out);
 * - stacks_py_intern: the innermost node's id, codes[] the trace ids of
 *   the frames' codes (python_codes_put); 0 when the table cannot grow. */
int stacks_py_common(const struct py_raw *f, int n);
uint32_t stacks_py_intern(const struct py_raw *f, const uint32_t *codes,
			  int n, int common, uint8_t **pp);
/* The id of native stack ips[0..n) (walk key `key`, or 0) with Python
 * stack `python` (a node of stacks_py_intern), without what the Python
 * frames stand for (python_trim); 0 when the table cannot grow.  The two are joined by a joint node in the tree, keyed
 * STACKS_JOINT | python under a native node, written as a STACK record
 * that repeats that native node (same parent, same address: what a
 * reader that skips Python records sees) and HS_EXT_PY_STACK.  It goes
 * under the innermost frame, or under the innermost eval loop frame,
 * with the frames inside it below it (hs_settings.join_inside of them or
 * more): for
 * stacks whose native part inside Python is long and ever new (a dlopen
 * running a library's static constructors under one `import`), which
 * then share one joint node. */
uint32_t stacks_intern_py(const uintptr_t *ips, int n, uint64_t key,
			  uint32_t python, uint8_t **pp, int *fresh);
/* The key of a joint node in the native table: no return address has
 * bit 63 set. */
#define STACKS_JOINT (1ull << 63)

/* The id of the stack the calling thread interned with this key before;
 * else 0 (stacks_intern then).  Inline, with its table: every allocation
 * asks.  An empty entry has key 0 and id 0. */
struct stacks_keyed {
	uint64_t key;
	uint64_t id; /* the id, its parent's in the high half */
};
#define STACKS_KEYED (1u << UNWIND_WALK_BITS) /* one per unwinder walk */
extern __thread struct stacks_keyed *stacks_keyed HS_TLS; /* or NULL */

static inline uint64_t stacks_known_ref(uint64_t key)
{
	const struct stacks_keyed *k = stacks_keyed;
	if (!k)
		return 0;
	k += key & (STACKS_KEYED - 1);
	return k->key == key ? k->id : 0;
}

static inline uint32_t stacks_known(uint64_t key)
{
	return (uint32_t)stacks_known_ref(key);
}

#endif
