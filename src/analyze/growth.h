/* The growth of the per-batch series: least-squares lines against the
 * batch index after the warm-up, for the live heap, RSS, the allocator's
 * footprint, the heap's shape and mallinfo2, and the decomposition of
 * RSS's slope into live heap + retained by glibc + other. */
#ifndef HS_GROWTH_H
#define HS_GROWTH_H

#include <stddef.h>

#include "regress.h"

struct series;

struct growth {
	struct regress live, rss;
	int has_rss;
	/* the allocator's footprint (mallinfo2 arena + hblkhd): RSS without
	 * the recorder's own buffers, mmaps, stacks and code */
	struct regress heap;
	int has_heap;
	/* the means after the warm-up: the verdict weighs slopes against
	 * them */
	double live_mean, rss_mean, heap_mean;
	/* the heap's shape (heapmap.h), when every batch has it */
	int has_shape;
	struct regress footprint, span, holes, releasable;
	/* the brk heap's free top (from the program break in the samples),
	 * and what glibc retains: holes + top when the top is known */
	struct regress top, retained;
	int has_top;
	/* mallinfo2 at the marks (glibc only) */
	struct regress in_use, heap_free;
	int has_mallinfo;
	/* memory the program mapped itself (maps.h), and by kind */
	int has_maps;
	struct regress mapped, mapped_kind[6];
	double mapped_mean;
	/* RSS slope = live + retained (holes + top) + mapped (with maps) +
	 * other, when both known */
	int has_decomposition;
	double other_slope;
};

/* Fits the batches [warmup, s->n) of s; glibc: the heap follows glibc's
 * layout, so the memory it retains is known. */
void growth_fit(struct growth *g, const struct series *s, size_t warmup,
		int glibc);

#endif
