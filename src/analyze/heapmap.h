/* The heap's shape, from the addresses and sizes of the live blocks,
 * kept up to date at every allocation and free (never a re-scan):
 *
 * - footprint: bytes of the pages that hold at least one live byte;
 * - heap regions: glibc's brk heap (from the trace's heap_start), its
 *   thread arenas (64 MiB-aligned heaps: any 64 MiB window that holds a
 *   block below the mmap threshold), and directly mmapped blocks;
 * - span of a region: from its lowest page (the brk heap: heap_start) to
 *   the page of its highest live byte; what the allocator cannot give back
 *   by trimming its top;
 * - holes: the free bytes inside the spans (span - live bytes);
 * - releasable holes: the whole free pages inside the spans.
 *
 * Pinning: a whole-page gap inside a span is held by the live block just
 * above it (the lowest block on the first occupied page above the gap):
 * freeing the blocks above a gap, top down, is what would let a top trim
 * give the gap back.  heapmap_pins attributes every gap to its block's
 * stack; it looks the blocks up in the replay, so it costs a scan of the
 * spans' pages, done at batch ends. */
#ifndef HS_HEAPMAP_H
#define HS_HEAPMAP_H

#include <stddef.h>
#include <stdint.h>

/* Figures at one moment, in bytes. */
struct heapmap_state {
	uint64_t footprint;  /* pages holding at least one live byte */
	uint64_t span;       /* heap regions' spans + mmapped blocks' pages */
	uint64_t holes;      /* free bytes inside the heap spans */
	uint64_t releasable; /* whole free pages inside the heap spans */
	uint64_t mmapped;    /* pages of directly mmapped blocks */
	uint64_t regions;    /* heap regions with live blocks */
	uint64_t brk_top;    /* end of the brk heap's span (its start when it
			      * has no live block); 0: no brk heap known.
			      * Above it up to the program break lies the
			      * free top of the heap. */
};

/* The blocks of one stack that hold gaps open. */
struct heapmap_pin {
	uint32_t slot;         /* stacks_ref() slot, or one of: */
#define HEAPMAP_NOT_FOUND UINT32_MAX /* no block there: inconsistent */
#define HEAPMAP_UNPROBED (UINT32_MAX - 1) /* past the probe budget */
	uint64_t pinned_bytes; /* the gaps below them */
	uint64_t blocks, live_bytes;
};

/* The live block whose address is addr, if any. */
typedef int (*heapmap_find_fn)(void *ctx, uint64_t addr, uint32_t *slot,
			       uint64_t *size);

struct heapmap;

/* heap_start: the trace's brk heap start (0: unknown).  glibc: regions
 * follow glibc's layout (mmapped blocks, 64 MiB arenas); otherwise every
 * block belongs to its 64 MiB window. */
struct heapmap *heapmap_create(uint64_t page_size, uint64_t heap_start,
			       int glibc);
void heapmap_destroy(struct heapmap *h);

/* A block becomes live / is freed; -1 only when out of memory. */
int heapmap_add(struct heapmap *h, uint64_t addr, uint64_t size);
void heapmap_sub(struct heapmap *h, uint64_t addr, uint64_t size);

void heapmap_state(const struct heapmap *h, struct heapmap_state *out);

/* Attributes the gaps of the current state to the blocks above them;
 * the result, ranked by pinned bytes, stays valid until the next call
 * or heapmap_destroy.  -1 when out of memory. */
int heapmap_pins(struct heapmap *h, heapmap_find_fn find, void *ctx,
		 const struct heapmap_pin **out, size_t *n);

/* The result of the last heapmap_pins (empty before the first). */
void heapmap_last_pins(const struct heapmap *h,
		       const struct heapmap_pin **out, size_t *n);

/* The replay's consumer (replay.h) that follows the blocks and finds the
 * pinning blocks at every batch end: context, the struct heapmap. */
struct replay_consumer;
extern const struct replay_consumer heapmap_consumer;

#endif
