#include "report_text.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "analysis.h"
#include "symbols.h"

#define TABLE_MAX 24   /* more batches than this: sparklines */
#define SPARK_WIDTH 60
#define FRAMES_SHOWN 12
#define PATHS_SHOWN 5

static const char *human(double v, char *buf, size_t cap)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
					     "TiB" };
	double a = fabs(v);
	int u = 0;
	while (a >= 1024 && u < 4) {
		a /= 1024;
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%.0f B", v);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

static const char *source_name(const struct analysis *a)
{
	switch (a->source) {
	case BATCHES_MARKER: return "batch marks";
	case BATCHES_TIME: return "time windows";
	default: return "time windows (no batch marks in the trace)";
	}
}

static void summary(FILE *o, const struct analysis *a)
{
	const struct replay_totals *t = &a->totals;
	char b1[32], b2[32], b3[32];
	fprintf(o, "heapslope analyze: %s\n", a->path);
	fprintf(o, "  program   ");
	for (int i = 0; i < a->argc && i < 8; i++)
		fprintf(o, "%s%s", i ? " " : "", a->argv[i]);
	if (a->argc > 8)
		fprintf(o, " ...");
	fprintf(o, " (pid %" PRIu64, a->pid);
	int st = (int)a->wait_status;
	if (a->has_exit && WIFEXITED(st))
		fprintf(o, ", exit status %d", WEXITSTATUS(st));
	else if (a->has_exit && WIFSIGNALED(st))
		fprintf(o, ", killed by signal %d", WTERMSIG(st));
	fprintf(o, ")\n");
	fprintf(o, "  trace     %" PRIu64 " events in %.3f s, %s\n", a->events,
		a->duration_ns / 1e9,
		a->complete ? "complete"
		: a->truncated
			? "INCOMPLETE: cut inside a frame, read up to the "
			  "last whole frame"
			: "INCOMPLETE: the process ended without closing it "
			  "(killed?)");
	fprintf(o, "  events    %" PRIu64 " allocations, %" PRIu64
		   " frees, %" PRIu64 " reallocs, %" PRIu64 " failed, %" PRIu64
		   " unmatched frees\n",
		t->allocations, t->frees, t->reallocs, t->failed_allocations,
		t->unmatched_frees);
	fprintf(o, "  heap      %s allocated, peak live %s, %s in %" PRIu64
		   " blocks still live at the end\n",
		human((double)t->allocated_bytes, b1, sizeof(b1)),
		human((double)t->peak_live_bytes, b2, sizeof(b2)),
		human((double)t->live_bytes, b3, sizeof(b3)), t->live_blocks);
	fprintf(o, "  batches   %zu from %s", a->series.n, source_name(a));
	if (a->source != BATCHES_MARKER)
		fprintf(o, " of %g s", a->window_ns / 1e9);
	fprintf(o, ", warm-up %zu%s\n", a->warmup,
		a->warmup_auto ? " (automatic)" : "");
}

static void verdict(FILE *o, const struct analysis *a, int utf8)
{
	char b1[32], b2[32];
	const char *r2 = utf8 ? "R²" : "R2";
	fprintf(o, "\nVerdict: %s\n", verdict_name(a->verdict.verdict));
	fprintf(o, "  live heap %s/batch (%s %.3f)", 
		human(a->live_fit.slope, b1, sizeof(b1)), r2, a->live_fit.r2);
	if (a->has_rss_fit)
		fprintf(o, ", RSS %s/batch (%s %.3f)",
			human(a->rss_fit.slope, b2, sizeof(b2)), r2,
			a->rss_fit.r2);
	else
		fprintf(o, ", RSS unknown (no samples)");
	if (a->has_heap_fit)
		fprintf(o, ", allocator footprint %s/batch",
			human(a->heap_fit.slope, b1, sizeof(b1)));
	fprintf(o, ", over %zu batches\n", a->live_fit.n);
	fprintf(o, "  why: %s\n", a->verdict.text);
}

static void spark(FILE *o, const char *name, const struct analysis *a,
		  int rss, int utf8)
{
	static const char *const bars[] = { "▁", "▂", "▃", "▄",
					    "▅", "▆", "▇", "█" };
	static const char ascii[] = "_.-~=+*#";
	const struct series *s = &a->series;
	size_t n = s->n, w = n < SPARK_WIDTH ? n : SPARK_WIDTH;
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (rss && !s->v[i].has_rss)
			continue;
		double v = rss ? s->v[i].rss_bytes : s->v[i].live_bytes;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	if (lo > hi)
		return;
	fprintf(o, "  %-5s ", name);
	for (size_t c = 0; c < w; c++) {
		/* each column shows the last batch of its share */
		size_t i = (c + 1) * n / w - 1;
		if (rss && !s->v[i].has_rss) {
			fputc(' ', o);
			continue;
		}
		double v = rss ? s->v[i].rss_bytes : s->v[i].live_bytes;
		int k = hi > lo ? (int)((v - lo) / (hi - lo) * 7.999) : 0;
		if (utf8)
			fputs(bars[k], o);
		else
			fputc(ascii[k], o);
	}
	char b1[32], b2[32];
	fprintf(o, "  %s .. %s\n", human(lo, b1, sizeof(b1)),
		human(hi, b2, sizeof(b2)));
}

static void series(FILE *o, const struct analysis *a, int utf8)
{
	const struct series *s = &a->series;
	if (!s->n) {
		fprintf(o, "\nNo batches: mark them with HEAPSLOPE_MARK_BATCH() "
			   "or use --batches time:DURATION.\n");
		return;
	}
	if (s->n > TABLE_MAX) {
		fprintf(o, "\nPer batch (%zu batches, %zu per column):\n", s->n,
			(s->n + SPARK_WIDTH - 1) / SPARK_WIDTH);
		spark(o, "live", a, 0, utf8);
		spark(o, "RSS", a, 1, utf8);
		return;
	}
	fprintf(o, "\nPer batch:\n  %5s %9s %12s %12s %12s %12s %8s %8s\n",
		"batch", "end s", "live", "peak live", "RSS", "heap free",
		"allocs", "frees");
	for (size_t i = 0; i < s->n; i++) {
		const struct batch *b = &s->v[i];
		char l[32], p[32], r[32] = "-", f[32] = "-";
		human((double)b->live_bytes, l, sizeof(l));
		human((double)b->peak_live_bytes, p, sizeof(p));
		if (b->has_rss)
			human((double)b->rss_bytes, r, sizeof(r));
		if (b->has_heap_free)
			human((double)b->heap_free_bytes, f, sizeof(f));
		fprintf(o, "  %5zu %9.3f %12s %12s %12s %12s %8" PRIu64
			   " %8" PRIu64 "%s\n",
			i, b->end_ns / 1e9, l, p, r, f, b->allocations,
			b->frees, i < a->warmup ? "  (warm-up)" : "");
	}
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

static void frames(FILE *o, const struct stack_growth *g, const char *indent)
{
	if (!g->nframes) {
		fprintf(o, "%s(no frames recorded)\n", indent);
		return;
	}
	for (size_t i = 0; i < g->nframes && i < FRAMES_SHOWN; i++) {
		const struct frame *f = &g->frames[i];
		char where[64];
		if (f->module)
			snprintf(where, sizeof(where), "%s+0x%" PRIx64,
				 base_name(f->module), f->offset);
		else
			snprintf(where, sizeof(where), "0x%" PRIx64,
				 f->address);
		fprintf(o, "%s%s", indent, f->function ? f->function : where);
		if (f->file)
			fprintf(o, "  %s:%u", base_name(f->file), f->line);
		else if (f->function)
			fprintf(o, "  (%s)", where);
		fprintf(o, "%s\n", f->inlined ? "  [inlined]" : "");
	}
	if (g->nframes > FRAMES_SHOWN)
		fprintf(o, "%s... %zu more frames\n", indent,
			g->nframes - FRAMES_SHOWN);
}

static void head(FILE *o, const struct stack_growth *g, const char *lead,
		 int utf8)
{
	char b1[32], b2[32], b3[32];
	fprintf(o, "%s%s/batch  %s %.2f  live at last batch %s  leaked %s in "
		   "%" PRIu64 " blocks  %" PRIu64 " allocations\n",
		lead, human(g->bytes_per_batch, b1, sizeof(b1)),
		utf8 ? "R²" : "R2", g->r2,
		human((double)g->live_bytes_at_end, b2, sizeof(b2)),
		human((double)g->leaked_bytes, b3, sizeof(b3)),
		g->leaked_blocks, g->allocations);
}

static void stacks(FILE *o, const struct analysis *a, int utf8)
{
	if (!a->nstacks) {
		fprintf(o, "\nNo heap allocations recorded.\n");
		return;
	}
	if (!a->shown) /* --top 0 */
		return;
	fprintf(o, "\nTop %s by growth per batch (%zu of %zu):\n",
		a->by_site ? "allocation sites" : "stacks", a->shown,
		a->nstacks);
	for (size_t i = 0; i < a->shown; i++) {
		const struct stack_growth *g = &a->stacks[i];
		char lead[32];
		snprintf(lead, sizeof(lead), "\n#%-3zu ", i + 1);
		head(o, g, lead, utf8);
		frames(o, g, "      ");
		if (!a->by_site)
			continue;
		/* only the paths the analysis symbolized (--top of them) */
		size_t np = a->paths_shown < PATHS_SHOWN ? a->paths_shown
							 : PATHS_SHOWN;
		if (np > g->npaths)
			np = g->npaths;
		for (size_t j = 0; j < np; j++) {
			fprintf(o, "    path %zu of %zu: ", j + 1, g->npaths);
			head(o, &g->paths[j], "", utf8);
			frames(o, &g->paths[j], "        ");
		}
		if (g->npaths > np)
			fprintf(o, "    ... %zu more paths\n", g->npaths - np);
	}
}

static void notes(FILE *o, const struct analysis *a)
{
	const char *first;
	size_t n = a->symbols ? symbols_stale(a->symbols, &first) : 0;
	if (n)
		fprintf(o, "\nNote: %s%s changed since the recording (another "
			   "build-id): its frames show as module+offset; "
			   "--debuginfo-path can point at its matching debug "
			   "file.\n", first, n > 1 ? " and other modules" : "");
}

int report_text(FILE *o, const struct analysis *a, int utf8)
{
	summary(o, a);
	verdict(o, a, utf8);
	series(o, a, utf8);
	stacks(o, a, utf8);
	notes(o, a);
	fflush(o);
	return ferror(o) ? -1 : 0;
}
