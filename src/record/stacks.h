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

/* The id of the stack ips[0..n), innermost first, with the Python stack
 * `python` (a node of stacks_py_intern; 0: none), appending at *pp the
 * records of its nodes not seen before (*fresh set then).  key: the
 * unwinder's walk key for exactly these frames (unwind.h), 0 if none.
 * 0 when the table cannot grow (recording stops).
 *
 * With Python frames, the native stack leaves out what they stand for
 * (python_trim), and a joint node joins the two: a node keyed
 * STACKS_JOINT | python under a native node, written as a STACK record
 * that repeats that native node (same parent, same address: what a
 * reader that skips Python records sees) and HS_EXT_PY_STACK.  It goes
 * under the innermost frame, or under the innermost eval loop frame with
 * the frames inside it below it when they are hs_settings.join_inside or
 * more: stacks whose native part inside Python is long and ever new (a
 * dlopen running a library's static constructors under one `import`)
 * then share one joint node. */
uint32_t stacks_intern(const uintptr_t *ips, int n, uint64_t key,
		       uint32_t python, uint8_t **pp, int *fresh);
/* The key of a joint node in the native table: no return address has
 * bit 63 set. */
#define STACKS_JOINT (1ull << 63)

/* The id of the stack the calling thread interned with this key before;
 * else 0 (stacks_intern then).  Inline, with its table: every allocation
 * asks.  An empty entry has key 0 and id 0. */
struct stacks_keyed {
	uint64_t key;
	uint32_t python, id; /* python: the Python stack, 0 for none */
};
#define STACKS_KEYED (1u << UNWIND_WALK_BITS) /* one per unwinder walk */
extern __thread struct stacks_keyed *stacks_keyed HS_TLS; /* or NULL */

static inline uint32_t stacks_known(uint64_t key)
{
	const struct stacks_keyed *k = stacks_keyed;
	if (!k)
		return 0;
	k += key & (STACKS_KEYED - 1);
	return k->key == key && !k->python ? k->id : 0;
}

#endif
