#include "growth.h"

#include <string.h>

#include "series.h"

/* Least squares over the batches [from, n) that have the value. */
static void fit_batches(const struct series *s, size_t from,
			enum batch_field what, struct regress *out, double *mean,
			int *has)
{
	size_t m = 0, missing = 0;
	long double my = 0, mx = 0;
	double v;
	for (size_t i = from; i < s->n; i++) {
		if (!batch_value(&s->v[i], what, &v)) {
			missing++;
			continue;
		}
		my += v;
		mx += i;
		m++;
	}
	memset(out, 0, sizeof(*out));
	*mean = 0;
	/* shape figures for only some batches: not comparable; RSS and
	 * mallinfo2 may be missing at some marks (the recorder reads
	 * mallinfo2 within a time budget) */
	*has = m >= 2 && (what == BATCH_RSS || what == BATCH_HEAP ||
			  what == BATCH_IN_USE || what == BATCH_HEAP_FREE ||
			  !missing);
	if (!m)
		return;
	my /= m;
	mx /= m;
	struct regress_sums sums = { .n = m };
	for (size_t i = from; i < s->n; i++) {
		if (!batch_value(&s->v[i], what, &v))
			continue;
		long double x = i - mx, y = v - my;
		sums.sx += x;
		sums.sxx += x * x;
		sums.sy += y;
		sums.sxy += x * y;
		sums.syy += y * y;
	}
	regress_from_sums(&sums, out);
	out->intercept += (double)(my - out->slope * mx);
	*mean = (double)my;
}

/* The heap's shape, mallinfo2's figures and the decomposition of RSS. */
static void fit_shape(struct growth *g, const struct series *s,
		      size_t warmup, int glibc)
{
	double mean;
	int has_in_use, has_free;
	fit_batches(s, warmup, BATCH_FOOTPRINT, &g->footprint, &mean,
		    &g->has_shape);
	fit_batches(s, warmup, BATCH_SPAN, &g->span, &mean, &g->has_shape);
	fit_batches(s, warmup, BATCH_HOLES, &g->holes, &mean, &g->has_shape);
	fit_batches(s, warmup, BATCH_RELEASABLE, &g->releasable, &mean,
		    &g->has_shape);
	fit_batches(s, warmup, BATCH_IN_USE, &g->in_use, &mean, &has_in_use);
	fit_batches(s, warmup, BATCH_HEAP_FREE, &g->heap_free, &mean,
		    &has_free);
	g->has_mallinfo = has_in_use && has_free;
	/* glibc retains the holes and the free top of the brk heap; with the
	 * top known for only some batches, the holes alone */
	fit_batches(s, warmup, BATCH_TOP, &g->top, &mean, &g->has_top);
	g->retained = g->holes;
	if (g->has_top)
		fit_batches(s, warmup, BATCH_RETAINED, &g->retained, &mean,
			    &has_free);
	/* retained memory is known only where glibc's layout is */
	g->has_decomposition = g->has_rss && g->has_shape && glibc;
	if (g->has_decomposition)
		g->other_slope = g->rss.slope - g->live.slope -
				 g->retained.slope -
				 (g->has_maps ? g->mapped.slope : 0);
}

void growth_fit(struct growth *g, const struct series *s, size_t warmup,
		int glibc)
{
	int has;
	memset(g, 0, sizeof(*g));
	fit_batches(s, warmup, BATCH_LIVE, &g->live, &g->live_mean, &has);
	fit_batches(s, warmup, BATCH_RSS, &g->rss, &g->rss_mean, &g->has_rss);
	fit_batches(s, warmup, BATCH_HEAP, &g->heap, &g->heap_mean,
		    &g->has_heap);
	fit_batches(s, warmup, BATCH_MAPPED, &g->mapped, &g->mapped_mean,
		    &g->has_maps);
	for (int k = 0; k < 6 && g->has_maps; k++) {
		double mean;
		fit_batches(s, warmup, BATCH_MAPPED_KIND + k,
			    &g->mapped_kind[k], &mean, &has);
	}
	fit_shape(g, s, warmup, glibc);
}
