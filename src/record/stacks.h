/* Stack identity: the one module that gives a call stack its id.  Ids
 * are nodes of a tree of (parent, return address) (stackmap.h), each
 * written to the trace once, when it is made.  Callers hold the recorder
 * lock. */
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include <stdint.h>

/* The table, at start-up; -1 when out of memory. */
int stacks_create(void);
/* Forgets every node and what threads remember of them (a forked child
 * starts a new trace); -1 when out of memory. */
int stacks_reset(void);

/* The id of the stack ips[0..n), innermost first, appending at *pp the
 * records of its nodes not seen before (*fresh set then).  key: the
 * caller's name for exactly these frames, 0 if none: the unwinder's walk
 * key for a native stack (unwind.h); a stack with frames of another kind
 * must bring their identity into it, or pass 0.  0 when the table cannot
 * grow (recording stops). */
uint32_t stacks_intern(const uintptr_t *ips, int n, uint64_t key,
		       uint8_t **pp, int *fresh);

#endif
