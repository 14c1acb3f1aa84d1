/* Replay of a trace's heap events: the map of live blocks (address ->
 * size, stack, batch), the totals of the JSON report, and the updates of
 * the per-batch series and the per-stack sums. */
#ifndef HS_REPLAY_H
#define HS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct heapmap;
struct hs_event;
struct hs_record;
struct series;
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

struct replay {
	struct replay_block *tab;
	size_t mask, used;
	struct replay_totals t;
	struct stacks *stacks;
	struct series *series;
	struct heapmap *heap; /* NULL: the heap's shape is not followed */
	uint32_t batch; /* marks seen so far = index of the current batch */
};

/* stacks, series and heap (may be NULL) stay the caller's. */
struct replay *replay_create(struct stacks *stacks, struct series *series,
			     struct heapmap *heap);
void replay_destroy(struct replay *r);

/* One event record (kind >= HS_REC_ALLOC); -1 when out of memory or when
 * a new block lies outside the user address space (a corrupt trace). */
int replay_event(struct replay *r, const struct hs_record *rec);
/* n event records, as reader_events decodes them. */
int replay_events(struct replay *r, const struct hs_event *ev, size_t n);
/* The current batch ends at time_ns (a mark or a window boundary); with a
 * heap map, its pinning blocks are found (heapmap_pins) for this batch. */
int replay_batch_end(struct replay *r, uint64_t time_ns, int from_mark);

/* The live block at addr, or NULL. */
const struct replay_block *replay_find(const struct replay *r, uint64_t addr);

#endif
