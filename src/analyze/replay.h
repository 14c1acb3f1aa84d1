/* Replay of a trace's heap events: the map of live blocks (address ->
 * size, stack, batch) and the totals of the JSON report; the blocks that
 * come and go, and the batches that end, are fed to a list of
 * consumers. */
#ifndef HS_REPLAY_H
#define HS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct heapmap;
struct hs_event;
struct hs_record;
struct stacks;

/* No Linux user address reaches 2^57: x86_64's user space ends at 2^47,
 * or 2^56 with 5-level paging, arm64's at 2^52.  A block that reaches
 * past it, or wraps past 2^64, comes from a corrupt trace (replay_event
 * fails on it); a merely large one (a 100 GiB malloc, a 1 TiB mapping)
 * is replayed, and the heap map keeps it whole. */
#define REPLAY_ADDR_END (1ull << 57)

struct replay_totals {
	uint64_t allocations, frees, reallocs, failed_allocations;
	uint64_t unmatched_frees;      /* frees (and reallocs) of addresses
					* not live */
	uint64_t replaced_allocations; /* allocations of an address already
					* live: the old block is dropped */
	uint64_t allocated_bytes, peak_live_bytes;
	uint64_t live_bytes, live_blocks; /* now; leaked at the trace's end */
	uint64_t mmaps, munmaps;       /* kept out of the heap figures */
};

struct replay_block {
	uint64_t addr; /* 0: empty slot */
	uint64_t size;
	uint32_t slot;  /* stacks_ref() of the allocating stack */
	uint32_t batch; /* batch it was allocated in */
};

/* Why a block becomes live, or stops being live. */
enum replay_cause {
	REPLAY_ALLOCATED, /* malloc and the like, realloc(NULL, n) */
	REPLAY_RESIZED,   /* realloc of a live block: the old one goes, the
			   * new one comes (at the same address or not) */
	REPLAY_FREED,     /* free, realloc(p, 0) */
	REPLAY_REPLACED,  /* a new allocation at the address of a live
			   * block: a lost free, the old block goes */
};

/* A batch as the replay closes it. */
struct replay_batch {
	uint32_t index;      /* batches closed before it */
	uint64_t end_ns;     /* time of the mark (or window end) */
	int from_mark;       /* a batch mark, not a time window, ends it */
	uint64_t live_bytes; /* at its end */
	uint64_t peak_live_bytes; /* highest within it */
	uint64_t allocations, frees, allocated_bytes; /* within it */
};

struct replay;

/* What follows the replay: the per-stack sums (stacks.h), the heap's
 * shape (heapmap.h), the per-batch series (series.h), and whatever comes
 * next.  Any callback may be NULL; those that return int return 0, or -1
 * (hs_error) when out of memory. */
struct replay_consumer {
	/* Block b has become live. */
	int (*block_add)(void *ctx, const struct replay_block *b,
			 enum replay_cause why);
	/* Block b stops being live, during batch `batch`. */
	void (*block_drop)(void *ctx, const struct replay_block *b,
			   uint32_t batch, enum replay_cause why);
	/* Batch b ends; r's blocks are those live at its end. */
	int (*batch_end)(void *ctx, const struct replay *r,
			 const struct replay_batch *b);
};

#define REPLAY_CONSUMERS_MAX 8

struct replay {
	struct replay_block *tab;
	size_t mask, used;
	struct replay_totals t;
	struct stacks *stacks;
	/* each kind of callback apart, in the order the consumers were
	 * added: an event calls only those it must */
	struct replay_adds {
		int (*fn)(void *ctx, const struct replay_block *b,
			  enum replay_cause why);
		void *ctx;
	} adds[REPLAY_CONSUMERS_MAX];
	struct replay_drops {
		void (*fn)(void *ctx, const struct replay_block *b,
			   uint32_t batch, enum replay_cause why);
		void *ctx;
	} drops[REPLAY_CONSUMERS_MAX];
	struct replay_batch_ends {
		int (*fn)(void *ctx, const struct replay *r,
			  const struct replay_batch *b);
		void *ctx;
	} batch_ends[REPLAY_CONSUMERS_MAX];
	size_t nadds, ndrops, nbatch_ends, nconsumers;
	/* stacks_consumer and heapmap_consumer, when added, are called
	 * directly, before the others: the event loop is the analyzer's
	 * hottest, and two indirect calls per block cost 5% of its time */
	struct stacks *direct_stacks;
	struct heapmap *direct_heap;
	uint32_t batch; /* marks seen so far = index of the current batch */
	uint64_t batch_peak; /* highest live bytes in the current batch */
	struct replay_totals batch_start; /* the totals when it began */
};

/* stacks (which name the blocks' stacks) stays the caller's. */
struct replay *replay_create(struct stacks *stacks);
void replay_destroy(struct replay *r);
/* Feeds c, with its context ctx, from now on; -1 (hs_error) past
 * REPLAY_CONSUMERS_MAX.  Consumers are independent: each sees the blocks
 * and the batches in order, but not in a promised order among them. */
int replay_add_consumer(struct replay *r, const struct replay_consumer *c,
			void *ctx);

/* One event record (kind >= HS_REC_ALLOC); -1 when out of memory or when
 * a new block lies outside the user address space (a corrupt trace). */
int replay_event(struct replay *r, const struct hs_record *rec);
/* n event records, as reader_events decodes them. */
int replay_events(struct replay *r, const struct hs_event *ev, size_t n);
/* The current batch ends at time_ns (a mark or a window boundary): the
 * consumers' batch_end, in the order added. */
int replay_batch_end(struct replay *r, uint64_t time_ns, int from_mark);

/* The current batch's counts and peak start again from here, without
 * closing it: a batch end before the analysed range. */
void replay_batch_skip(struct replay *r);

/* The live block at addr, or NULL. */
const struct replay_block *replay_find(const struct replay *r, uint64_t addr);
/* The same as a heapmap_find_fn (heapmap.h), r a struct replay: 1 with
 * the block's slot and size, else 0. */
int replay_block_at(void *r, uint64_t addr, uint32_t *slot, uint64_t *size);

#endif
