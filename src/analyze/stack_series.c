#include "stack_series.h"

#include <stdlib.h>

#include "base/bigmem.h"
#include "base/error.h"
#include "replay.h"

struct log_slot {
	uint64_t live, at_mark; /* now, and at mark since - 1 */
	uint32_t since;         /* first mark not yet logged */
};

struct stack_series {
	struct log_slot *slots;
	size_t nslots;
	struct stack_series_change *v;
	size_t n, cap;
	int oom;
};

struct stack_series *stack_series_create(void)
{
	struct stack_series *l = calloc(1, sizeof(*l));
	if (!l)
		hs_error("out of memory");
	return l;
}

void stack_series_destroy(struct stack_series *l)
{
	if (!l)
		return;
	bigmem_free(l->slots, l->nslots * sizeof(*l->slots));
	bigmem_free(l->v, l->cap * sizeof(*l->v));
	free(l);
}

/* Logs the marks [since, batch) of slot as stacks.c sums them: at each,
 * the value it had before this event. */
static struct log_slot *touch(struct stack_series *l, uint32_t slot,
			      uint32_t batch)
{
	if (bigmem_room((void **)&l->slots, &l->nslots, slot,
			sizeof(*l->slots), 1024))
		return NULL;
	struct log_slot *s = &l->slots[slot];
	if (s->since >= batch)
		return s;
	if (s->live != s->at_mark) {
		if (bigmem_room((void **)&l->v, &l->cap, l->n, sizeof(*l->v),
				4096))
			return NULL;
		l->v[l->n++] = (struct stack_series_change){ slot, s->since,
							    s->live };
		s->at_mark = s->live;
	}
	s->since = batch;
	return s;
}

static int log_add(void *ctx, const struct replay_block *b,
		   enum replay_cause why)
{
	(void)why;
	struct log_slot *s = touch(ctx, b->slot, b->batch);
	if (!s)
		return hs_error("out of memory");
	s->live += b->size;
	return 0;
}

static void log_drop(void *ctx, const struct replay_block *b, uint32_t batch,
		     enum replay_cause why)
{
	(void)why;
	struct stack_series *l = ctx;
	struct log_slot *s = touch(l, b->slot, batch);
	if (s)
		s->live -= b->size;
	else
		l->oom = 1;
}

const struct replay_consumer stack_series_consumer = {
	.block_add = log_add,
	.block_drop = log_drop,
};

int stack_series_close(struct stack_series *l, uint32_t batches,
			const struct stack_series_change **v, size_t *n)
{
	for (size_t i = 0; i < l->nslots && !l->oom; i++)
		if (!touch(l, (uint32_t)i, batches))
			l->oom = 1;
	*v = l->v;
	*n = l->n;
	return l->oom ? hs_error("out of memory") : 0;
}
