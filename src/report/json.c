/* The JSON report, schema "heapslope.report/1" (heapslope-report(5)),
 * and several side by side, "heapslope.comparison/1".  The only file
 * that knows cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analysis.h"
#include "analyze/groups.h"
#include "analyze/pyframes.h"
#include "analyze/recording.h"
#include "analyze/symbols.h"
#include "base/error.h"
#include "words.h"
#include "writers.h"

#ifndef HS_VERSION
#define HS_VERSION "unknown"
#endif

#define SCHEMA "heapslope.report/1"
#define COMPARISON_SCHEMA "heapslope.comparison/1"

static const char *const sources[] = {
	[BATCHES_MARKER] = "marker",
	[BATCHES_TIME] = "time",
	[BATCHES_AUTO] = "auto",
};

/* cJSON numbers are doubles: exact for counts below 2^53.  A whole number
 * from 1e15 on cJSON writes as 3.4e+15 (15 digits), which readers take for
 * a fraction: the report's counts and sizes are integers
 * (heapslope-report(5)), so these are written digit by digit. */
static void num(cJSON *o, const char *k, double v)
{
	char digits[320];
	if (isfinite(v) && fabs(v) >= 1e15 && v == floor(v)) {
		snprintf(digits, sizeof(digits), "%.0f", v);
		cJSON_AddRawToObject(o, k, digits);
		return;
	}
	cJSON_AddNumberToObject(o, k, v);
}

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0], cp, n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* Trace strings (argv, paths, symbols) are bytes; JSON text is UTF-8:
 * each byte of an invalid sequence becomes U+FFFD. */
static cJSON *string(const char *v)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t bad = 0, len = 0, n;
	for (; s[len]; len += n ? n : 1)
		bad += !(n = utf8_len(s + len));
	if (!bad)
		return cJSON_CreateString(v);
	char *fixed = malloc(len + 2 * bad + 1), *o = fixed;
	if (!fixed)
		return NULL;
	for (size_t i = 0; s[i]; i += n ? n : 1) {
		if ((n = utf8_len(s + i))) {
			memcpy(o, s + i, n);
			o += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		}
	}
	*o = 0;
	cJSON *j = cJSON_CreateString(fixed);
	free(fixed);
	return j;
}

static void str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddItemToObject(o, k, string(v));
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *program(const struct analysis *a)
{
	cJSON *p = cJSON_CreateObject();
	cJSON *cmd = cJSON_AddArrayToObject(p, "command");
	for (int i = 0; i < a->argc; i++)
		cJSON_AddItemToArray(cmd, string(a->argv[i]));
	num(p, "pid", (double)a->pid);
	num(p, "ppid", (double)a->ppid);
	int v;
	enum words_exit how =
		a->has_exit ? words_exit(a->wait_status, &v) : WORDS_EXIT_OTHER;
	if (how == WORDS_EXIT_STATUS)
		num(p, "exit_status", v);
	else
		cJSON_AddNullToObject(p, "exit_status");
	if (how == WORDS_EXIT_SIGNAL)
		num(p, "exit_signal", v);
	str_or_null(p, "exe", a->exe);
	cJSON_AddBoolToObject(p, "python", a->python);
	cJSON_AddBoolToObject(p, "pymalloc_replaced", a->pymalloc_replaced);
	uint64_t pv = pyframes_version(a->py);
	char version[32];
	snprintf(version, sizeof(version), "%u.%u.%u", (unsigned)(pv >> 24),
		 (unsigned)(pv >> 16 & 0xff), (unsigned)(pv >> 8 & 0xff));
	cJSON_AddBoolToObject(p, "python_frames", pv != 0);
	str_or_null(p, "python_version", pv ? version : NULL);
	return p;
}

static cJSON *trace(const struct analysis *a)
{
	cJSON *t = cJSON_CreateObject();
	str_or_null(t, "path", a->path);
	num(t, "format_version", a->format_version);
	num(t, "events", (double)a->events);
	cJSON_AddBoolToObject(t, "complete", a->complete);
	cJSON_AddBoolToObject(t, "truncated", a->truncated);
	cJSON_AddBoolToObject(t, "writing", a->writing);
	str_or_null(t, "end_reason",
		    a->has_end ? words_end_reason(a->end_reason) : NULL);
	if (a->end_signal)
		num(t, "end_signal", a->end_signal);
	else
		cJSON_AddNullToObject(t, "end_signal");
	str_or_null(t, "stopped", a->stopped[0] ? a->stopped : NULL);
	num(t, "unrecorded", (double)a->unrecorded);
	str_or_null(t, "malloc_owner", a->malloc_owner);
	num(t, "batch_marks", (double)a->batch_marks);
	num(t, "samples", (double)a->samples);
	num(t, "distinct_stacks", (double)a->distinct_stacks);
	const char *first;
	num(t, "stale_modules", (double)analysis_stale_modules(a, &first));
	return t;
}

static void num_if(cJSON *o, const char *k, int has, double v)
{
	if (has)
		num(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *totals(const struct analysis *a)
{
	const struct replay_totals *r = &a->totals;
	cJSON *t = cJSON_CreateObject();
	num(t, "allocations", (double)r->allocations);
	num(t, "frees", (double)r->frees);
	num(t, "reallocs", (double)r->reallocs);
	num(t, "failed_allocations", (double)r->failed_allocations);
	num(t, "unmatched_frees", (double)r->unmatched_frees);
	num_if(t, "allocations_before_start", a->has_before,
	       (double)a->before_allocs);
	num_if(t, "bytes_before_start", a->has_before,
	       (double)a->before_bytes);
	num(t, "allocated_bytes", (double)r->allocated_bytes);
	num(t, "peak_live_bytes", (double)r->peak_live_bytes);
	num(t, "leaked_bytes", (double)r->live_bytes);
	num(t, "leaked_blocks", (double)r->live_blocks);
	num(t, "duration_s", (double)a->duration_ns / 1e9);
	num(t, "replaced_allocations", (double)r->replaced_allocations);
	num(t, "mmaps", (double)r->mmaps);
	num(t, "munmaps", (double)r->munmaps);
	return t;
}

/* The heap's shape and mallinfo2's other figures at one batch end. */
static void shape_point(const struct analysis *a, const struct batch *x,
			cJSON *o)
{
	const int glibc = x->has_shape && a->glibc, mi = x->has_heap_free;
	num_if(o, "footprint_bytes", x->has_shape, (double)x->footprint_bytes);
	num_if(o, "span_bytes", glibc, (double)x->span_bytes);
	num_if(o, "holes_bytes", glibc, (double)x->holes_bytes);
	num_if(o, "releasable_bytes", glibc,
	       (double)x->releasable_holes_bytes);
	num_if(o, "top_bytes", glibc && x->has_top, (double)x->top_bytes);
	num_if(o, "heap_in_use_bytes", mi, (double)x->heap_in_use_bytes);
	num_if(o, "heap_arena_bytes", mi, (double)x->heap_arena_bytes);
	num_if(o, "heap_mmapped_bytes", mi, (double)x->heap_mmapped_bytes);
	num_if(o, "heap_top_releasable_bytes", mi,
	       (double)x->heap_releasable_bytes);
}

/* A region row's path of names, outermost first ([] outside). */
static cJSON *region_path(const struct region_row *w)
{
	cJSON *v = cJSON_CreateArray();
	for (size_t i = 0; i < w->depth; i++)
		cJSON_AddItemToArray(v, string(w->path[i]));
	return v;
}

/* Batch i's bytes by region path: allocated within it, live at its end. */
static cJSON *batch_regions(const struct analysis *a, size_t i)
{
	const struct region_report *r = &a->regions;
	cJSON *v = cJSON_CreateArray();
	for (size_t j = 0; j < r->npaths; j++) {
		const struct region_row *w = &r->paths[j];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "path", region_path(w));
		num(o, "allocated_bytes", (double)w->allocated[i]);
		num(o, "live_bytes", (double)w->live[i]);
		cJSON_AddItemToArray(v, o);
	}
	return v;
}

/* One entry of the series. */
static cJSON *batch_entry(const struct analysis *a, size_t i)
{
	const struct batch *x = &a->series.v[i];
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	num(o, "index", (double)i);
	num(o, "end_s", (double)x->end_ns / 1e9);
	num(o, "live_bytes", (double)x->live_bytes);
	num(o, "peak_live_bytes", (double)x->peak_live_bytes);
	num_if(o, "rss_bytes", x->has_rss, (double)x->rss_bytes);
	num_if(o, "heap_free_bytes", x->has_heap_free,
	       (double)x->heap_free_bytes);
	num_if(o, "heap_bytes", x->has_heap_free, (double)x->heap_bytes);
	num(o, "allocations", (double)x->allocations);
	num(o, "frees", (double)x->frees);
	num(o, "allocated_bytes", (double)x->allocated_bytes);
	num_if(o, "mapped_bytes", x->has_maps, (double)x->mapped_bytes);
	shape_point(a, x, o);
	if (a->regions.nnames)
		cJSON_AddItemToObject(o, "regions", batch_regions(a, i));
	return o;
}

/* The series goes out one batch at a time (a trace may have millions of
 * marks: in one cJSON tree they took 3 KB each); the report's tree holds
 * this raw text in its place, which no printed JSON string can contain
 * (cJSON escapes control characters). */
#define SERIES_HOLE '\x01'

static cJSON *batches(const struct analysis *a)
{
	static const char hole[] = { SERIES_HOLE, 0 };
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "source", sources[a->source]);
	num(b, "count", (double)a->series.n);
	num(b, "warmup", (double)a->warmup);
	cJSON_AddBoolToObject(b, "warmup_auto", a->warmup_auto);
	if (a->source != BATCHES_MARKER)
		num(b, "window_s", (double)a->window_ns / 1e9);
	cJSON_AddRawToObject(b, "series", hole);
	return b;
}

/* a's series, as a JSON array, one entry a line. */
static int write_series(FILE *f, const struct analysis *a)
{
	if (fputc('[', f) < 0)
		return -1;
	for (size_t i = 0; i < a->series.n; i++) {
		cJSON *o = batch_entry(a, i);
		char *t = o ? cJSON_PrintUnformatted(o) : NULL;
		cJSON_Delete(o);
		if (!t)
			return hs_error("out of memory");
		int bad = fputs(i ? ",\n" : "\n", f) < 0 || fputs(t, f) < 0;
		cJSON_free(t);
		if (bad)
			return -1;
	}
	return fputs(a->series.n ? "\n]" : "]", f) < 0 ? -1 : 0;
}

static cJSON *growth(const struct analysis *a)
{
	const struct growth *fit = &a->growth;
	cJSON *g = cJSON_CreateObject();
	num(g, "live_bytes_per_batch", fit->live.slope);
	num(g, "live_r2", fit->live.r2);
	num_if(g, "rss_bytes_per_batch", fit->has_rss, fit->rss.slope);
	num_if(g, "rss_r2", fit->has_rss, fit->rss.r2);
	num_if(g, "heap_bytes_per_batch", fit->has_heap, fit->heap.slope);
	num_if(g, "heap_r2", fit->has_heap, fit->heap.r2);
	num(g, "batches_fitted", (double)fit->live.n);
	num_if(g, "mapped_bytes_per_batch", fit->has_maps, fit->mapped.slope);
	num_if(g, "mapped_r2", fit->has_maps, fit->mapped.r2);
	return g;
}

static cJSON *frames(const struct frame *fv, size_t n)
{
	cJSON *v = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct frame *f = &fv[i];
		cJSON *o = cJSON_CreateObject();
		char addr[24];
		cJSON_AddStringToObject(o, "kind",
					f->python ? "python" : "native");
		snprintf(addr, sizeof(addr), "0x%" PRIx64, f->address);
		if (f->python) {
			cJSON_AddNullToObject(o, "address");
			cJSON_AddNullToObject(o, "module");
		} else {
			cJSON_AddStringToObject(o, "address", addr);
			str_or_null(o, "module", f->module ? f->module : "");
		}
		str_or_null(o, "function", f->function);
		str_or_null(o, "file", f->file);
		if (f->line)
			num(o, "line", f->line);
		else
			cJSON_AddNullToObject(o, "line");
		num(o, "offset", (double)f->offset);
		cJSON_AddBoolToObject(o, "inlined", f->inlined);
		cJSON_AddItemToArray(v, o);
	}
	return v;
}

static cJSON *stack(const struct stack_growth *s, size_t rank)
{
	cJSON *o = cJSON_CreateObject();
	num(o, "rank", (double)rank);
	num(o, "bytes_per_batch", s->bytes_per_batch);
	num(o, "r2", s->r2);
	num(o, "live_bytes_at_end", (double)s->live_bytes_at_end);
	num(o, "leaked_bytes", (double)s->leaked_bytes);
	num(o, "leaked_blocks", (double)s->leaked_blocks);
	num(o, "allocations", (double)s->allocations);
	cJSON_AddItemToObject(o, "frames", frames(s->frames, s->nframes));
	return o;
}

static cJSON *fragmentation(const struct analysis *a)
{
	cJSON *f = cJSON_CreateObject();
	const int shape = a->growth.has_shape, glibc = shape && a->glibc;
	const struct batch *last = analysis_last_batch(a);
	str_or_null(f, "allocator", a->allocator);
	cJSON_AddStringToObject(f, "layout", a->glibc ? "glibc" : "pages");
	if (a->heap_start) {
		char hs[24];
		snprintf(hs, sizeof(hs), "0x%" PRIx64, a->heap_start);
		cJSON_AddStringToObject(f, "heap_start", hs);
	} else {
		cJSON_AddNullToObject(f, "heap_start");
	}
	/* at the last batch end */
	const int at = last && last->has_shape;
	num_if(f, "footprint_bytes", at, at ? (double)last->footprint_bytes : 0);
	num_if(f, "span_bytes", at && a->glibc,
	       at ? (double)last->span_bytes : 0);
	num_if(f, "holes_bytes", at && a->glibc,
	       at ? (double)last->holes_bytes : 0);
	num_if(f, "releasable_bytes", at && a->glibc,
	       at ? (double)last->releasable_holes_bytes : 0);
	num_if(f, "mmapped_bytes", at && a->glibc,
	       at ? (double)last->mmapped_bytes : 0);
	num_if(f, "regions", at && a->glibc, at ? (double)last->regions : 0);
	num_if(f, "top_bytes", at && a->glibc && last->has_top,
	       at ? (double)last->top_bytes : 0);
	/* slopes, bytes per batch after the warm-up */
	num_if(f, "footprint_bytes_per_batch", shape,
	       a->growth.footprint.slope);
	num_if(f, "span_bytes_per_batch", glibc, a->growth.span.slope);
	num_if(f, "holes_bytes_per_batch", glibc, a->growth.holes.slope);
	num_if(f, "releasable_bytes_per_batch", glibc,
	       a->growth.releasable.slope);
	num_if(f, "top_bytes_per_batch", glibc && a->growth.has_top,
	       a->growth.top.slope);
	num_if(f, "retained_bytes_per_batch", glibc, a->growth.retained.slope);
	cJSON *mi = cJSON_AddObjectToObject(f, "allocator_state");
	num_if(mi, "in_use_bytes_per_batch", a->growth.has_mallinfo,
	       a->growth.in_use.slope);
	num_if(mi, "free_bytes_per_batch", a->growth.has_mallinfo,
	       a->growth.heap_free.slope);
	num_if(mi, "footprint_bytes_per_batch", a->growth.has_heap,
	       a->growth.heap.slope);
	if (a->growth.has_decomposition) {
		cJSON *d = cJSON_AddObjectToObject(f, "decomposition");
		num(d, "rss_bytes_per_batch", a->growth.rss.slope);
		num(d, "live_bytes_per_batch", a->growth.live.slope);
		num(d, "retained_bytes_per_batch", a->growth.retained.slope);
		num(d, "other_bytes_per_batch", a->growth.other_slope);
		num_if(d, "mapped_bytes_per_batch", a->growth.has_maps,
		       a->growth.mapped.slope);
	} else {
		cJSON_AddNullToObject(f, "decomposition");
	}
	num_if(f, "pinned_bytes", glibc, (double)a->pinned_bytes);
	cJSON_AddBoolToObject(f, "pinning_matters",
			      analysis_pinning_matters(a));
	cJSON *ps = cJSON_AddArrayToObject(f, "pinning_stacks");
	for (size_t i = 0; i < a->pins_shown; i++) {
		const struct pin_group *g = &a->pins[i];
		cJSON *o = cJSON_CreateObject();
		num(o, "rank", (double)(i + 1));
		num(o, "pinned_bytes", (double)g->pinned_bytes);
		num(o, "blocks", (double)g->blocks);
		num(o, "live_bytes", (double)g->live_bytes);
		num_if(o, "stack_id", g->id < PIN_UNPROBED, (double)g->id);
		cJSON_AddItemToObject(o, "frames",
				      frames(g->frames, g->nframes));
		cJSON_AddItemToArray(ps, o);
	}
	return f;
}

static cJSON *stacks(const struct analysis *a)
{
	cJSON *v = cJSON_CreateArray();
	for (size_t i = 0; i < a->shown; i++) {
		const struct stack_growth *s = &a->ranked[i];
		cJSON *o = stack(s, i + 1);
		if (a->by_site) {
			cJSON *paths = cJSON_AddArrayToObject(o, "paths");
			for (size_t j = 0; j < s->npaths; j++)
				if (s->paths[j].frames)
					cJSON_AddItemToArray(
						paths, stack(&s->paths[j], j + 1));
		} else {
			num(o, "stack_id", (double)s->id);
		}
		cJSON_AddItemToArray(v, o);
	}
	return v;
}

static cJSON *region_rows(const struct region_row *v, size_t n, int paths)
{
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct region_row *w = &v[i];
		cJSON *o = cJSON_CreateObject();
		num(o, "rank", (double)(i + 1));
		cJSON_AddItemToObject(o, "name", string(w->name));
		if (paths)
			cJSON_AddItemToObject(o, "path", region_path(w));
		cJSON_AddBoolToObject(o, "outside", w->outside);
		num(o, "bytes_per_batch", w->bytes_per_batch);
		num(o, "r2", w->r2);
		num(o, "allocated_bytes_per_batch", w->allocated_per_batch);
		num(o, "allocated_bytes", (double)w->allocated_bytes);
		num(o, "allocations", (double)w->allocations);
		num(o, "live_bytes_at_end", (double)w->live_bytes_at_end);
		num(o, "leaked_bytes", (double)w->leaked_bytes);
		num(o, "leaked_blocks", (double)w->leaked_blocks);
		cJSON *st = cJSON_AddArrayToObject(o, "stacks");
		for (size_t j = 0; j < w->nstacks; j++) {
			cJSON *s = stack(&w->stacks[j], j + 1);
			num(s, "stack_id", (double)w->stacks[j].id);
			cJSON_AddItemToArray(st, s);
		}
		cJSON_AddItemToArray(rows, o);
	}
	return rows;
}

/* Growth by region (regions.h): by innermost name and by path. */
static cJSON *regions(const struct analysis *a)
{
	const struct region_report *r = &a->regions;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "by_name", region_rows(r->names, r->nnames, 0));
	cJSON_AddItemToObject(o, "by_path", region_rows(r->paths, r->npaths, 1));
	num(o, "unmatched_ends", (double)r->unmatched_ends);
	num(o, "open_at_end", (double)r->open_at_end);
	num(o, "folded_begins", (double)r->folded);
	return o;
}

/* The traces of the recording (recording.h), the main one flagged. */
static cJSON *recording(const struct analysis *a)
{
	cJSON *v = cJSON_CreateArray();
	for (size_t i = 0; v && i < a->nrecording; i++) {
		const struct recording_trace *t = &a->recording[i];
		cJSON *e = cJSON_CreateObject();
		str_or_null(e, "path", t->path);
		str_or_null(e, "program", t->program);
		num(e, "pid", (double)t->pid);
		num(e, "ppid", (double)t->ppid);
		num(e, "events", (double)t->events);
		num(e, "batch_marks", (double)t->marks);
		cJSON_AddBoolToObject(e, "complete", t->complete);
		cJSON_AddBoolToObject(e, "main", i == a->recording_main);
		cJSON_AddItemToArray(v, e);
	}
	return v;
}

static const char *const map_kinds[MAPS_KINDS] = {
	"anon", "file", "shm", "memfd", "sysv", "other",
};

/* RSS's slope = live + retained + mapped + other, each with its share. */
static cJSON *decomposition(const struct analysis *a)
{
	const struct growth *g = &a->growth;
	if (!g->has_rss)
		return cJSON_CreateNull();
	cJSON *d = cJSON_CreateObject();
	const double R = g->rss.slope;
	num(d, "rss_bytes_per_batch", R);
	cJSON *terms = cJSON_AddArrayToObject(d, "terms");
	struct { const char *name; int has; double v; } t[] = {
		{ "live", 1, g->live.slope },
		{ "retained", g->has_decomposition, g->retained.slope },
		{ "mapped", g->has_maps, g->mapped.slope },
		{ "other", 1, 0 },
	};
	double other = R;
	for (size_t i = 0; i < 3; i++)
		if (t[i].has)
			other -= t[i].v;
	t[3].v = other;
	for (size_t i = 0; i < 4; i++) {
		if (!t[i].has)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "term", t[i].name);
		num(o, "bytes_per_batch", t[i].v);
		num_if(o, "share", R != 0, R != 0 ? t[i].v / R : 0);
		cJSON_AddItemToArray(terms, o);
	}
	return d;
}

/* The memory the program mapped itself (maps.h); null without it. */
static cJSON *mappings(const struct analysis *a)
{
	if (!a->has_maps)
		return cJSON_CreateNull();
	const struct maps_state *st = &a->maps_end;
	const struct growth *g = &a->growth;
	cJSON *m = cJSON_CreateObject();
	num(m, "mapped_at_end_bytes", (double)st->mapped);
	num(m, "peak_mapped_bytes", (double)st->peak);
	num(m, "reserved_at_end_bytes", (double)st->reserved);
	num_if(m, "bytes_per_batch", g->has_maps, g->mapped.slope);
	num_if(m, "r2", g->has_maps, g->mapped.r2);
	num(m, "maps", (double)st->maps);
	num(m, "unmaps", (double)st->unmaps);
	num(m, "remaps", (double)st->remaps);
	num(m, "protects", (double)st->protects);
	num(m, "ignored", (double)st->ignored);
	cJSON *k = cJSON_AddObjectToObject(m, "by_kind");
	for (int i = 0; i < MAPS_KINDS; i++) {
		cJSON *o = cJSON_CreateObject();
		num(o, "bytes_at_end", (double)st->by_kind[i]);
		num_if(o, "bytes_per_batch", g->has_maps,
		       g->mapped_kind[i].slope);
		cJSON_AddItemToObject(k, map_kinds[i], o);
	}
	cJSON *v = cJSON_AddArrayToObject(m, "stacks");
	for (size_t i = 0; i < a->maps_shown; i++) {
		const struct stack_growth *s = &a->map_ranked[i];
		cJSON *o = cJSON_CreateObject();
		num(o, "rank", (double)i + 1);
		num(o, "bytes_per_batch", s->bytes_per_batch);
		num(o, "r2", s->r2);
		num(o, "mapped_bytes_at_end", (double)s->live_bytes_at_end);
		num(o, "still_mapped_bytes", (double)s->leaked_bytes);
		num(o, "still_mapped_ranges", (double)s->leaked_blocks);
		num(o, "maps", (double)s->allocations);
		unsigned kind = a->map_info[i].kind;
		cJSON_AddStringToObject(o, "kind", kind < MAPS_KINDS
							   ? map_kinds[kind]
							   : "other");
		str_or_null(o, "path", a->map_info[i].path);
		cJSON_AddItemToObject(o, "frames",
				      frames(s->frames, s->nframes));
		cJSON_AddItemToArray(v, o);
	}
	return m;
}

/* The stretch analysed (heapslope-report(5)). */
static cJSON *range(const struct analysis *a)
{
	const struct analysis_range *rg = &a->range;
	cJSON *r = cJSON_CreateObject();
	num(r, "from_s", rg->from_ns / 1e9);
	num_if(r, "until_s", rg->until_ns != RANGE_END, rg->until_ns / 1e9);
	num_if(r, "from_batch", rg->from_batch != 0, (double)rg->from_batch);
	num_if(r, "until_batch", rg->until_batch != UINT64_MAX,
	       (double)rg->until_batch);
	cJSON_AddBoolToObject(r, "from_given", rg->from_set);
	cJSON_AddBoolToObject(r, "until_given", rg->until_set);
	cJSON_AddBoolToObject(r, "startup_cut", rg->startup_cut);
	cJSON_AddBoolToObject(r, "teardown_cut", rg->teardown_cut);
	num_if(r, "exiting_s", rg->has_exiting, rg->exiting_ns / 1e9);
	str_or_null(r, "left_out", rg->left_out[0] ? rg->left_out : NULL);
	return r;
}

/* Growth by operator (--group-by-frame, --operators): the rows add up to
 * growth.live_bytes_per_batch. */
static cJSON *groups(const struct analysis *a)
{
	const struct groups *g = a->groups;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "pattern", string(g->pattern));
	str_or_null(o, "preset", g->preset);
	num(o, "rows_bytes_per_batch", g->rows_slope);
	num(o, "stacks", (double)g->stacks);
	num(o, "matched_stacks", (double)g->matched_stacks);
	cJSON *v = cJSON_AddArrayToObject(o, "rows");
	for (size_t i = 0; i < g->nrows; i++) {
		const struct group_row *r = &g->rows[i];
		cJSON *row = cJSON_CreateObject();
		cJSON_AddItemToObject(row, "name", string(r->name));
		cJSON_AddBoolToObject(row, "unmatched", r->unmatched);
		num(row, "bytes_per_batch", r->bytes_per_batch);
		num(row, "r2", r->r2);
		num(row, "live_bytes_at_end", (double)r->live_bytes_at_end);
		num(row, "leaked_bytes", (double)r->leaked_bytes);
		num(row, "leaked_blocks", (double)r->leaked_blocks);
		num(row, "allocations", (double)r->allocations);
		num(row, "stacks", (double)r->stacks);
		if (r->stacks) {
			cJSON *top = stack(&r->top, 1);
			num(top, "stack_id", (double)r->top.id);
			cJSON_AddItemToObject(row, "top_stack", top);
		} else {
			cJSON_AddNullToObject(row, "top_stack");
		}
		cJSON_AddItemToArray(v, row);
	}
	return o;
}

static cJSON *report(const struct analysis *a)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "schema", SCHEMA);
	cJSON *tool = cJSON_AddObjectToObject(root, "tool");
	cJSON_AddStringToObject(tool, "name", "heapslope");
	cJSON_AddStringToObject(tool, "version", HS_VERSION);
	cJSON_AddItemToObject(root, "program", program(a));
	cJSON_AddItemToObject(root, "trace", trace(a));
	cJSON_AddItemToObject(root, "totals", totals(a));
	cJSON_AddItemToObject(root, "batches", batches(a));
	cJSON_AddItemToObject(root, "range", range(a));
	cJSON_AddItemToObject(root, "growth", growth(a));
	cJSON_AddStringToObject(root, "verdict",
				words_verdict(a->verdict.verdict));
	cJSON_AddStringToObject(root, "verdict_reason", a->verdict.text);
	cJSON_AddStringToObject(root, "stack_grouping",
				a->by_site ? "site" : "stack");
	cJSON_AddItemToObject(root, "stacks", stacks(a));
	cJSON_AddItemToObject(root, "fragmentation", fragmentation(a));
	if (a->nrecording > 1)
		cJSON_AddItemToObject(root, "recording", recording(a));
	cJSON_AddItemToObject(root, "decomposition", decomposition(a));
	cJSON_AddItemToObject(root, "mappings", mappings(a));
	if (a->regions.nnames)
		cJSON_AddItemToObject(root, "regions", regions(a));
	if (a->groups)
		cJSON_AddItemToObject(root, "groups", groups(a));
	return root;
}

/* Prints root to f, the series of a[0, n) in their places, and frees
 * root; dest names f in messages. */
static int write_doc(cJSON *root, struct analysis *const *a, size_t n,
		     FILE *f, const char *dest)
{
	int rc = -1;
	char *text = root ? cJSON_Print(root) : NULL;
	if (!text) {
		hs_error("out of memory");
		goto out;
	}
	hs_error("out of memory"); /* what write_series leaves unset */
	for (char *p = text;; n--, a++) {
		char *hole = strchr(p, SERIES_HOLE);
		if (hole)
			*hole = 0;
		if (fputs(p, f) < 0 || (hole && (!n || write_series(f, *a))))
			goto write_error;
		if (!hole)
			break;
		p = hole + 1;
	}
	if (fputc('\n', f) < 0 || fflush(f) != 0)
		goto write_error;
	rc = 0;
	goto out;
write_error:
	if (ferror(f))
		hs_error("cannot write %s: %s", dest, strerror(errno));
out:
	cJSON_free(text);
	cJSON_Delete(root);
	return rc;
}

int json_write(FILE *f, const struct analysis *a,
	       const struct report_opts *o)
{
	struct analysis *const one[] = { (struct analysis *)a };
	return write_doc(report(a), one, 1, f, o->dest);
}

int json_write_many(FILE *f, struct analysis *const *a, size_t n,
		    const struct report_opts *o)
{
	cJSON *root = cJSON_CreateObject();
	if (root) {
		cJSON_AddStringToObject(root, "schema", COMPARISON_SCHEMA);
		cJSON *v = cJSON_AddArrayToObject(root, "reports");
		uint64_t ev[64], mk[64];
		for (size_t i = 0; i < n; i++) {
			cJSON_AddItemToArray(v, report(a[i]));
			if (i < 64) {
				ev[i] = a[i]->events;
				mk[i] = a[i]->batch_marks;
			}
		}
		/* the main one, of one recording (recording.h) */
		if (compare_one_recording(a, n))
			num(root, "main",
			    (double)recording_main(ev, mk, n < 64 ? n : 64));
	}
	return write_doc(root, a, n, f, o->dest);
}
