/* The terminal report, read top-down: summary, verdict with the numbers
 * that decided it, where the growth goes, the per-batch series, the top
 * growing stacks, the blocks that pin the heap. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyze/analysis.h"
#include "analyze/pyframes.h"
#include "analyze/recording.h"
#include "analyze/symbols.h"
#include "base/error.h"
#include "format/trace_format.h"
#include "frame_names.h"
#include "words.h"
#include "writers.h"

#define TABLE_MAX 24   /* more batches than this: sparklines */
#define SPARK_WIDTH 60
#define FRAMES_SHOWN 12
/* frames shown, by default, before a gap that leads to the first Python
 * frame, or the first of the program's own code */
#define NATIVE_BEFORE_KEPT 6
#define PATHS_SHOWN 5

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
	int v;
	enum words_exit how =
		a->has_exit ? words_exit(a->wait_status, &v) : WORDS_EXIT_OTHER;
	if (how == WORDS_EXIT_STATUS)
		fprintf(o, ", exit status %d", v);
	else if (how == WORDS_EXIT_SIGNAL)
		fprintf(o, ", killed by signal %d", v);
	fprintf(o, ")\n");
	fprintf(o, "  trace     %" PRIu64 " events in %.3f s, %s\n", a->events,
		a->duration_ns / 1e9,
		a->complete && a->has_end && a->end_reason == HS_END_SIGNAL
			? "complete, to the signal that killed it"
		: a->complete ? "complete"
		: a->writing
			? "INCOMPLETE: still being written (its process is "
			  "running), read up to the last whole chunk"
		: a->truncated
			? "INCOMPLETE: cut inside a chunk, read up to the "
			  "last whole chunk"
			: "INCOMPLETE: the process ended without closing it "
			  "(killed?)");
	if (a->stopped[0])
		fprintf(o, "  STOPPED   recording stopped early: %s; what "
			   "follows covers the run up to there\n", a->stopped);
	if (a->unrecorded)
		fprintf(o, "  UNRECORDED %" PRIu64 " calls the recorder saw but "
			   "could not record (heapslope-record(1), signal "
			   "handlers)\n", a->unrecorded);
	if (a->malloc_owner)
		fprintf(o, "  NOT SEEN  the program's malloc is %s's own: its "
			   "allocations were not recorded\n", a->malloc_owner);
	fprintf(o, "  events    %" PRIu64 " allocations, %" PRIu64
		   " frees, %" PRIu64 " reallocs, %" PRIu64 " failed, %" PRIu64
		   " unmatched frees",
		t->allocations, t->frees, t->reallocs, t->failed_allocations,
		t->unmatched_frees);
	/* what unmatched frees may free */
	if (a->has_before && a->before_allocs)
		fprintf(o, "; %" PRIu64 " allocation%s (%s) made before "
			   "recording started, not recorded",
			a->before_allocs, a->before_allocs == 1 ? "" : "s",
			words_bytes((double)a->before_bytes, b1, sizeof(b1)));
	fprintf(o, "\n");
	fprintf(o, "  heap      %s allocated, peak live %s, %s in %" PRIu64
		   " blocks still live at the end\n",
		words_bytes((double)t->allocated_bytes, b1, sizeof(b1)),
		words_bytes((double)t->peak_live_bytes, b2, sizeof(b2)),
		words_bytes((double)t->live_bytes, b3, sizeof(b3)),
		t->live_blocks);
	fprintf(o, "  batches   %zu from %s", a->series.n, source_name(a));
	if (a->source != BATCHES_MARKER)
		fprintf(o, " of %g s", a->window_ns / 1e9);
	fprintf(o, ", warm-up %zu%s", a->warmup,
		a->warmup_auto ? " (automatic)" : "");
	/* the units below are per batch: here, per window */
	if (a->source != BATCHES_MARKER)
		fprintf(o, "; \"/batch\" below is per %g s window",
			a->window_ns / 1e9);
	fputc('\n', o);
}

/* The other traces of the recording, when there are: which is which. */
static int recording(FILE *o, const struct analysis *a)
{
	if (a->nrecording < 2)
		return 0;
	fputc('\n', o);
	if (recording_write(o, a->recording, a->nrecording, a->recording_main))
		return -1;
	if (a->recording_main != 0)
		fprintf(o, "  this report is of %s, not of the main trace: "
			   "heapslope analyze %s\n",
			words_file(a->path), a->recording[a->recording_main].path);
	return 0;
}

/* record's PYTHONMALLOC=malloc, for a Python program (issue 11 item 4). */
static void pymalloc_line(FILE *o, const struct analysis *a)
{
	if (a->python && a->py && !pyframes_any(a->py))
		fprintf(o, "  python    no Python frames in the stacks "
			   "(recorded with --no-python, or by an interpreter "
			   "whose frames heapslope cannot read)\n");
	if (a->pymalloc_replaced && a->python)
		fprintf(o, "  python    recorded with PYTHONMALLOC=malloc (set by "
			   "heapslope record): RSS may grow differently than "
			   "with pymalloc in production; record --keep-pymalloc "
			   "keeps pymalloc, whose arenas are then measured as "
			   "mappings\n");
}

/* The stretch analysed, and what was left out automatically. */
static void range(FILE *o, const struct analysis *a)
{
	const struct analysis_range *rg = &a->range;
	const int by_batch = rg->from_batch || rg->until_batch != UINT64_MAX;
	const int by_time = rg->from_ns || rg->until_ns != RANGE_END;
	if (!by_batch && !by_time && !rg->from_set && !rg->until_set)
		return;
	fprintf(o, "  range     ");
	if (by_batch) {
		fprintf(o, "batches %" PRIu64 " to ", rg->from_batch);
		if (rg->until_batch == UINT64_MAX)
			fprintf(o, "the last");
		else
			fprintf(o, "%" PRIu64, rg->until_batch - 1);
		fprintf(o, " of the run's %" PRIu64 "%s", a->batch_marks,
			by_time ? ", " : "\n");
	}
	if (by_time || !by_batch) {
		fprintf(o, "%.3f s to ", rg->from_ns / 1e9);
		if (rg->until_ns == RANGE_END)
			fprintf(o, "the end");
		else
			fprintf(o, "%.3f s", rg->until_ns / 1e9);
		fprintf(o, " of the run's %.3f s\n", a->duration_ns / 1e9);
	}
	if (rg->left_out[0])
		fprintf(o, "  cut       %s\n", rg->left_out);
}

/* The mapping stack that grows most, in one line, under a `mapped`
 * verdict. */
static void top_mapping(FILE *o, const struct analysis *a,
			const struct report_opts *ro)
{
	char name[512];
	static const char *const kinds[] = { "anon", "file", "shm", "memfd",
					     "sysv", "other" };
	const struct stack_growth *m = &a->map_ranked[0];
	const struct map_stack *info = &a->map_info[0];
	const char *fn = NULL;
	char b1[32];
	for (size_t i = 0; i < m->nframes && !fn; i++)
		fn = m->frames[i].function;
	fprintf(o, "  grows most: the %s mapping%s%s made in %s, %s/batch "
		   "(mapping stack #1 below)\n",
		info->kind < 6 ? kinds[info->kind] : "other",
		info->path ? " of " : "", info->path ? info->path : "",
		!fn ? "an unsymbolized function"
		: ro->full_names ? fn
				 : name_shorten(fn, ro->utf8, name, sizeof(name)),
		words_bytes(m->bytes_per_batch, b1, sizeof(b1)));
}

/* What a mapping stack's frames say of a runtime that keeps a heap of
 * its own in the memory it maps: what is there, and what names it; NULL
 * when none is known. */
static const char *runtime_heap(const struct analysis *a,
				const struct stack_growth *m)
{
	/* CPython with its own allocator kept: what the interpreter itself
	 * maps is pymalloc's arenas */
	const char *mod0 = m->nframes && m->frames[0].module
				   ? words_file(m->frames[0].module)
				   : "";
	if (a->python && !a->pymalloc_replaced &&
	    (!strncmp(mod0, "python3", 7) || !strncmp(mod0, "libpython3", 10)))
		return "CPython's own object allocator (pymalloc's arenas): "
		       "record without --keep-pymalloc, and its objects are "
		       "malloc blocks with their Python lines";
	for (size_t i = 0; i < m->nframes; i++) {
		const struct frame *f = &m->frames[i];
		const char *fn = f->function ? f->function : "";
		const char *mod = f->module ? words_file(f->module) : "";
		if (!strncmp(fn, "v8::", 4))
			return "V8's JavaScript heap: its objects are not "
			       "malloc blocks, and their JavaScript "
			       "allocation sites are not in these stacks; a "
			       "heap snapshot names them (node "
			       "--heapsnapshot-signal=SIGUSR2, or the "
			       "inspector)";
		if (!strncmp(mod, "libjvm.so", 9))
			return "the JVM's Java heap: its objects are not "
			       "malloc blocks, and their Java allocation "
			       "sites are not in these stacks; a heap dump "
			       "names them (jcmd PID GC.heap_dump)";
		if (!strncmp(mod, "libcoreclr.so", 13))
			return ".NET's managed heap: its objects are not "
			       "malloc blocks; dotnet-gcdump names them";
	}
	return NULL;
}

static void verdict(FILE *o, const struct analysis *a,
		    const struct report_opts *ro)
{
	const int utf8 = ro->utf8;
	const struct growth *g = &a->growth;
	char b1[32], b2[32];
	const char *r2 = utf8 ? "R²" : "R2";
	fprintf(o, "\nVerdict: %s\n", words_verdict(a->verdict.verdict));
	fprintf(o, "  live heap %s/batch (%s %.3f)", 
		words_bytes(g->live.slope, b1, sizeof(b1)), r2, g->live.r2);
	if (g->has_rss)
		fprintf(o, ", RSS %s/batch (%s %.3f)",
			words_bytes(g->rss.slope, b2, sizeof(b2)), r2,
			g->rss.r2);
	else if (a->samples)
		fprintf(o, ", RSS unknown (sampled at fewer than 2 batches)");
	else
		fprintf(o, ", RSS unknown (no samples)");
	if (g->has_heap)
		fprintf(o, ", allocator footprint %s/batch",
			words_bytes(g->heap.slope, b1, sizeof(b1)));
	fprintf(o, ", over %zu batches\n", g->live.n);
	fprintf(o, "  why: %s\n", a->verdict.text);
	if (a->verdict.verdict == VERDICT_MAPPED && a->maps_shown) {
		top_mapping(o, a, ro);
		const char *rt = runtime_heap(a, &a->map_ranked[0]);
		if (rt)
			fprintf(o, "  runtime: it is %s\n", rt);
	}
}

/* " (42%)": v's share of RSS's slope, or "" without RSS. */
static const char *share(const struct growth *g, double v, char *buf,
			 size_t n)
{
	buf[0] = 0;
	double pct = g->rss.slope != 0 ? 100 * v / g->rss.slope : 0;
	if (g->has_rss && g->rss.slope != 0 && fabs(pct) < 10000)
		/* no "-0%" for a small negative term */
		snprintf(buf, n, " %5.0f%%", fabs(pct) < 0.5 ? 0 : pct);
	else if (g->has_rss)
		snprintf(buf, n, "      ");
	return buf;
}

/* The memory the program mapped itself, as a term of RSS's growth. */
static void mapped_row(FILE *o, const struct growth *g)
{
	char b1[32], b2[32];
	if (!g->has_maps)
		return;
	fprintf(o, "  + mapped by program%12s%s  mmap, shm, memfd, shmat "
		   "outside malloc\n",
		words_bytes(g->mapped.slope, b1, sizeof(b1)),
		share(g, g->mapped.slope, b2, sizeof(b2)));
}

/* Where RSS growth goes: live + retained + mapped + other, and glibc's
 * view. */
static void decomposition(FILE *o, const struct analysis *a)
{
	const struct growth *g = &a->growth;
	char b1[32], b2[32], b3[32], b4[32];
	if (!g->has_shape || !a->series.n)
		return;
	fprintf(o, "\nWhere the growth goes (per batch, after warm-up; share "
		   "of RSS's):\n");
	if (g->has_rss)
		fprintf(o, "  RSS                %12s\n",
			words_bytes(g->rss.slope, b1, sizeof(b1)));
	fprintf(o, "  %s live heap        %12s%s  blocks the program holds\n",
		g->has_rss ? "=" : " ",
		words_bytes(g->live.slope, b1, sizeof(b1)),
		share(g, g->live.slope, b4, sizeof(b4)));
	if (g->has_decomposition) {
		fprintf(o, "  + retained by glibc%12s%s  free memory it keeps: "
			   "holes %s",
			words_bytes(g->retained.slope, b1, sizeof(b1)),
			share(g, g->retained.slope, b4, sizeof(b4)),
			words_bytes(g->holes.slope, b2, sizeof(b2)));
		if (g->has_top)
			fprintf(o, ", top of the heap %s",
				words_bytes(g->top.slope, b3, sizeof(b3)));
		fputc('\n', o);
		mapped_row(o, g);
		fprintf(o, "  + other            %12s%s  %s\n",
			words_bytes(g->other_slope, b1, sizeof(b1)),
			share(g, g->other_slope, b4, sizeof(b4)),
			g->has_maps ? "thread stacks, code, the recorder's own "
				      "memory"
				    : "mmapped data, stacks, code: outside "
				      "the malloc heap");
	} else if (g->has_rss) {
		mapped_row(o, g);
		double rest = g->rss.slope - g->live.slope -
			      (g->has_maps ? g->mapped.slope : 0);
		fprintf(o, "  + not live         %12s%s  retained by %s or "
			   "outside the heap (its layout is glibc's only)\n",
			words_bytes(rest, b1, sizeof(b1)),
			share(g, rest, b4, sizeof(b4)),
			a->allocator ? a->allocator : "the allocator");
	}
	if (g->has_mallinfo) {
		size_t with = 0, all = 0;
		for (size_t i = a->warmup; i < a->series.n; i++, all++)
			with += a->series.v[i].has_heap_free;
		char at[64] = "the marks";
		if (with < all)
			snprintf(at, sizeof(at), "%zu of %zu marks", with, all);
		fprintf(o, "  glibc's own view (mallinfo2 at %s): in use %s, "
			   "free %s\n",
			at, words_bytes(g->in_use.slope, b1, sizeof(b1)),
			words_bytes(g->heap_free.slope, b2, sizeof(b2)));
	}
	const struct batch *b = &a->series.v[a->series.n - 1];
	if (a->glibc)
	{
		fprintf(o, "  heap at the last batch: span %s, holes %s (%s in "
			   "whole free pages)",
			words_bytes((double)b->span_bytes, b1, sizeof(b1)),
			words_bytes((double)b->holes_bytes, b2, sizeof(b2)),
			words_bytes((double)b->releasable_holes_bytes, b3,
				    sizeof(b3)));
		if (b->has_top)
			fprintf(o, ", free top %s",
				words_bytes((double)b->top_bytes, b3,
					    sizeof(b3)));
		fprintf(o, ", pages with live data %s\n",
			words_bytes((double)b->footprint_bytes, b4,
				    sizeof(b4)));
		/* a top that grows by pages, not by noise */
		size_t points = a->series.n > a->warmup
					? a->series.n - a->warmup
					: 0;
		if (g->has_top && g->top.slope > 0 &&
		    g->top.slope >= 0.25 * g->retained.slope && points > 1 &&
		    g->top.slope * (double)(points - 1) >= 256.0 * 1024)
			fprintf(o, "  the free top grows: glibc trims it only "
				   "above its trim threshold, which freeing "
				   "large\n  mmapped blocks raises; "
				   "malloc_trim(0) returns it, fixed "
				   "M_TRIM_THRESHOLD and M_MMAP_THRESHOLD\n"
				   "  (mallopt) keep it small\n");
	}
	else
		fprintf(o, "  heap at the last batch: pages with live data "
			   "%s\n",
			words_bytes((double)b->footprint_bytes, b1,
				    sizeof(b1)));
}

static void spark(FILE *o, const char *name, const struct analysis *a,
		  enum batch_field what, int utf8)
{
	static const char *const bars[] = { "▁", "▂", "▃", "▄",
					    "▅", "▆", "▇", "█" };
	static const char ascii[] = "_.-~=+*#";
	const struct series *s = &a->series;
	size_t n = s->n, w = n < SPARK_WIDTH ? n : SPARK_WIDTH;
	double lo = INFINITY, hi = -INFINITY;
	double v;
	for (size_t i = 0; i < n; i++) {
		if (!batch_value(&s->v[i], what, &v))
			continue;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	if (lo > hi)
		return;
	fprintf(o, "  %-5s ", name);
	for (size_t c = 0; c < w; c++) {
		/* each column shows the last batch of its share */
		size_t i = (c + 1) * n / w - 1;
		if (!batch_value(&s->v[i], what, &v)) {
			fputc(' ', o);
			continue;
		}
		int k = hi > lo ? (int)((v - lo) / (hi - lo) * 7.999) : 0;
		if (utf8)
			fputs(bars[k], o);
		else
			fputc(ascii[k], o);
	}
	char b1[32], b2[32];
	fprintf(o, "  %s .. %s\n", words_bytes(lo, b1, sizeof(b1)),
		words_bytes(hi, b2, sizeof(b2)));
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
		spark(o, "live", a, BATCH_LIVE, utf8);
		spark(o, "RSS", a, BATCH_RSS, utf8);
		if (a->growth.has_shape && a->glibc)
			spark(o, "holes", a, BATCH_HOLES, utf8);
		return;
	}
	fprintf(o, "\nPer batch:\n  %5s %8s %10s %10s %10s %10s %10s %8s "
		   "%8s\n",
		"batch", "end s", "live", "peak live", "RSS", "holes",
		"heap free", "allocs", "frees");
	for (size_t i = 0; i < s->n; i++) {
		const struct batch *b = &s->v[i];
		char l[32], p[32], r[32] = "-", h[32] = "-", f[32] = "-";
		words_bytes((double)b->live_bytes, l, sizeof(l));
		words_bytes((double)b->peak_live_bytes, p, sizeof(p));
		if (b->has_rss)
			words_bytes((double)b->rss_bytes, r, sizeof(r));
		if (b->has_shape && a->glibc)
			words_bytes((double)b->holes_bytes, h, sizeof(h));
		if (b->has_heap_free)
			words_bytes((double)b->heap_free_bytes, f, sizeof(f));
		fprintf(o, "  %5zu %8.3f %10s %10s %10s %10s %10s %8" PRIu64
			   " %8" PRIu64 "%s\n",
			i, b->end_ns / 1e9, l, p, r, h, f, b->allocations,
			b->frees, i < a->warmup ? "  (warm-up)" : "");
	}
}

static void frames(FILE *o, const struct frame *v, size_t n,
		   const char *indent, const struct report_opts *ro)
{
	if (!n) {
		fprintf(o, "%s(no frames recorded)\n", indent);
		return;
	}
	size_t from = ro->runtime_frames ? 0 : frames_runtime_prefix(v, n);
	size_t shown = ro->frames < 0    ? n - from
		       : ro->frames == 0 ? FRAMES_SHOWN
					 : (size_t)ro->frames;
	if (shown > n - from)
		shown = n - from;
	/* by default a stack's Python lines are shown, however deep the
	 * native frames inside them: the first few of those, then the
	 * Python part; in a native stack the same for the program's own
	 * code under deep library code (inlined frames make that deeper) */
	size_t kept = from; /* the first frame kept in view */
	while (kept < n && !v[kept].python)
		kept++;
	if (kept == n)
		for (kept = from; kept < n && !frame_is_own(&v[kept]);)
			kept++;
	size_t gap_from = n, gap_to = n;
	if (ro->frames == 0 && kept < n && kept >= from + shown) {
		gap_from = from + NATIVE_BEFORE_KEPT;
		gap_to = kept;
		shown = NATIVE_BEFORE_KEPT + FRAMES_SHOWN;
		if (shown > n - from - (gap_to - gap_from))
			shown = n - from - (gap_to - gap_from);
		shown += gap_to - gap_from;
	}
	for (size_t i = from; i < from + shown; i++) {
		const struct frame *f = &v[i];
		if (i == gap_from) {
			fprintf(o, "%s... %zu %s frames\n", indent,
				gap_to - gap_from,
				v[gap_to].python ? "native" : "library");
			i = gap_to - 1;
			continue;
		}
		char where[64], name[512];
		if (f->module)
			snprintf(where, sizeof(where), "%s+0x%" PRIx64,
				 words_file(f->module), f->offset);
		else
			snprintf(where, sizeof(where), "0x%" PRIx64,
				 f->address);
		const char *fn = f->function;
		if (fn && !ro->full_names)
			fn = name_shorten(fn, ro->utf8, name, sizeof(name));
		fprintf(o, "%s%s", indent, fn ? fn : where);
		if (f->file)
			fprintf(o, "  %s:%u", words_file(f->file), f->line);
		else if (f->function)
			fprintf(o, "  (%s)", where);
		fprintf(o, "%s\n", f->inlined ? "  [inlined]" : "");
	}
	if (from + shown < n)
		fprintf(o, "%s... %zu more frames\n", indent, n - from - shown);
}

void text_frames(FILE *o, const struct frame *v, size_t n,
		 const char *indent, const struct report_opts *ro)
{
	frames(o, v, n, indent, ro);
}

/* Whether any stack shown had runtime frames left out, for the note. */
static int runtime_hidden(const struct analysis *a)
{
	for (size_t i = 0; i < a->shown; i++) {
		const struct stack_growth *g = &a->ranked[i];
		if (frames_runtime_prefix(g->frames, g->nframes))
			return 1;
		for (size_t j = 0; j < g->npaths && j < a->paths_shown; j++)
			if (frames_runtime_prefix(g->paths[j].frames,
						  g->paths[j].nframes))
				return 1;
	}
	for (size_t i = 0; i < a->pins_shown; i++)
		if (frames_runtime_prefix(a->pins[i].frames,
					  a->pins[i].nframes))
			return 1;
	return 0;
}

static void head(FILE *o, const struct stack_growth *g, const char *lead,
		 int utf8)
{
	char b1[32], b2[32], b3[32];
	fprintf(o, "%s%s/batch  %s %.2f  live at last batch %s  leaked %s in "
		   "%" PRIu64 " blocks  %" PRIu64 " allocations\n",
		lead, words_bytes(g->bytes_per_batch, b1, sizeof(b1)),
		utf8 ? "R²" : "R2", g->r2,
		words_bytes((double)g->live_bytes_at_end, b2, sizeof(b2)),
		words_bytes((double)g->leaked_bytes, b3, sizeof(b3)),
		g->leaked_blocks, g->allocations);
}

void text_stack(FILE *o, const struct stack_growth *g, const char *lead,
		const char *indent, const struct report_opts *ro)
{
	head(o, g, lead, ro->utf8);
	frames(o, g->frames, g->nframes, indent, ro);
}

static void stacks(FILE *o, const struct analysis *a,
		   const struct report_opts *ro)
{
	const int utf8 = ro->utf8;
	if (!a->nranked) {
		fprintf(o, "\nNo heap allocations recorded.\n");
		return;
	}
	if (!a->shown) /* --top 0 */
		return;
	fprintf(o, "\nTop %s by growth per batch (%zu of %zu):\n",
		a->by_site ? "allocation sites" : "stacks", a->shown,
		a->nranked);
	for (size_t i = 0; i < a->shown; i++) {
		const struct stack_growth *g = &a->ranked[i];
		char lead[32];
		snprintf(lead, sizeof(lead), "\n#%-3zu ", i + 1);
		head(o, g, lead, utf8);
		frames(o, g->frames, g->nframes, "      ", ro);
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
			frames(o, g->paths[j].frames, g->paths[j].nframes,
			       "        ", ro);
		}
		if (g->npaths > np)
			fprintf(o, "    ... %zu more paths\n", g->npaths - np);
	}
}

static const char *const map_kinds[MAPS_KINDS] = {
	"anon", "file", "shm", "memfd", "sysv", "other",
};

/* The memory the program mapped itself: by kind, then the mapping stacks
 * ranked by growth. */
static void mappings(FILE *o, const struct analysis *a,
		     const struct report_opts *ro)
{
	const int utf8 = ro->utf8;
	const struct maps_state *st = &a->maps_end;
	const struct growth *g = &a->growth;
	char b1[32], b2[32], b3[32];
	if (!a->has_maps)
		return;
	fprintf(o, "\nMapped by the program (mmap, shm, memfd, shmat; not "
		   "malloc's own): %s at the end, peak %s, %s/batch",
		words_bytes((double)st->mapped, b1, sizeof(b1)),
		words_bytes((double)st->peak, b2, sizeof(b2)),
		words_bytes(g->mapped.slope, b3, sizeof(b3)));
	if (st->reserved)
		fprintf(o, "; %s reserved PROT_NONE, not counted",
			words_bytes((double)st->reserved, b1, sizeof(b1)));
	fputc('\n', o);
	for (int k = 0; k < MAPS_KINDS; k++) {
		if (!st->by_kind[k] && !g->mapped_kind[k].slope)
			continue;
		fprintf(o, "  %-6s %10s at the end, %s/batch\n", map_kinds[k],
			words_bytes((double)st->by_kind[k], b1, sizeof(b1)),
			words_bytes(g->mapped_kind[k].slope, b2, sizeof(b2)));
	}
	if (!a->maps_shown)
		return;
	/* ranked: those that grow first; the others are start-up's (a
	 * runtime's code and heap reserved once), the JSON report has them */
	size_t growing = 0;
	while (growing < a->maps_shown &&
	       a->map_ranked[growing].bytes_per_batch > 0)
		growing++;
	if (!growing) {
		fprintf(o, "\nNo mapping stack grows (%zu in all; the JSON "
			   "report ranks them).\n", a->nmap_ranked);
		return;
	}
	fprintf(o, "\nTop mapping stacks by growth per batch (%zu of %zu; "
		   "those that grow):\n", growing, a->nmap_ranked);
	for (size_t i = 0; i < growing; i++) {
		const struct stack_growth *m = &a->map_ranked[i];
		unsigned kind = a->map_info[i].kind;
		fprintf(o, "\n#%-3zu %s/batch  %s %.2f  %s  mapped at last batch "
			   "%s  still mapped at the end %s in %" PRIu64
			   " ranges  %" PRIu64 " maps\n",
			i + 1, words_bytes(m->bytes_per_batch, b1, sizeof(b1)),
			utf8 ? "R²" : "R2", m->r2,
			kind < MAPS_KINDS ? map_kinds[kind] : "other",
			words_bytes((double)m->live_bytes_at_end, b2,
				    sizeof(b2)),
			words_bytes((double)m->leaked_bytes, b3, sizeof(b3)),
			m->leaked_blocks, m->allocations);
		if (a->map_info[i].path)
			fprintf(o, "      file %s\n", a->map_info[i].path);
		frames(o, m->frames, m->nframes, "      ", ro);
	}
}

static void pinning(FILE *o, const struct analysis *a,
		    const struct report_opts *ro)
{
	char b1[32], b2[32];
	if (!a->pins_shown || !analysis_pinning_matters(a))
		return;
	fprintf(o, "\nBlocks that pin the heap at the last batch: %s of whole "
		   "free pages lie below live blocks that keep them from being "
		   "trimmed (%zu of %zu stacks):\n",
		words_bytes((double)a->pinned_bytes, b1, sizeof(b1)),
		a->pins_shown,
		a->npins);
	for (size_t i = 0; i < a->pins_shown; i++) {
		const struct pin_group *g = &a->pins[i];
		fprintf(o, "\n#%-3zu pins %s below %" PRIu64 " blocks (%s live)\n",
			i + 1,
			words_bytes((double)g->pinned_bytes, b1, sizeof(b1)),
			g->blocks,
			words_bytes((double)g->live_bytes, b2, sizeof(b2)));
		if (g->id == PIN_NOT_FOUND)
			fprintf(o, "      (block not found: inconsistent trace)\n");
		else if (g->id == PIN_UNPROBED)
			fprintf(o, "      (blocks not looked up: more gaps than the "
				   "analyzer examines at one batch end)\n");
		else
			frames(o, g->frames, g->nframes, "      ", ro);
	}
}

static void notes(FILE *o, const struct analysis *a,
		  const struct report_opts *ro)
{
	const char *first;
	size_t n = analysis_stale_modules(a, &first);
	if (n)
		fprintf(o, "\nNote: %s%s changed since the recording (another "
			   "build-id): its frames show as module+offset; "
			   "--debuginfo-path can point at its matching debug "
			   "file.\n", first, n > 1 ? " and other modules" : "");
	if (!ro->runtime_frames && runtime_hidden(a))
		fprintf(o, "\nNote: the allocator's and runtimes' own frames "
			   "at the top of stacks (malloc, operator new, "
			   "container growth...) are left out; "
			   "--runtime-frames shows them.\n");
}

int text_write(FILE *o, const struct analysis *a,
	       const struct report_opts *opts)
{
	const int utf8 = opts->utf8;
	summary(o, a);
	pymalloc_line(o, a);
	range(o, a);
	if (recording(o, a))
		return -1;
	verdict(o, a, opts);
	decomposition(o, a);
	series(o, a, utf8);
	text_groups(o, a, opts);
	/* the growth the verdict names comes first */
	if (a->verdict.verdict == VERDICT_MAPPED) {
		mappings(o, a, opts);
		stacks(o, a, opts);
	} else {
		stacks(o, a, opts);
		mappings(o, a, opts);
	}
	text_regions(o, a, opts);
	pinning(o, a, opts);
	notes(o, a, opts);
	if (fflush(o) != 0 || ferror(o))
		return hs_error("cannot write the report");
	return 0;
}
