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

/* Python frames (python.h) as a node of a tree of their own, written as
 * HS_EXT_PY_FRAME records:
 * - stacks_py_capture: the calling thread's frames, captured into *now
 *   (a trail of the thread's cache, now->raw[0..n), innermost first;
 *   the previous one itself when the chain is that one's, or that one's
 *   with its innermost frame further on, which stacks_py_intern moves),
 *   and how many outer frames its previous Python stack had the same
 *   (*common: reused without a lookup); *code0: when only the innermost
 *   frame is new, in the code of the one it replaces, that code's trace
 *   id (else 0); 0 frames when the thread has no cache (its Python frames
 *   are then left out).  No lock needed;
 * - stacks_py_intern, lock held: the innermost node's id, codes[] the
 *   trace ids of the frames' codes (python_codes_put); 0 when the table
 *   cannot grow.  *now becomes the thread's previous Python stack. */
int stacks_py_capture(const struct py_trail **now, int *common,
		      uint32_t *code0);
uint32_t stacks_py_intern(const struct py_trail *now, const uint32_t *codes,
			  int common, uint8_t **pp);

/* The id of the stack ips[0..n), innermost first, appending at *pp the
 * records of its nodes not seen before (*fresh set then).  trimmed: the
 * stack has Python frames, and leaves out the interpreter's frames they
 * stand for (python_trim).  walk: what the unwinder said of the capture
 * that found exactly these frames (unwind.h), or NULL.  0 when the
 * table cannot grow (recording stops). */
uint32_t stacks_intern(const uintptr_t *ips, int n,
		       const struct unwind_walk *walk, int trimmed,
		       uint8_t **pp, int *fresh);

/* Lock held: appends at p an HS_EXT_PY_AT record when the thread's next
 * stack is under another Python node (stacks_py_intern; 0: none) than
 * the thread's stacks were last said to be.  A reader keeps one Python
 * node per thread: a native stack is joined to its thread's Python
 * stack where it is read, not in the recorder's tree (which would keep a
 * node for each pair: 800,000 for `import torch`).  Returns the end.
 * Inline: every stack of a process that runs Python asks. */
extern __thread uint32_t stacks_py_at_last HS_TLS; /* 1 + the last one's
						    * node; 0: none yet */
uint8_t *stacks_py_at_put(uint32_t python, uint8_t *p);
static inline uint8_t *stacks_py_at(uint32_t python, uint8_t *p)
{
	if (stacks_py_at_last == python + 1)
		return p;
	return stacks_py_at_put(python, p);
}

/* The id of the stack the calling thread interned with this key (and
 * trimmed, as stacks_intern's) before; else 0 (stacks_intern then).
 * Inline, with its table: every allocation asks.  An empty entry has key
 * 0 and id 0. */
struct stacks_keyed {
	uint64_t key;
	uint32_t trimmed, id; /* trimmed: as stacks_intern's */
};
#define STACKS_KEYED (1u << UNWIND_WALK_BITS) /* one per unwinder walk */
extern __thread struct stacks_keyed *stacks_keyed HS_TLS; /* or NULL */

static inline uint32_t stacks_known(uint64_t key, int trimmed)
{
	const struct stacks_keyed *k = stacks_keyed;
	if (!k)
		return 0;
	k += key & (STACKS_KEYED - 1);
	return k->key == key && k->trimmed == (uint32_t)trimmed ? k->id : 0;
}

#endif
