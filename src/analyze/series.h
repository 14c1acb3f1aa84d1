/* The per-batch series: live heap at each batch end, peak within the
 * batch, event counts, and RSS / heap-free bytes from the process's
 * samples. */
#ifndef HS_SERIES_H
#define HS_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct heapmap;
struct maps;
struct hs_record;
struct replay_batch;
struct replay_consumer;

/* Batches kept at most (some 2 GB of them): a batch index is 32 bits, and
 * past this many the marks come from a corrupt trace, or a unit mistake
 * in --batches time:DURATION. */
#define SERIES_MAX (10u * 1000 * 1000)

struct batch {
	uint64_t end_ns;          /* time of the mark (or window end) */
	uint64_t live_bytes;      /* live heap at the mark */
	uint64_t peak_live_bytes; /* highest live heap within the batch */
	uint64_t rss_bytes, heap_free_bytes;
	uint64_t heap_bytes; /* the allocator's footprint: mallinfo2 arena +
			      * hblkhd, valid with has_heap_free */
	/* the rest of mallinfo2, valid with has_heap_free */
	uint64_t heap_in_use_bytes;     /* uordblks */
	uint64_t heap_arena_bytes;      /* arena */
	uint64_t heap_mmapped_bytes;    /* hblkhd */
	uint64_t heap_releasable_bytes; /* keepcost: the top chunk */
	int has_rss, has_heap_free;
	uint64_t allocations, frees, allocated_bytes;
	/* the heap's shape from the trace (heapmap.h), valid with has_shape */
	int has_shape;
	uint64_t footprint_bytes, span_bytes, holes_bytes;
	uint64_t releasable_holes_bytes, mmapped_bytes, regions;
	uint64_t brk_top; /* heapmap_state's */
	/* the free top of the brk heap, from the program break in the
	 * sample: glibc keeps it until it passes its trim threshold */
	int has_top;
	uint64_t top_bytes;
	/* memory the program mapped itself (maps.h), valid with has_maps */
	int has_maps;
	uint64_t mapped_bytes;           /* not PROT_NONE */
	uint64_t mapped_kind_bytes[6];   /* by enum hs_map_kind */
};

/* The figures a batch may have, for fits and sparklines. */
enum batch_field {
	BATCH_LIVE,
	BATCH_RSS,
	BATCH_HEAP,
	BATCH_FOOTPRINT,
	BATCH_SPAN,
	BATCH_HOLES,
	BATCH_RELEASABLE,
	BATCH_IN_USE,
	BATCH_HEAP_FREE,
	BATCH_TOP,
	BATCH_RETAINED, /* holes + top */
	BATCH_MAPPED,   /* mapped by the program */
	BATCH_MAPPED_KIND, /* + enum hs_map_kind: mapped of that kind */
};

/* Field f of b into *v: 1 if b has it, else 0. */
int batch_value(const struct batch *b, enum batch_field f, double *v);

struct sample {
	int valid, has_mallinfo;
	uint64_t rss, fordblks, footprint;
	uint64_t uordblks, arena, hblkhd, keepcost;
	uint64_t brk; /* 0: unknown */
};

struct series {
	struct batch *v;  /* closed batches */
	size_t n, cap;
	struct sample window; /* latest sample since the last batch end */
	int want_sample;  /* the next sample belongs to batch n-1 */
	const struct heapmap *heap; /* each batch takes its shape; NULL: the
				     * shape is not followed */
	const struct maps *maps;    /* each batch takes the mapped bytes;
				     * NULL: the trace has no mappings */
};

void series_init(struct series *s);
void series_finish(struct series *s);

/* Closes batch b, with the heap's shape when s->heap is set; -1
 * (hs_error) out of memory or past SERIES_MAX batches.  A batch that a
 * mark ends takes RSS from the SAMPLE record that follows the mark; a
 * time window, from the latest sample taken within it. */
int series_batch_end(struct series *s, const struct replay_batch *b);
void series_sample(struct series *s, const struct hs_record *rec);

/* The replay's consumer (replay.h) that closes the batches: context, the
 * struct series. */
extern const struct replay_consumer series_consumer;

#endif
