#include "analysis.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/error.h"
#include "format/reader.h"
#include "heapmap.h"
#include "symbols.h"
#include "walk.h"

/* Time windows beyond this many are a unit mistake (or a corrupt clock).
 * Times past WALK_TIME_MAX are refused, so below it the window
 * arithmetic cannot wrap (windows are at most 1e18 ns). */
#define WINDOWS_MAX SERIES_MAX
#define AUTO_WINDOWS 20
#define STACK_DEPTH_MAX 256

/* One streaming pass: the state it builds. */
struct pass {
	struct analysis *a;
	const struct analysis_opts *o;
	enum batch_source src;
	uint64_t window, boundary; /* BATCHES_TIME: the next window's end */
	uint64_t now;              /* the latest time seen */
	int preloaded;             /* symbols_preload started */
	struct stacks *stacks;
	struct replay *replay;
	struct heapmap *heap;
	struct symbols *symbols;
};

static void pass_finish(struct pass *p)
{
	replay_destroy(p->replay);
	heapmap_destroy(p->heap);
	stacks_destroy(p->stacks);
	symbols_destroy(p->symbols);
	p->replay = NULL;
	p->heap = NULL;
	p->stacks = NULL;
	p->symbols = NULL;
}

static int copy_header(struct analysis *a, const struct hs_header *h)
{
	a->format_version = h->version;
	a->pid = h->pid;
	a->argv = calloc((size_t)h->argc + 1, sizeof(*a->argv));
	if (!a->argv)
		return hs_error("out of memory");
	for (int i = 0; i < h->argc; i++) {
		a->argv[i] = strdup(h->argv[i]);
		if (!a->argv[i])
			return hs_error("out of memory");
		a->argc = i + 1;
	}
	if (h->exe && !(a->exe = strdup(h->exe)))
		return hs_error("out of memory");
	if (h->malloc_owner && !(a->malloc_owner = strdup(h->malloc_owner)))
		return hs_error("out of memory");
	a->allocator = strdup(h->allocator ? h->allocator : "glibc");
	if (!a->allocator)
		return hs_error("out of memory");
	a->glibc = !strcmp(a->allocator, "glibc");
	/* a start beyond the user address space is unknown (corrupt) */
	a->heap_start = h->heap_start < REPLAY_ADDR_END ? h->heap_start : 0;
	return 0;
}

static void reset_counts(struct analysis *a)
{
	a->complete = a->truncated = a->has_end = a->has_exit = 0;
	a->events = a->duration_ns = a->batch_marks = a->label_marks = 0;
	a->samples = 0;
	series_finish(&a->series);
	series_init(&a->series);
}

/* The walk's callbacks, in the order a trace brings them. */

static int on_header(void *ctx, const struct hs_header *h)
{
	struct pass *p = ctx;
	struct analysis *a = p->a;
	const struct analysis_opts *o = p->o;
	p->stacks = stacks_create(o->warmup > 0 ? (uint32_t)o->warmup : 0,
				  o->group_by_site);
	if (!a->argv && copy_header(a, h))
		return -1;
	p->heap = heapmap_create(h->page_size, a->heap_start, a->glibc);
	p->replay = p->stacks && p->heap ? replay_create(p->stacks) : NULL;
	p->symbols = symbols_create(o->debuginfo_path);
	if (!p->replay || !p->symbols)
		return -1;
	stacks_set_site_filter(p->stacks, symbols_in_runtime, p->symbols);
	/* each batch of the series takes the heap's shape at its end */
	a->series.heap = p->heap;
	if (replay_add_consumer(p->replay, &stacks_consumer, p->stacks) ||
	    replay_add_consumer(p->replay, &heapmap_consumer, p->heap) ||
	    replay_add_consumer(p->replay, &series_consumer, &a->series))
		return -1;
	return 0;
}

/* The first event: the modules come first, load them during the replay. */
static inline void preload(struct pass *p)
{
	if (!p->preloaded)
		p->preloaded = symbols_preload(p->symbols);
}

static int on_events(void *ctx, const struct hs_event *ev, size_t n)
{
	struct pass *p = ctx;
	preload(p);
	p->a->events += n;
	p->a->complete = 0;
	return replay_events(p->replay, ev, n);
}

static int on_event(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	preload(p);
	p->a->events++;
	p->a->complete = 0;
	return replay_event(p->replay, rec);
}

/* With time windows: closes those that end at or before now. */
static int on_time(void *ctx, uint64_t now)
{
	struct pass *p = ctx;
	p->now = now;
	if (p->src != BATCHES_TIME || now < p->boundary)
		return 0;
	/* checked before any is made: time:1ns over an hour is 3.6e12 */
	if ((now - p->boundary) / p->window >= WINDOWS_MAX - p->a->series.n)
		return hs_error("more than %u time windows: use a longer "
				"--batches time:DURATION", WINDOWS_MAX);
	for (; now >= p->boundary; p->boundary += p->window)
		if (replay_batch_end(p->replay, p->boundary, 0))
			return -1;
	return 0;
}

static int on_stack(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	return stacks_node(p->stacks, rec->id, rec->parent, rec->ip);
}

static int on_module(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	return symbols_module(p->symbols, rec);
}

static int on_mark(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	if (rec->mark_kind != HS_MARK_BATCH) {
		p->a->label_marks++;
		return 0;
	}
	p->a->batch_marks++;
	if (p->src != BATCHES_MARKER)
		return 0;
	return replay_batch_end(p->replay, p->now, 1);
}

static int on_sample(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	p->a->samples++;
	series_sample(&p->a->series, rec);
	return 0;
}

static int on_end(void *ctx, const struct hs_record *rec)
{
	struct analysis *a = ((struct pass *)ctx)->a;
	a->has_end = a->complete = 1;
	a->end_reason = rec->end_reason;
	a->unrecorded = rec->counts[HS_COUNT_UNRECORDED];
	return 0;
}

static int on_process_exit(void *ctx, const struct hs_record *rec)
{
	struct analysis *a = ((struct pass *)ctx)->a;
	a->has_exit = 1;
	a->wait_status = rec->wait_status;
	return 0;
}

static int on_stop(void *ctx, const struct hs_record *rec)
{
	struct analysis *a = ((struct pass *)ctx)->a;
	snprintf(a->stopped, sizeof(a->stopped), "%.*s",
		 (int)(rec->str_len < 500 ? rec->str_len : 500), rec->str);
	return 0;
}

static int on_done(void *ctx, const struct walk_end *e)
{
	struct analysis *a = ((struct pass *)ctx)->a;
	a->duration_ns = e->time_ns;
	if (e->truncated) {
		a->truncated = 1;
		a->complete = 0;
	}
	return 0;
}

static const struct walk_sink sink = {
	.flags = WALK_PREFETCH | WALK_TIME_CHECK | WALK_CUT_OK,
	.header = on_header,
	.events = on_events,
	.time = on_time,
	.event = on_event,
	.stack = on_stack,
	.module = on_module,
	.mark = on_mark,
	.sample = on_sample,
	.end = on_end,
	.exit = on_process_exit,
	.stop = on_stop,
	.done = on_done,
};

/* Streams the trace once with batches from `src`. */
static int stream(struct analysis *a, const struct analysis_opts *o,
		  enum batch_source src, uint64_t window, struct pass *p)
{
	*p = (struct pass){ .a = a, .o = o, .src = src, .window = window,
			    .boundary = window };
	reset_counts(a);
	return walk(a->path, &sink, p);
}

/* A round window giving about AUTO_WINDOWS batches: 1, 2 or 5 x 10^k ns. */
static uint64_t auto_window(uint64_t duration_ns)
{
	uint64_t want = duration_ns / AUTO_WINDOWS, w = 1000000;
	while (w < want) {
		if (w * 2 >= want)
			return w * 2;
		if (w * 5 >= want)
			return w * 5;
		w *= 10;
	}
	return w;
}

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
static void fit_shape(struct analysis *a)
{
	double mean;
	int has_in_use, has_free;
	fit_batches(&a->series, a->warmup, BATCH_FOOTPRINT, &a->footprint_fit,
		    &mean, &a->has_shape);
	fit_batches(&a->series, a->warmup, BATCH_SPAN, &a->span_fit, &mean,
		    &a->has_shape);
	fit_batches(&a->series, a->warmup, BATCH_HOLES, &a->holes_fit, &mean,
		    &a->has_shape);
	fit_batches(&a->series, a->warmup, BATCH_RELEASABLE, &a->releasable_fit,
		    &mean, &a->has_shape);
	fit_batches(&a->series, a->warmup, BATCH_IN_USE, &a->in_use_fit, &mean,
		    &has_in_use);
	fit_batches(&a->series, a->warmup, BATCH_HEAP_FREE, &a->heap_free_fit,
		    &mean, &has_free);
	a->has_mallinfo_fit = has_in_use && has_free;
	/* glibc retains the holes and the free top of the brk heap; with the
	 * top known for only some batches, the holes alone */
	fit_batches(&a->series, a->warmup, BATCH_TOP, &a->top_fit, &mean,
		    &a->has_top_fit);
	a->retained_fit = a->holes_fit;
	if (a->has_top_fit)
		fit_batches(&a->series, a->warmup, BATCH_RETAINED,
			    &a->retained_fit, &mean, &has_free);
	/* retained memory is known only where glibc's layout is */
	a->has_decomposition = a->has_rss_fit && a->has_shape && a->glibc;
	if (a->has_decomposition)
		a->other_slope = a->rss_fit.slope - a->live_fit.slope -
				 a->retained_fit.slope;
}

/* The pinning blocks of the last batch end, by stack id. */
static int copy_pins(struct analysis *a, const struct pass *p)
{
	const struct heapmap_pin *pins;
	size_t n;
	heapmap_last_pins(p->heap, &pins, &n);
	if (!a->glibc || !n)
		return 0;
	a->pins = calloc(n, sizeof(*a->pins));
	if (!a->pins)
		return hs_error("out of memory");
	a->npins = n;
	for (size_t i = 0; i < n; i++) {
		struct pin_group *g = &a->pins[i];
		g->id = pins[i].slot == HEAPMAP_NOT_FOUND  ? PIN_NOT_FOUND
			: pins[i].slot == HEAPMAP_UNPROBED ? PIN_UNPROBED
			: stacks_slot_id(p->stacks, pins[i].slot);
		g->pinned_bytes = pins[i].pinned_bytes;
		g->blocks = pins[i].blocks;
		g->live_bytes = pins[i].live_bytes;
		a->pinned_bytes += g->pinned_bytes;
	}
	return 0;
}

static int add_frames(struct symbols *sym, const struct stacks *st,
		      struct stack_growth *g, int site_only)
{
	uint64_t ips[STACK_DEPTH_MAX];
	size_t n = stacks_ips(st, g->id, ips, STACK_DEPTH_MAX), cap = 0;
	if (site_only) { /* a site shows its own frame */
		ips[0] = g->site_ip;
		n = g->site_ip != 0;
	}
	for (size_t i = 0; i < n; i++)
		if (symbols_resolve(sym, ips[i], &g->frames, &g->nframes, &cap))
			return -1;
	return 0;
}

/* The means of the live heap, RSS and allocator footprint after the
 * warm-up, from their fits: the verdict weighs slopes against them. */
struct means {
	double live, rss, heap;
};

static int rank(struct analysis *a, const struct analysis_opts *o,
		struct pass *p, const struct means *m)
{
	uint32_t batches = (uint32_t)a->series.n;
	a->by_site = o->group_by_site;
	if (stacks_rank(p->stacks, (uint32_t)a->warmup, batches, 0,
			&a->stacks, &a->nstacks))
		return -1;
	struct verdict_input vin = {
		.points = batches > a->warmup ? batches - a->warmup : 0,
		.live_slope = a->live_fit.slope,
		.live_r2 = a->live_fit.r2,
		.has_rss = a->has_rss_fit,
		.rss_slope = a->rss_fit.slope,
		.rss_r2 = a->rss_fit.r2,
		.stacks = a->stacks,
		.nstacks = a->nstacks,
		.complete = a->complete,
		.live_mean = m->live,
		.rss_mean = m->rss,
		.heap_mean = m->heap,
	};
	vin.has_heap = a->has_heap_fit;
	vin.heap_slope = a->heap_fit.slope;
	vin.heap_r2 = a->heap_fit.r2;
	verdict_decide(&vin, &a->verdict);
	if (o->group_by_site) {
		stacks_growth_free(a->stacks, a->nstacks);
		a->stacks = NULL;
		if (stacks_rank(p->stacks, (uint32_t)a->warmup, batches, 1,
				&a->stacks, &a->nstacks))
			return -1;
	}
	a->shown = a->nstacks < o->top ? a->nstacks : o->top;
	a->paths_shown = o->top;
	for (size_t i = 0; i < a->shown; i++) {
		struct stack_growth *g = &a->stacks[i];
		if (add_frames(p->symbols, p->stacks, g, o->group_by_site))
			return -1;
		for (size_t j = 0; j < g->npaths && j < o->top; j++)
			if (add_frames(p->symbols, p->stacks, &g->paths[j], 0))
				return -1;
	}
	a->pins_shown = a->npins < o->top ? a->npins : o->top;
	for (size_t i = 0; i < a->pins_shown; i++) {
		struct pin_group *g = &a->pins[i];
		struct stack_growth tmp = { .id = g->id };
		if (g->id >= PIN_UNPROBED)
			continue;
		int rc = add_frames(p->symbols, p->stacks, &tmp, 0);
		g->frames = tmp.frames; /* freed with the pins, even on failure */
		g->nframes = tmp.nframes;
		if (rc)
			return -1;
	}
	return 0;
}

struct analysis *analysis_run(const char *path,
			      const struct analysis_opts *o)
{
	struct pass p = { 0 };
	struct analysis *a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path))) {
		hs_error("out of memory");
		goto fail;
	}
	series_init(&a->series);
	enum batch_source src =
		o->batches == BATCHES_TIME ? BATCHES_TIME : BATCHES_MARKER;
	a->source = src;
	a->window_ns = o->window_ns;
	if (stream(a, o, src, o->window_ns, &p))
		goto fail;
	if (o->batches == BATCHES_AUTO && a->batch_marks == 0 &&
	    a->duration_ns > 0) {
		/* no marks: a second pass with time windows */
		pass_finish(&p);
		a->source = BATCHES_AUTO;
		a->window_ns = auto_window(a->duration_ns);
		if (stream(a, o, BATCHES_TIME, a->window_ns, &p))
			goto fail;
	}
	a->totals = p.replay->t;
	a->bad_stack_refs = stacks_bad_refs(p.stacks);
	a->distinct_stacks = stacks_count(p.stacks);
	size_t batches = a->series.n;
	stacks_finish(p.stacks, (uint32_t)batches);
	a->warmup_auto = o->warmup < 0;
	a->warmup = o->warmup < 0 ? regress_auto_warmup(batches)
				  : (size_t)o->warmup;
	struct means m;
	int has;
	fit_batches(&a->series, a->warmup, BATCH_LIVE, &a->live_fit, &m.live,
		    &has);
	fit_batches(&a->series, a->warmup, BATCH_RSS, &a->rss_fit, &m.rss,
		    &a->has_rss_fit);
	fit_batches(&a->series, a->warmup, BATCH_HEAP, &a->heap_fit, &m.heap,
		    &a->has_heap_fit);
	fit_shape(a);
	if (copy_pins(a, &p))
		goto fail;
	if (rank(a, o, &p, &m))
		goto fail;
	replay_destroy(p.replay);
	heapmap_destroy(p.heap);
	stacks_destroy(p.stacks);
	a->symbols = p.symbols;
	return a;
fail:
	pass_finish(&p);
	analysis_destroy(a);
	return NULL;
}

void analysis_destroy(struct analysis *a)
{
	if (!a)
		return;
	stacks_growth_free(a->stacks, a->nstacks);
	for (size_t i = 0; i < a->npins; i++)
		symbols_frames_free(a->pins[i].frames, a->pins[i].nframes);
	free(a->pins);
	free(a->allocator);
	free(a->malloc_owner);
	symbols_destroy(a->symbols);
	series_finish(&a->series);
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	free(a->exe);
	free(a->path);
	free(a);
}

int analysis_parse_batches(const char *arg, struct analysis_opts *o)
{
	if (!strcmp(arg, "marker") || !strcmp(arg, "markers")) {
		o->batches = BATCHES_MARKER;
		return 0;
	}
	if (!strcmp(arg, "auto")) {
		o->batches = BATCHES_AUTO;
		return 0;
	}
	if (strncmp(arg, "time:", 5) != 0)
		return hs_error("--batches: '%s' is not 'marker', 'auto' or "
				"'time:DURATION'", arg);
	char *end;
	errno = 0;
	double v = strtod(arg + 5, &end);
	static const struct { const char *u; double ns; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 },
		{ "ns", 1 }, { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
	};
	if (end == arg + 5 || errno || !(v > 0))
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].u) != 0)
			continue;
		double ns = v * units[i].ns;
		if (!(ns >= 1) || ns > 1e18)
			goto bad;
		o->batches = BATCHES_TIME;
		o->window_ns = (uint64_t)ns;
		return 0;
	}
bad:
	return hs_error("--batches: bad duration in '%s' (examples: "
			"time:1s, time:500ms, time:2m)", arg);
}
