/* Every stack's series, its live bytes at each batch mark, which the
 * stacks' running sums (stacks.h) cannot give back: a replay consumer
 * that logs a stack's live bytes at the marks where they change, as
 * stacks.c sums them.  Memory follows those changes: a stack that
 * allocates and frees within each batch logs none.  Used by the growth
 * by operator (groups.h), whose series add up its stacks'. */
#ifndef HS_STACK_SERIES_H
#define HS_STACK_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct replay_consumer;
struct stack_series;

/* From `mark` on (until its next change), slot's live bytes were value. */
struct stack_series_change {
	uint32_t slot, mark;
	uint64_t value;
};

struct stack_series *stack_series_create(void);
void stack_series_destroy(struct stack_series *l);
/* The consumer (replay.h); its context, the struct stack_series. */
extern const struct replay_consumer stack_series_consumer;
/* Closes the series after `batches` marks; the changes, each slot's in
 * the order of their marks, into *v of *n (the series' own).  -1
 * (hs_error) when out of memory, now or during the replay. */
int stack_series_close(struct stack_series *l, uint32_t batches,
		       const struct stack_series_change **v, size_t *n);

#endif
