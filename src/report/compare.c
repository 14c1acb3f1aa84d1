/* Several traces' growth figures side by side, one line each: the same
 * program under different allocators, say. */
#include <stdio.h>

#include "analyze/analysis.h"
#include "base/error.h"
#include "words.h"
#include "writers.h"

int compare_write(FILE *o, struct analysis *const *v, size_t n,
		  const struct report_opts *opts)
{
	char live[32], rss[32], ret[32], other[32], use[32], mapped[32];
	(void)opts;
	fprintf(o, "heapslope analyze: %zu traces side by side (bytes per "
		   "batch, after each one's warm-up)\n\n", n);
	fprintf(o, "  %-28s %-10s %7s %10s %10s %10s %10s %10s %10s  %s\n",
		"trace", "allocator", "batches", "live", "RSS", "retained",
		"mapped", "other", "in use", "verdict");
	for (size_t i = 0; i < n; i++) {
		const struct analysis *a = v[i];
		const struct growth *g = &a->growth;
		words_bytes(g->live.slope, live, sizeof(live));
		snprintf(rss, sizeof(rss), "-");
		snprintf(ret, sizeof(ret), "-");
		snprintf(other, sizeof(other), "-");
		snprintf(use, sizeof(use), "-");
		snprintf(mapped, sizeof(mapped), "-");
		if (g->has_maps)
			words_bytes(g->mapped.slope, mapped, sizeof(mapped));
		if (g->has_rss)
			words_bytes(g->rss.slope, rss, sizeof(rss));
		if (g->has_decomposition) {
			words_bytes(g->retained.slope, ret, sizeof(ret));
			words_bytes(g->other_slope, other, sizeof(other));
		}
		if (g->has_mallinfo)
			words_bytes(g->in_use.slope, use, sizeof(use));
		fprintf(o, "  %-28.28s %-10.10s %7zu %10s %10s %10s %10s %10s "
			   "%10s  %s\n",
			words_file(a->path), a->allocator ? a->allocator : "?",
			a->series.n, live, rss, ret, mapped, other, use,
			words_verdict(a->verdict.verdict));
	}
	fprintf(o, "\n  live: the live heap's slope; RSS = live + retained "
		   "(free memory inside glibc's heap) + mapped (by the program "
		   "itself) + other; in use: glibc's mallinfo2.  '-': not known "
		   "for this trace or allocator.\n");
	if (fflush(o) != 0 || ferror(o))
		return hs_error("cannot write the report");
	return 0;
}
