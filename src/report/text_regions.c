/* The text report's section "Growth by region": a row per region name
 * (the innermost one open when a block was allocated), a row per path of
 * nested regions, then the stacks that grow inside each region. */
#include <inttypes.h>
#include <string.h>

#include "analyze/analysis.h"
#include "words.h"
#include "writers.h"

#define NAME_WIDTH_MAX 40
#define STACKS_SHOWN 3 /* per region */
#define SERIES_ROWS 24 /* batches in the per-batch table, at most */
#define SERIES_COLUMNS 4 /* regions in it */
#define CELL 21

/* A path row's names, outermost first: "step > eval". */
static const char *path_text(const struct region_row *w, char *buf,
			     size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	if (w->outside || !w->depth)
		return w->name;
	for (size_t i = 0; i < w->depth && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? " > " : "",
				      w->path[i]);
	return buf;
}

static size_t width(const struct region_row *v, size_t n, int by_path)
{
	size_t w = strlen("region");
	char buf[512];
	for (size_t i = 0; i < n; i++) {
		const char *t = by_path ? path_text(&v[i], buf, sizeof(buf))
					: v[i].name;
		if (strlen(t) > w)
			w = strlen(t);
	}
	return w < NAME_WIDTH_MAX ? w : NAME_WIDTH_MAX;
}

static void rows(FILE *o, const struct region_row *v, size_t n, int by_path,
		 int utf8)
{
	char buf[512], b1[32], b2[32], b3[32], b4[32];
	int w = (int)width(v, n, by_path);
	fprintf(o, "  %-*s %12s %5s %16s %12s %12s\n", w,
		by_path ? "path" : "region", "live/batch", utf8 ? "R²" : "R2",
		"allocated/batch", "live at end", "leaked");
	for (size_t i = 0; i < n; i++) {
		const struct region_row *r = &v[i];
		const char *t = by_path ? path_text(r, buf, sizeof(buf))
					: r->name;
		fprintf(o, "  %-*.*s %12s %5.2f %16s %12s %12s\n", w, w, t,
			words_bytes(r->bytes_per_batch, b1, sizeof(b1)), r->r2,
			words_bytes(r->allocated_per_batch, b2, sizeof(b2)),
			words_bytes((double)r->live_bytes_at_end, b3,
				    sizeof(b3)),
			words_bytes((double)r->leaked_bytes, b4, sizeof(b4)));
	}
}

/* The top regions' bytes at each batch end, and allocated within it: the
 * phases of a step side by side (every k-th batch past SERIES_ROWS). */
static void per_batch(FILE *o, const struct region_report *r)
{
	size_t n = r->batches, cols = 0, step = (n + SERIES_ROWS - 1) /
						  SERIES_ROWS;
	const struct region_row *v[SERIES_COLUMNS];
	char name[CELL + 1], b1[32], b2[32], cell[80];
	for (size_t i = 0; i < r->nnames && cols < SERIES_COLUMNS; i++)
		if (r->names[i].allocated_bytes || r->names[i].leaked_bytes ||
		    r->names[i].live_bytes_at_end)
			v[cols++] = &r->names[i];
	if (!n || !cols)
		return;
	fprintf(o, "\n  Per batch: live at its end / allocated in it%s\n",
		step > 1 ? " (every few batches)" : "");
	fprintf(o, "  %6s", "batch");
	for (size_t c = 0; c < cols; c++) {
		snprintf(name, sizeof(name), "%s", v[c]->name);
		fprintf(o, "  %*s", CELL, name);
	}
	fputc('\n', o);
	for (size_t k = 0; k < n; k += step) {
		if (k + step >= n)
			k = n - 1; /* the last batch, always */
		fprintf(o, "  %6zu", k);
		for (size_t c = 0; c < cols; c++) {
			snprintf(cell, sizeof(cell), "%s / %s",
				 words_bytes((double)v[c]->live[k], b1,
					     sizeof(b1)),
				 words_bytes((double)v[c]->allocated[k], b2,
					     sizeof(b2)));
			fprintf(o, "  %*s", CELL, cell);
		}
		fputc('\n', o);
	}
}

void text_regions(FILE *o, const struct analysis *a,
		  const struct report_opts *ro)
{
	const struct region_report *r = &a->regions;
	char b1[32];
	if (!r->nnames)
		return;
	fprintf(o, "\nGrowth by region (per batch, after warm-up; the rows add "
		   "up to the live heap's %s/batch):\n",
		words_bytes(a->growth.live.slope, b1, sizeof(b1)));
	rows(o, r->names, r->nnames, 0, ro->utf8);
	/* paths say more than names only when regions nest */
	int nested = 0;
	for (size_t i = 0; i < r->npaths; i++)
		nested |= r->paths[i].depth > 1;
	if (nested) {
		fprintf(o, "\n  By path of nested regions, outermost first:\n");
		rows(o, r->paths, r->npaths, 1, ro->utf8);
	}
	if (r->unmatched_ends)
		fprintf(o, "  %" PRIu64 " region ends with none open: "
			   "ignored\n", r->unmatched_ends);
	if (r->open_at_end)
		fprintf(o, "  %" PRIu64 " regions still open at the end\n",
			r->open_at_end);
	if (r->folded)
		fprintf(o, "  %" PRIu64 " begins past %d nested regions or %d "
			   "paths: counted in their parent\n",
			r->folded, REGIONS_DEPTH_MAX, REGIONS_PATHS_MAX);
	per_batch(o, r);
	for (size_t i = 0; i < r->nnames; i++) {
		const struct region_row *w = &r->names[i];
		if (!w->nstacks)
			continue;
		fprintf(o, "\n  Growing inside region %s:\n", w->name);
		for (size_t j = 0; j < w->nstacks && j < STACKS_SHOWN; j++) {
			char lead[32];
			snprintf(lead, sizeof(lead), "  #%-3zu ", j + 1);
			text_stack(o, &w->stacks[j], lead, "        ", ro);
		}
	}
}
