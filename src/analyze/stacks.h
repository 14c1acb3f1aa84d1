/* Call stacks of a trace: the node tree from HS_REC_STACK records, and for
 * every stack that allocates, its live bytes with the running sums of their
 * regression against the batch index.
 *
 * A stack's live bytes change only at its own events, so between two of
 * them its value at every mark is the same: the sums over such a stretch
 * are closed forms, added when the stack next changes.  Work is
 * proportional to events, never to stacks x batches. */
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "regress.h"

/* Values at the first marks are kept so that a warm-up chosen after the
 * trace is read (at most this many batches) can be taken off the sums. */
#define STACKS_FIRST_MAX 5

typedef unsigned __int128 stacks_u128;

/* Live bytes of one stack (or site) and their sums over marks k >= from,
 * x = k, y = live bytes at mark k. */
struct stacks_acc {
	uint64_t live, blocks;   /* now */
	uint64_t at_mark;        /* live bytes at mark since - 1 */
	uint64_t at_exit;        /* live bytes when exit began (stacks_exiting) */
	uint64_t allocations;
	uint32_t since;          /* first mark not yet in the sums */
	stacks_u128 sy, sxy, syy;
	uint64_t first[STACKS_FIRST_MAX];
};

struct frame;
struct replay_consumer;

/* One ranked stack, or with grouping one allocation site. */
struct stack_growth {
	uint64_t id;            /* innermost stack node; 0 for a site */
	uint64_t site_ip;       /* innermost return address */
	double bytes_per_batch, r2;
	uint64_t live_bytes_at_end; /* at the last batch mark */
	uint64_t leaked_bytes, leaked_blocks; /* still live when the trace ends */
	uint64_t live_at_exit;  /* live when the process began to exit; without
				 * an exiting record, leaked_bytes */
	uint64_t allocations;
	struct stack_growth *paths; /* sites: the stacks through the site */
	size_t npaths;
	struct frame *frames;   /* filled in by the caller, for the report */
	size_t nframes;
};

struct stacks;

/* from: first batch mark summed (a warm-up known in advance, else 0). */
struct stacks *stacks_create(uint32_t from, int group_by_site);
void stacks_destroy(struct stacks *s);

/* With grouping, a stack's site is its innermost frame for which skip
 * says 0 (frames in allocation wrappers such as operator new are passed
 * over); without a filter, its innermost frame. */
typedef int (*stacks_skip_fn)(void *ctx, uint64_t ip);
void stacks_set_site_filter(struct stacks *s, stacks_skip_fn skip,
			    void *ctx);

/* With grouping, a stack whose key says other than 0 has that as its
 * site instead (its innermost Python line: pyframes_site). */
typedef uint64_t (*stacks_site_fn)(void *ctx, uint64_t id);
void stacks_set_site_key(struct stacks *s, stacks_site_fn key, void *ctx);

/* An HS_REC_STACK record; -1 (hs_error) for an id that cannot be one. */
int stacks_node(struct stacks *s, uint64_t id, uint64_t parent, uint64_t ip);
/* Stack id, new, with the frames of stack `native` (the joint of a
 * native stack and its thread's Python frames, pyframes_join): ids from
 * STACKS_JOINED on, out of the recorder's range, one after the other;
 * 1 when native is no stack (nothing made), -1 (hs_error) when id is not
 * the next or memory is out.  stacks_native: the native node a joint
 * copies (id itself for any other). */
#define STACKS_JOINED (1ull << 32)
int stacks_join(struct stacks *s, uint64_t id, uint64_t native);
uint64_t stacks_native(const struct stacks *s, uint64_t id);
/* The accounting slot of an event's stack id, created on first use;
 * UINT32_MAX when out of memory.  Ids never defined count as the empty
 * stack (see stacks_bad_refs). */
uint32_t stacks_ref(struct stacks *s, uint64_t id);
/* Live bytes of slot ref change by +size / -size during batch `batch`
 * (the number of marks seen so far).  is_alloc: the block is a new
 * allocation (counted), not a realloc's new home. */
void stacks_add(struct stacks *s, uint32_t ref, uint64_t size,
		uint32_t batch, int is_alloc);
void stacks_sub(struct stacks *s, uint32_t ref, uint64_t size,
		uint32_t batch);
/* The replay's consumer (replay.h) that keeps the sums: context, the
 * struct stacks. */
extern const struct replay_consumer stacks_consumer;
/* Closes the sums after `batches` marks: call once, at the end. */
void stacks_close(struct stacks *s, uint32_t batches);

/* The process began to exit (the trace's first exiting record): every
 * stack's live bytes now are kept, apart from what the teardown frees. */
void stacks_exiting(struct stacks *s);

uint64_t stacks_bad_refs(const struct stacks *s);
/* The stack id of a slot. */
uint64_t stacks_slot_id(const struct stacks *s, uint32_t slot);
size_t stacks_count(const struct stacks *s); /* slots in use */

/* Slope and R² of one accumulator over marks [warmup, batches). */
int stacks_fit(const struct stacks *s, const struct stacks_acc *a,
	       uint32_t warmup, uint32_t batches, struct regress *out);

/* Every stack that allocated, ranked by bytes per batch (descending);
 * with grouping, sites with their stacks in ->paths.  Free with
 * stacks_growth_free. */
int stacks_rank(const struct stacks *s, uint32_t warmup, uint32_t batches,
		int by_site, struct stack_growth **out, size_t *n);
void stacks_growth_free(struct stack_growth *g, size_t n);

/* Accumulators of the caller's own, kept like a slot's (regions.c: a
 * stack's bytes within one region): +size (is_alloc: a new block) or
 * -size during batch `batch`; then, after `batches` marks, the growth of
 * slot's stack from them, as stacks_rank fills it. */
void stacks_acc_add(const struct stacks *s, struct stacks_acc *a,
		    uint64_t size, uint32_t batch, int is_alloc);
void stacks_acc_sub(const struct stacks *s, struct stacks_acc *a,
		    uint64_t size, uint32_t batch);
void stacks_acc_growth(const struct stacks *s, struct stacks_acc *a,
		       uint32_t warmup, uint32_t batches, uint32_t slot,
		       struct stack_growth *g);
/* stacks_rank's order, for qsort. */
int stacks_growth_cmp(const void *a, const void *b);

/* Return addresses of stack id, innermost first; returns how many
 * (at most max). */
size_t stacks_ips(const struct stacks *s, uint64_t id, uint64_t *ips,
		  size_t max);
/* The node ids of the same path, in the same order as stacks_ips. */
size_t stacks_ids(const struct stacks *s, uint64_t id, uint64_t *ids,
		  size_t max);

#endif
