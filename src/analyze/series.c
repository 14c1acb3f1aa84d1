#include "series.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "format/reader.h"
#include "heapmap.h"
#include "maps.h"
#include "replay.h"

void series_init(struct series *s)
{
	memset(s, 0, sizeof(*s));
}

void series_finish(struct series *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void take_sample(struct batch *b, const struct sample *smp)
{
	b->has_rss = 1;
	b->rss_bytes = smp->rss;
	b->has_heap_free = smp->has_mallinfo;
	b->heap_free_bytes = smp->has_mallinfo ? smp->fordblks : 0;
	b->heap_bytes = smp->has_mallinfo ? smp->footprint : 0;
	b->heap_in_use_bytes = smp->has_mallinfo ? smp->uordblks : 0;
	b->heap_arena_bytes = smp->has_mallinfo ? smp->arena : 0;
	b->heap_mmapped_bytes = smp->has_mallinfo ? smp->hblkhd : 0;
	b->heap_releasable_bytes = smp->has_mallinfo ? smp->keepcost : 0;
	b->has_top = b->has_shape && b->brk_top && smp->brk;
	b->top_bytes = b->has_top && smp->brk > b->brk_top
			       ? smp->brk - b->brk_top
			       : 0;
}

int series_batch_end(struct series *s, const struct replay_batch *rb)
{
	if (s->n >= SERIES_MAX)
		return hs_error("corrupt trace: more than %u batch marks",
				SERIES_MAX);
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		if (cap > SERIES_MAX)
			cap = SERIES_MAX;
		struct batch *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		s->v = v;
		s->cap = cap;
	}
	struct batch *b = &s->v[s->n++];
	*b = (struct batch){
		.end_ns = rb->end_ns,
		.live_bytes = rb->live_bytes,
		.peak_live_bytes = rb->peak_live_bytes,
		.allocations = rb->allocations,
		.frees = rb->frees,
		.allocated_bytes = rb->allocated_bytes,
	};
	if (s->heap) {
		struct heapmap_state shape;
		heapmap_state(s->heap, &shape);
		b->has_shape = 1;
		b->footprint_bytes = shape.footprint;
		b->span_bytes = shape.span;
		b->holes_bytes = shape.holes;
		b->releasable_holes_bytes = shape.releasable;
		b->mmapped_bytes = shape.mmapped;
		b->regions = shape.regions;
		b->brk_top = shape.brk_top;
	}
	if (s->maps) {
		struct maps_state ms;
		maps_state(s->maps, &ms);
		b->has_maps = 1;
		b->mapped_bytes = ms.mapped;
		for (int k = 0; k < MAPS_KINDS; k++)
			b->mapped_kind_bytes[k] = ms.by_kind[k];
	}
	if (!rb->from_mark && s->window.valid)
		take_sample(b, &s->window);
	s->want_sample = rb->from_mark;
	memset(&s->window, 0, sizeof(s->window));
	return 0;
}

static int batch_end(void *ctx, const struct replay *r,
		     const struct replay_batch *b)
{
	(void)r;
	return series_batch_end(ctx, b);
}

const struct replay_consumer series_consumer = {
	.batch_end = batch_end,
};

void series_sample(struct series *s, const struct hs_record *rec)
{
	struct sample smp = {
		.valid = 1,
		.has_mallinfo = rec->has_mallinfo,
		.rss = rec->rss,
		.fordblks = rec->mi_fordblks,
		.footprint = rec->mi_arena + rec->mi_hblkhd,
		.uordblks = rec->mi_uordblks,
		.arena = rec->mi_arena,
		.hblkhd = rec->mi_hblkhd,
		.keepcost = rec->mi_keepcost,
		.brk = rec->brk,
	};
	if (s->want_sample && s->n) {
		take_sample(&s->v[s->n - 1], &smp);
		s->want_sample = 0;
	}
	s->window = smp;
}

int batch_value(const struct batch *b, enum batch_field f, double *v)
{
	switch (f) {
	case BATCH_LIVE:
		*v = (double)b->live_bytes;
		return 1;
	case BATCH_RSS:
		*v = (double)b->rss_bytes;
		return b->has_rss;
	case BATCH_HEAP:
		*v = (double)b->heap_bytes;
		return b->has_heap_free;
	case BATCH_FOOTPRINT:
		*v = (double)b->footprint_bytes;
		return b->has_shape;
	case BATCH_SPAN:
		*v = (double)b->span_bytes;
		return b->has_shape;
	case BATCH_HOLES:
		*v = (double)b->holes_bytes;
		return b->has_shape;
	case BATCH_RELEASABLE:
		*v = (double)b->releasable_holes_bytes;
		return b->has_shape;
	case BATCH_IN_USE:
		*v = (double)b->heap_in_use_bytes;
		return b->has_heap_free;
	case BATCH_HEAP_FREE:
		*v = (double)b->heap_free_bytes;
		return b->has_heap_free;
	case BATCH_TOP:
		*v = (double)b->top_bytes;
		return b->has_top;
	case BATCH_RETAINED:
		*v = (double)(b->holes_bytes + b->top_bytes);
		return b->has_shape;
	case BATCH_MAPPED:
		*v = (double)b->mapped_bytes;
		return b->has_maps;
	default:
		break;
	}
	if (f >= BATCH_MAPPED_KIND && f < BATCH_MAPPED_KIND + MAPS_KINDS) {
		*v = (double)b->mapped_kind_bytes[f - BATCH_MAPPED_KIND];
		return b->has_maps;
	}
	return 0;
}
