/* The text report's "Growth by operator" (or "by group"): one row per
 * group of stacks (analyze --group-by-frame, --operators), the unmatched
 * row, their sum against the live heap's slope, and the top stacks of
 * the groups that grow most. */
#include <inttypes.h>
#include <string.h>

#include "analyze/analysis.h"
#include "analyze/groups.h"
#include "words.h"
#include "writers.h"

#define ROWS_SHOWN 15
#define STACKS_SHOWN 3
#define NAME_WIDTH_MAX 40

static void row_line(FILE *o, const struct group_row *r, int width,
		     int utf8)
{
	char b1[32], b2[32], b3[32];
	fprintf(o, "  %-*.*s %11s  %4.2f %12s %10s %12" PRIu64 " %7zu\n",
		width, NAME_WIDTH_MAX, r->name,
		words_bytes(r->bytes_per_batch, b1, sizeof(b1)), r->r2,
		words_bytes((double)r->live_bytes_at_end, b2, sizeof(b2)),
		words_bytes((double)r->leaked_bytes, b3, sizeof(b3)),
		r->allocations, r->stacks);
	(void)utf8;
}

void text_groups(FILE *o, const struct analysis *a,
		 const struct report_opts *ro)
{
	const struct groups *g = a->groups;
	char b1[32], b2[32];
	if (!g)
		return;
	const char *what = g->preset ? "operator" : "group";
	size_t named = g->nrows ? g->nrows - 1 : 0;
	fprintf(o, "\nGrowth by %s (%s%s%s%s; %zu %ss, %zu of %zu stacks "
		   "matched):\n",
		what, g->preset ? "--operators " : "--group-by-frame ",
		g->preset ? g->preset : g->pattern, g->preset ? ": " : "",
		g->preset ? g->pattern : "", named, what, g->matched_stacks,
		g->stacks);
	int width = (int)strlen("= live heap");
	size_t shown = named < ROWS_SHOWN ? named : ROWS_SHOWN;
	for (size_t i = 0; i < g->nrows; i++) {
		if (i >= shown && !g->rows[i].unmatched)
			continue;
		int len = (int)strlen(g->rows[i].name);
		if (len > width)
			width = len < NAME_WIDTH_MAX ? len : NAME_WIDTH_MAX;
	}
	fprintf(o, "  %-*s %11s  %4s %12s %10s %12s %7s\n", width, what,
		"per batch", ro->utf8 ? "R² " : "R2", "live at end", "leaked",
		"allocations", "stacks");
	double rest = 0;
	size_t nrest = 0;
	for (size_t i = 0; i < g->nrows; i++) {
		const struct group_row *r = &g->rows[i];
		if (r->unmatched || i < shown) {
			row_line(o, r, width, ro->utf8);
			continue;
		}
		rest += r->bytes_per_batch;
		nrest++;
		if (i + 1 < g->nrows && g->rows[i + 1].unmatched)
			fprintf(o, "  %-*s %11s  (%zu more %s%s)\n", width,
				"...", words_bytes(rest, b1, sizeof(b1)), nrest,
				what, nrest == 1 ? "" : "s");
	}
	fprintf(o, "  %-*s %11s  (the live heap's; the rows add up to %s)\n",
		width, "= live heap",
		words_bytes(a->growth.live.slope, b1, sizeof(b1)),
		words_bytes(g->rows_slope, b2, sizeof(b2)));
	size_t told = 0;
	for (size_t i = 0; i < g->nrows && told < STACKS_SHOWN; i++) {
		const struct group_row *r = &g->rows[i];
		if (r->unmatched || !r->stacks || r->bytes_per_batch <= 0)
			continue;
		fprintf(o, "\n%s: top stack of %zu, %s/batch\n", r->name,
			r->stacks,
			words_bytes(r->top.bytes_per_batch, b1, sizeof(b1)));
		text_frames(o, r->top.frames, r->top.nframes, "      ", ro);
		told++;
	}
}
