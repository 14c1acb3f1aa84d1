/* Interned call stacks: a tree of (parent node, return address) nodes,
 * each written to the trace once.  Node 0 is the empty stack.  Not
 * thread-safe: callers hold the recorder lock. */
#ifndef HS_STACKMAP_H
#define HS_STACKMAP_H

#include <stdint.h>

struct stackmap;

struct stackmap *stackmap_create(void);
void stackmap_destroy(struct stackmap *m);
/* Forgets every node (a forked child starts a new trace). */
int stackmap_reset(struct stackmap *m);
/* Id of the node (parent, ip); *is_new tells whether it was just made.
 * Returns 0 when the table cannot grow. */
uint32_t stackmap_intern(struct stackmap *m, uint32_t parent, uintptr_t ip,
			 int *is_new);
uint32_t stackmap_count(const struct stackmap *m);

#endif
