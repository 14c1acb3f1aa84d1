#include "analysis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "format/reader.h"
#include "groups.h"
#include "heapmap.h"
#include "pyframes.h"
#include "recording.h"
#include "stack_series.h"
#include "growth.h"
#include "symbols.h"
#include "walk.h"
#include "writer_alive.h"

/* Time windows beyond this many are a unit mistake (or a corrupt clock):
 * a million (some 300 MB of batches) is 1 ms windows over a quarter of an
 * hour.  Time records come every 10 ms, so that time:1ns is refused at
 * the first of them, before a million windows are made.  Times past
 * WALK_TIME_MAX are refused, so below it the window arithmetic cannot
 * wrap (windows are at most 1e18 ns). */
#define WINDOWS_MAX (1000u * 1000)
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
	int started;               /* the range's start has been passed */
	struct stacks *stacks;
	struct replay *replay;
	struct heapmap *heap;
	struct symbols *symbols;
	struct stacks *map_stacks; /* with HS_OPT_MAPS */
	struct maps *maps;
	struct pyframes *py;       /* unless --python-frames=native */
	struct regions *regions;   /* the blocks' regions (regions.h) */
	struct stack_series *series; /* with --group-by-frame */
};

static void pass_finish(struct pass *p)
{
	replay_destroy(p->replay);
	heapmap_destroy(p->heap);
	stacks_destroy(p->stacks);
	symbols_destroy(p->symbols);
	maps_destroy(p->maps);
	stacks_destroy(p->map_stacks);
	pyframes_destroy(p->py);
	regions_destroy(p->regions);
	p->regions = NULL;
	stack_series_destroy(p->series);
	p->series = NULL;
	p->py = NULL;
	p->maps = NULL;
	p->map_stacks = NULL;
	p->replay = NULL;
	p->heap = NULL;
	p->stacks = NULL;
	p->symbols = NULL;
}

static int copy_header(struct analysis *a, const struct hs_header *h)
{
	a->format_version = h->version;
	a->pid = h->pid;
	a->ppid = h->ppid;
	a->start_realtime_ns = h->start_realtime_ns;
	a->start_monotonic_ns = h->start_monotonic_ns;
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
	a->has_before = h->has_before;
	a->before_allocs = h->before_allocs;
	a->before_bytes = h->before_bytes;
	a->allocator = strdup(h->allocator ? h->allocator : "glibc");
	if (!a->allocator)
		return hs_error("out of memory");
	a->glibc = !strcmp(a->allocator, "glibc");
	a->pymalloc_replaced = h->pymalloc_set;
	const char *exe = h->exe ? strrchr(h->exe, '/') : NULL;
	exe = exe ? exe + 1 : h->exe;
	a->python = exe && !strncmp(exe, "python", 6);
	/* a start beyond the user address space is unknown (corrupt) */
	a->heap_start = h->heap_start < REPLAY_ADDR_END ? h->heap_start : 0;
	return 0;
}

static void reset_counts(struct analysis *a)
{
	free(a->node_when); /* a second pass reads the stacks again */
	a->node_when = NULL;
	a->nnode_when = 0;
	a->complete = a->truncated = a->has_end = a->has_exit = 0;
	a->range.has_exiting = 0;
	a->events = a->duration_ns = a->batch_marks = a->label_marks = 0;
	a->samples = 0;
	series_finish(&a->series);
	series_init(&a->series);
}

/* The walk's callbacks, in the order a trace brings them. */

/* A stack's site by its innermost Python line, when it has one. */
static uint64_t python_site(void *ctx, uint64_t id)
{
	struct pass *p = ctx;
	uint64_t ids[STACK_DEPTH_MAX];
	size_t n = stacks_ids(p->stacks, id, ids, STACK_DEPTH_MAX);
	return pyframes_site(p->py, ids, n);
}

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
	if (!p->replay || !p->symbols ||
	    !(p->regions = regions_create(p->replay, p->stacks)))
		return -1;
	stacks_set_site_filter(p->stacks, symbols_in_runtime, p->symbols);
	if (o->python_frames != PYFRAMES_NATIVE) {
		p->py = pyframes_create();
		if (!p->py)
			return -1;
		stacks_set_site_key(p->stacks, python_site, p);
	}
	a->has_maps = (h->options & HS_OPT_MAPS) != 0;
	if (a->has_maps) {
		p->map_stacks = stacks_create(o->warmup > 0 ? (uint32_t)o->warmup
							    : 0, 0);
		p->maps = p->map_stacks ? maps_create(p->map_stacks) : NULL;
		if (!p->maps)
			return -1;
		a->series.maps = p->maps;
	}
	/* each batch of the series takes the heap's shape at its end */
	a->series.heap = p->heap;
	if (o->group_match &&
	    (!(p->series = stack_series_create()) ||
	     replay_add_consumer(p->replay, &stack_series_consumer,
				 p->series)))
		return -1;
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

_Static_assert(STACKS_JOINED == PYFRAMES_JOINED, "one range of joint ids");

/* A joint of a native stack and Python frames (pyframes_join), in both
 * stack tables. */
static int make_joint(void *ctx, uint64_t id, uint64_t native)
{
	struct pass *p = ctx;
	int rc = stacks_join(p->stacks, id, native);
	if (rc || !p->map_stacks)
		return rc;
	/* both tables have the same nodes: a joint is in both or neither */
	return stacks_join(p->map_stacks, id, native) ? -1 : 0;
}

/* An event's stack with its thread's Python frames, if any. */
static inline int joined(struct pass *p, uint64_t *stack)
{
	if (!*stack)
		return 0;
	*stack = pyframes_join(p->py, *stack, make_joint, p);
	return *stack ? 0 : -1;
}

static int on_events(void *ctx, const struct hs_event *ev, size_t n)
{
	struct pass *p = ctx;
	preload(p);
	p->a->events += n;
	p->a->complete = 0;
	if (!p->py || !pyframes_joining(p->py))
		return replay_events(p->replay, ev, n);
	struct hs_event v[WALK_EVENTS_AT_ONCE];
	for (size_t done = 0; done < n;) {
		size_t k = n - done < WALK_EVENTS_AT_ONCE ? n - done
							  : WALK_EVENTS_AT_ONCE;
		memcpy(v, ev + done, k * sizeof(*v));
		for (size_t i = 0; i < k; i++)
			if (v[i].kind != HS_REC_FREE && v[i].kind !=
			    HS_REC_MUNMAP && joined(p, &v[i].stack))
				return -1;
		if (replay_events(p->replay, v, k))
			return -1;
		done += k;
	}
	return 0;
}

static int on_event(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	preload(p);
	p->a->events++;
	p->a->complete = 0;
	if (!p->py || !pyframes_joining(p->py) || rec->kind == HS_REC_FREE ||
	    rec->kind == HS_REC_MUNMAP)
		return replay_event(p->replay, rec);
	struct hs_record r = *rec;
	return joined(p, &r.stack) || replay_event(p->replay, &r);
}

/* The current batch's counts start again, without closing it. */
static void batch_skip(struct pass *p)
{
	replay_batch_skip(p->replay);
	regions_batch_skip(p->regions);
}

/* With time windows: closes those that end at or before now. */
static int on_time(void *ctx, uint64_t now)
{
	struct pass *p = ctx;
	const uint64_t until = p->a->range.until_ns;
	p->now = now;
	if (!p->started && now >= p->a->range.from_ns) {
		/* the first window's counts start at --from */
		p->started = 1;
		if (p->a->range.from_ns)
			batch_skip(p);
	}
	if (p->src != BATCHES_TIME || now < p->boundary || p->boundary > until)
		return 0;
	/* checked before any is made: time:1ns over an hour is 3.6e12 */
	if ((now - p->boundary) / p->window >= WINDOWS_MAX - p->a->series.n)
		return hs_error("more than %u time windows: use a longer "
				"--batches time:DURATION", WINDOWS_MAX);
	for (; now >= p->boundary && p->boundary <= until;
	     p->boundary += p->window)
		if (replay_batch_end(p->replay, p->boundary, 0))
			return -1;
	return 0;
}

/* Remembers when node id was read (symbols_clock), for analysis_frames. */
static int node_when(struct analysis *a, uint64_t id, uint64_t when)
{
	if (id >= a->nnode_when) {
		size_t cap = a->nnode_when ? a->nnode_when : 1024;
		while (cap <= id)
			cap *= 2;
		uint64_t *v = realloc(a->node_when, cap * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		for (size_t i = a->nnode_when; i < cap; i++)
			v[i] = SYMBOLS_NOW;
		a->node_when = v;
		a->nnode_when = cap;
	}
	a->node_when[id] = when;
	return 0;
}

static int on_stack(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	if (p->map_stacks &&
	    stacks_node(p->map_stacks, rec->id, rec->parent, rec->ip))
		return -1;
	if (stacks_node(p->stacks, rec->id, rec->parent, rec->ip))
		return -1;
	return node_when(p->a, rec->id, symbols_clock(p->symbols));
}

static int on_module(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	static const char libpython[] = "libpython";
	if (!p->a->python &&
	    memmem(rec->str, rec->str_len, libpython, sizeof(libpython) - 1))
		p->a->python = 1;
	return symbols_module(p->symbols, rec);
}

static int on_mark(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	if (rec->mark_kind != HS_MARK_BATCH) {
		p->a->label_marks++;
		return 0;
	}
	/* the index, in the whole run, of the batch it ends */
	const uint64_t k = p->a->batch_marks++;
	const struct analysis_range *rg = &p->a->range;
	if (p->src != BATCHES_MARKER)
		return 0;
	if (k < rg->from_batch || p->now < rg->from_ns) {
		batch_skip(p); /* before the range */
		return 0;
	}
	if (k >= rg->until_batch || p->now > rg->until_ns)
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

/* The other records: the unloading of modules, switches of thread;
 * extension records: mappings, regions, and the process began to
 * exit. */
static int on_record(void *ctx, const struct hs_record *rec)
{
	struct pass *p = ctx;
	struct analysis *a = p->a;
	if (rec->kind == HS_REC_MODULE_GONE)
		symbols_module_gone(p->symbols, rec->base);
	if (regions_record(p->regions, rec))
		return -1;
	if (rec->kind == HS_REC_SWITCH && p->py)
		return pyframes_thread(p->py, rec->tid);
	if (rec->kind != HS_REC_EXT)
		return 0;
	if (p->py && pyframes_record(p->py, rec))
		return -1;
	if (p->maps && p->replay) {
		if (p->py && pyframes_joining(p->py) && rec->stack &&
		    (rec->ext_type == HS_EXT_MAP ||
		     rec->ext_type == HS_EXT_REMAP)) {
			struct hs_record r = *rec;
			if (joined(p, &r.stack) ||
			    maps_record(p->maps, &r, p->replay->batch))
				return -1;
		} else if (maps_record(p->maps, rec, p->replay->batch)) {
			return -1;
		}
	}
	/* the process died of it: its wait status said so, until the one
	 * `record` appends, if it is the parent */
	if (rec->ext_type == HS_EXT_SIGNAL && rec->signal > 0 &&
	    rec->signal < 128) {
		a->end_signal = (int)rec->signal;
		a->has_exit = 1;
		a->wait_status = rec->signal;
	}
	if (rec->ext_type == HS_EXT_EXITING && p->stacks)
		stacks_exiting(p->stacks); /* the first: the earliest */
	/* the earliest, should there be several (threads, fork) */
	if (rec->ext_type == HS_EXT_EXITING &&
	    (!a->range.has_exiting || rec->time_ns < a->range.exiting_ns)) {
		a->range.has_exiting = 1;
		a->range.exiting_ns = rec->time_ns;
	}
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
	.record = on_record,
	.done = on_done,
};

/* Streams the trace once with batches from `src`. */
static int stream(struct analysis *a, const struct analysis_opts *o,
		  enum batch_source src, uint64_t window, struct pass *p)
{
	*p = (struct pass){ .a = a, .o = o, .src = src, .window = window,
			    .boundary = a->range.from_ns + window };
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

/* The range as given: bounds in seconds, and batch:N for batch marks. */
static void range_init(struct analysis_range *rg,
		       const struct analysis_opts *o)
{
	*rg = (struct analysis_range){ .until_ns = RANGE_END,
				       .until_batch = UINT64_MAX };
	rg->from_set = o->from.set;
	rg->until_set = o->until.set;
	if (o->from.set && o->from.is_batch)
		rg->from_batch = o->from.batch;
	else if (o->from.set)
		rg->from_ns = o->from.ns;
	if (o->until.set && o->until.is_batch)
		rg->until_batch = o->until.batch;
	else if (o->until.set)
		rg->until_ns = o->until.ns;
}

static uint64_t windows_ns(uint64_t n, uint64_t window)
{
	return n && window > (RANGE_END - 1) / n ? RANGE_END - 1 : n * window;
}

/* With time windows, batch:N is the start of window N. */
static void range_windows(struct analysis_range *rg,
			  const struct analysis_opts *o, uint64_t window)
{
	if (o->from.set && o->from.is_batch) {
		rg->from_ns = windows_ns(o->from.batch, window);
		rg->from_batch = 0;
	}
	if (o->until.set && o->until.is_batch) {
		rg->until_ns = windows_ns(o->until.batch, window);
		rg->until_batch = UINT64_MAX;
	}
}

/* The time the range covers, within the trace. */
static uint64_t range_span(const struct analysis *a)
{
	uint64_t until = a->range.until_ns < a->duration_ns ? a->range.until_ns
							    : a->duration_ns;
	return until > a->range.from_ns ? until - a->range.from_ns : 0;
}

/* Bounds past the end of the trace, or an empty range: range_error. */
static int range_check(struct analysis *a, const struct analysis_opts *o)
{
	const struct analysis_range *rg = &a->range;
	char *e = a->range_error;
	const size_t n = sizeof(a->range_error);
	const double end = a->duration_ns / 1e9;
	const int marks = a->source == BATCHES_MARKER;
	if (marks && o->from.set && o->from.is_batch &&
	    o->from.batch >= a->batch_marks)
		snprintf(e, n, "--from batch:%llu is past the last batch (the "
			 "trace has %llu)", (unsigned long long)o->from.batch,
			 (unsigned long long)a->batch_marks);
	else if (marks && o->until.set && o->until.is_batch &&
		 o->until.batch > a->batch_marks)
		snprintf(e, n, "--until batch:%llu is past the last batch (the "
			 "trace has %llu)", (unsigned long long)o->until.batch,
			 (unsigned long long)a->batch_marks);
	else if (o->from.set && rg->from_ns >= a->duration_ns)
		snprintf(e, n, "--from %.3f s is past the end of the trace "
			 "(%.3f s)", rg->from_ns / 1e9, end);
	else if (o->until.set && !o->until.end &&
		 rg->until_ns != RANGE_END && rg->until_ns > a->duration_ns)
		snprintf(e, n, "--until %.3f s is past the end of the trace "
			 "(%.3f s; --until end means the end)",
			 rg->until_ns / 1e9, end);
	else if (rg->from_ns >= rg->until_ns ||
		 rg->from_batch >= rg->until_batch)
		snprintf(e, n, "--from must come before --until");
	return e[0] ? -1 : 0;
}

/* With time windows and no marks: leaves out the start-up and the
 * teardown (range.h), unless --from / --until say where to start and
 * stop.  1 when it cuts away some of the series. */
static int auto_cut(struct analysis *a)
{
	struct analysis_range *rg = &a->range;
	const struct series *s = &a->series;
	if (a->source == BATCHES_MARKER || a->batch_marks || !s->n)
		return 0;
	char start[128] = "", stop[160] = "";
	if (!rg->until_set) {
		uint64_t until = RANGE_END;
		size_t j = range_teardown_window(s->v, s->n);
		if (j < s->n)
			until = s->v[j - 1].end_ns;
		if (rg->has_exiting && rg->exiting_ns < until) {
			until = rg->exiting_ns;
			rg->teardown_exiting = 1;
		}
		if (until < s->v[s->n - 1].end_ns) {
			rg->until_ns = until;
			rg->teardown_cut = 1;
			snprintf(stop, sizeof(stop),
				 "the teardown after %.3f s (%s; --until end "
				 "keeps it)", until / 1e9,
				 rg->teardown_exiting
					 ? "the process began to exit"
					 : "the live heap fell for good");
		}
	}
	if (!rg->from_set) {
		size_t n = 0;
		while (n < s->n && s->v[n].end_ns <= rg->until_ns)
			n++;
		size_t k = range_startup_windows(s->v, n);
		if (k) {
			rg->from_ns = s->v[k - 1].end_ns;
			rg->startup_cut = 1;
			snprintf(start, sizeof(start),
				 "the start-up before %.3f s (--from 0 keeps "
				 "it)", rg->from_ns / 1e9);
		}
	}
	if (start[0] || stop[0])
		snprintf(rg->left_out, sizeof(rg->left_out),
			 "left out automatically: %s%s%s", start,
			 start[0] && stop[0] ? " and " : "", stop);
	return start[0] || stop[0];
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
			: stacks_slot_id(a->stacks, pins[i].slot);
		g->pinned_bytes = pins[i].pinned_bytes;
		g->blocks = pins[i].blocks;
		g->live_bytes = pins[i].live_bytes;
		a->pinned_bytes += g->pinned_bytes;
	}
	return 0;
}

/* Every stack that allocated, ranked by growth (by_site: the sites). */
static int rank(struct analysis *a, int by_site)
{
	stacks_growth_free(a->ranked, a->nranked);
	a->ranked = NULL;
	a->by_site = by_site;
	return stacks_rank(a->stacks, (uint32_t)a->warmup,
			   (uint32_t)a->series.n, by_site, &a->ranked,
			   &a->nranked);
}

/* The mapping stacks, ranked; the first `top` with their frames, kind
 * and file. */
static int rank_maps(struct analysis *a, struct pass *p, size_t top)
{
	if (!p->maps)
		return 0;
	if (stacks_rank(p->map_stacks, (uint32_t)a->warmup,
			(uint32_t)a->series.n, 0, &a->map_ranked,
			&a->nmap_ranked))
		return -1;
	a->maps_shown = a->nmap_ranked < top ? a->nmap_ranked : top;
	if (!a->maps_shown)
		return 0;
	a->map_info = calloc(a->maps_shown, sizeof(*a->map_info));
	if (!a->map_info)
		return hs_error("out of memory");
	for (size_t i = 0; i < a->maps_shown; i++) {
		struct stack_growth *g = &a->map_ranked[i];
		uint32_t slot = stacks_ref(p->map_stacks, g->id);
		const char *path;
		maps_slot(p->maps, slot, &a->map_info[i].kind, &path);
		if (path && !(a->map_info[i].path = strdup(path)))
			return hs_error("out of memory");
	}
	return 0;
}

/* Of the free pages pinned at the last batch, the share below blocks of
 * stacks that grow (ranked one by one: by their ids). */
static double pinned_by_growing(const struct analysis *a)
{
	uint64_t by_growing = 0;
	for (size_t i = 0; i < a->npins; i++) {
		const struct pin_group *g = &a->pins[i];
		for (size_t k = 0; k < a->nranked; k++) {
			const struct stack_growth *s = &a->ranked[k];
			if (s->bytes_per_batch <= 0)
				break; /* ranked: the rest do not grow */
			if (s->id == g->id && s->r2 >= 0.5) {
				by_growing += g->pinned_bytes;
				break;
			}
		}
	}
	return a->pinned_bytes ? (double)by_growing / (double)a->pinned_bytes
			       : 0;
}

/* The verdict, from the growth and the stacks ranked one by one. */
static void decide(struct analysis *a)
{
	size_t batches = a->series.n;
	const struct growth *g = &a->growth;
	struct verdict_input in = {
		.points = batches > a->warmup ? batches - a->warmup : 0,
		.live_slope = g->live.slope,
		.live_r2 = g->live.r2,
		.live_mean = g->live_mean,
		.has_rss = g->has_rss,
		.rss_slope = g->rss.slope,
		.rss_r2 = g->rss.r2,
		.rss_mean = g->rss_mean,
		.has_heap = g->has_heap,
		.heap_slope = g->heap.slope,
		.heap_r2 = g->heap.r2,
		.heap_mean = g->heap_mean,
		.stacks = a->ranked,
		.nstacks = a->nranked,
		/* the run's end seen: not a trace whose recording stopped */
		.complete = a->complete && !a->stopped[0],
		.killed = a->has_end && a->end_reason == HS_END_SIGNAL,
		.has_exiting = a->range.has_exiting,
		.has_pins = a->pinned_bytes > 0 && !a->by_site,
		.pinned_by_growing = a->by_site ? 0 : pinned_by_growing(a),
		.has_maps = g->has_maps,
		.mapped_slope = g->mapped.slope,
		.mapped_r2 = g->mapped.r2,
		.mapped_mean = g->mapped_mean,
		.has_retained = g->has_decomposition,
		.retained_slope = g->retained.slope,
	};
	if (in.points) {
		const struct batch *b0 = &a->series.v[a->warmup],
				   *b1 = &a->series.v[batches - 1];
		in.rss_first = (double)b0->rss_bytes;
		in.rss_last = (double)b1->rss_bytes;
		in.held_first = (double)(b0->live_bytes + b0->mapped_bytes);
		in.held_last = (double)(b1->live_bytes + b1->mapped_bytes);
	}
	verdict_decide(&in, &a->verdict);
}

/* When site g's frame was captured: as in its first path's stack. */
static uint64_t site_when(const struct analysis *a,
			  const struct stack_growth *g)
{
	uint64_t ips[STACK_DEPTH_MAX], ids[STACK_DEPTH_MAX];
	if (!g->npaths)
		return SYMBOLS_NOW;
	size_t n = stacks_ips(a->stacks, g->paths[0].id, ips, STACK_DEPTH_MAX);
	stacks_ids(a->stacks, g->paths[0].id, ids, STACK_DEPTH_MAX);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = stacks_native(a->stacks, ids[i]);
		if (ips[i] == g->site_ip && id < a->nnode_when)
			return a->node_when[id];
	}
	return SYMBOLS_NOW;
}

/* Appends the frames of g's stack (site_only: of its site's frame). */
static int add_frames(const struct analysis *a, struct stack_growth *g,
		      int site_only)
{
	if (!site_only)
		return analysis_frames(a, g->id, &g->frames, &g->nframes);
	size_t cap = 0;
	if (!g->site_ip)
		return 0;
	if (g->site_ip & PYFRAMES_SITE)
		return pyframes_site_frame(a->py, g->site_ip, &g->frames,
					   &g->nframes, &cap);
	return symbols_resolve_at(a->symbols, g->site_ip, site_when(a, g),
				  &g->frames, &g->nframes, &cap);
}

/* The frames of the stacks of each region's row. */
static int regions_frames(const struct analysis *a)
{
	const struct region_report *r = &a->regions;
	for (size_t i = 0; i < r->npaths + r->nnames; i++) {
		struct region_row *w = i < r->npaths ? &r->paths[i]
						     : &r->names[i - r->npaths];
		for (size_t j = 0; j < w->nstacks; j++)
			if (add_frames(a, &w->stacks[j], 0))
				return -1;
	}
	return 0;
}

/* The frames of what the reports show: the top stacks (or sites and
 * their top paths) and the top pinning stacks. */
static int symbolize(struct analysis *a, size_t top)
{
	a->shown = a->nranked < top ? a->nranked : top;
	a->paths_shown = top;
	for (size_t i = 0; i < a->shown; i++) {
		struct stack_growth *g = &a->ranked[i];
		if (add_frames(a, g, a->by_site))
			return -1;
		for (size_t j = 0; j < g->npaths && j < top; j++)
			if (add_frames(a, &g->paths[j], 0))
				return -1;
	}
	for (size_t i = 0; i < a->maps_shown; i++)
		if (add_frames(a, &a->map_ranked[i], 0))
			return -1;
	if (regions_frames(a))
		return -1;
	a->pins_shown = a->npins < top ? a->npins : top;
	for (size_t i = 0; i < a->pins_shown; i++) {
		struct pin_group *g = &a->pins[i];
		if (g->id < PIN_UNPROBED &&
		    analysis_frames(a, g->id, &g->frames, &g->nframes))
			return -1; /* the frames go with the pins */
	}
	return 0;
}

int analysis_frames(const struct analysis *a, uint64_t id,
		    struct frame **frames, size_t *n)
{
	uint64_t ips[STACK_DEPTH_MAX], ids[STACK_DEPTH_MAX];
	struct frame *nv = NULL;
	size_t nn = 0;
	*frames = NULL;
	*n = 0;
	size_t depth = stacks_ips(a->stacks, id, ips, STACK_DEPTH_MAX), cap = 0;
	stacks_ids(a->stacks, id, ids, STACK_DEPTH_MAX);
	for (size_t i = 0; i < depth; i++) {
		/* a joint was made when its native node was in use */
		uint64_t id = stacks_native(a->stacks, ids[i]);
		uint64_t when = id < a->nnode_when ? a->node_when[id]
						   : SYMBOLS_NOW;
		if (symbols_resolve_at(a->symbols, ips[i], when, &nv, &nn,
				       &cap)) {
			*frames = nv;
			*n = nn;
			return -1;
		}
	}
	if (!a->py) {
		*frames = nv;
		*n = nn;
		return 0;
	}
	return pyframes_merge(a->py, ids, depth,
			      (enum pyframes_mode)a->python_frames, nv, nn,
			      frames, n);
}

struct analysis *analysis_create(const char *path,
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
	range_init(&a->range, o);
	if (src == BATCHES_TIME)
		range_windows(&a->range, o, o->window_ns);
	if (stream(a, o, src, o->window_ns, &p))
		goto fail;
	if (o->batches == BATCHES_AUTO && a->batch_marks == 0 &&
	    a->duration_ns > 0) {
		/* no marks: a second pass with time windows, about
		 * AUTO_WINDOWS of them over the range */
		pass_finish(&p);
		a->source = BATCHES_AUTO;
		range_windows(&a->range, o, auto_window(a->duration_ns));
		/* windows about 3 times finer to find the start-up and the
		 * teardown, unless --from and --until leave nothing to find */
		uint64_t span = range_span(a);
		a->window_ns = auto_window(a->range.from_set &&
						   a->range.until_set
					   ? span : span / 3);
		if (stream(a, o, BATCHES_TIME, a->window_ns, &p))
			goto fail;
	}
	if (range_check(a, o)) {
		pass_finish(&p);
		return a; /* a->range_error says why */
	}
	int again = auto_cut(a);
	if (a->source == BATCHES_AUTO) {
		uint64_t w = auto_window(range_span(a));
		again |= w != a->window_ns;
		a->window_ns = w;
	}
	if (again) {
		/* the start-up or the teardown is left out: again, with
		 * the windows over what is left */
		pass_finish(&p);
		if (stream(a, o, BATCHES_TIME, a->window_ns, &p))
			goto fail;
	}
	a->totals = p.replay->t;
	a->writing = !a->complete && !a->stopped[0] &&
		     writer_alive_at(a->pid, a->start_realtime_ns,
				     a->start_monotonic_ns);
	/* the stacks and the symbols stay: every stack's frames can be had */
	a->stacks = p.stacks;
	a->symbols = p.symbols;
	a->py = p.py;
	a->python_frames = o->python_frames;
	p.stacks = NULL;
	p.symbols = NULL;
	p.py = NULL;
	if (p.maps) {
		maps_state(p.maps, &a->maps_end);
		stacks_close(p.map_stacks, (uint32_t)a->series.n);
	}
	a->bad_stack_refs = stacks_bad_refs(a->stacks);
	a->distinct_stacks = stacks_count(a->stacks);
	size_t batches = a->series.n;
	stacks_close(a->stacks, (uint32_t)batches);
	a->warmup_auto = o->warmup < 0;
	a->warmup = o->warmup < 0 ? regress_auto_warmup(batches)
				  : (size_t)o->warmup;
	growth_fit(&a->growth, &a->series, a->warmup, a->glibc);
	if (regions_report(p.regions, &a->series, &a->totals, a->warmup,
			   o->top < REGIONS_STACKS_MAX ? o->top
						       : REGIONS_STACKS_MAX,
			   &a->regions))
		goto fail;
	if (copy_pins(a, &p) || rank(a, 0) || rank_maps(a, &p, o->top))
		goto fail;
	decide(a);
	if (o->group_match &&
	    groups_build(a, o->group_match, p.series, &a->groups))
		goto fail;
	if ((o->group_by_site && rank(a, 1)) || symbolize(a, o->top))
		goto fail;
	pass_finish(&p);
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
	stacks_growth_free(a->ranked, a->nranked);
	groups_destroy(a->groups);
	for (size_t i = 0; i < a->nrecording; i++)
		recording_trace_finish(&a->recording[i]);
	free(a->recording);
	stacks_growth_free(a->map_ranked, a->nmap_ranked);
	regions_report_finish(&a->regions);
	for (size_t i = 0; i < a->maps_shown && a->map_info; i++)
		free(a->map_info[i].path);
	free(a->map_info);
	for (size_t i = 0; i < a->npins; i++)
		symbols_frames_free(a->pins[i].frames, a->pins[i].nframes);
	free(a->pins);
	free(a->allocator);
	free(a->malloc_owner);
	free(a->node_when);
	symbols_destroy(a->symbols);
	stacks_destroy(a->stacks);
	pyframes_destroy(a->py);
	series_finish(&a->series);
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	free(a->exe);
	free(a->path);
	free(a);
}

int analysis_add_recording(struct analysis *a)
{
	char **paths = NULL;
	size_t n = 0, k = 1;
	uint64_t *ev = NULL, *mk = NULL;
	int rc = -1;
	if (recording_siblings(a->path, &paths, &n))
		return -1;
	if (!n)
		return 0;
	a->recording = calloc(n + 1, sizeof(*a->recording));
	ev = calloc(n + 1, sizeof(*ev));
	mk = calloc(n + 1, sizeof(*mk));
	if (!a->recording || !ev || !mk) {
		hs_error("out of memory");
		goto out;
	}
	struct recording_trace *t = &a->recording[0];
	char prog[256];
	t->path = strdup(a->path);
	t->program = strdup(recording_program(
		a->exe, a->argv + (a->argc > 0), a->argc > 0 ? a->argc - 1 : 0,
		prog, sizeof(prog)));
	t->pid = a->pid;
	t->ppid = a->ppid;
	t->events = a->events;
	t->marks = a->batch_marks;
	t->complete = a->complete;
	a->nrecording = 1;
	if (!t->path || !t->program) {
		hs_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (recording_scan(paths[i], &a->recording[k])) {
			recording_trace_finish(&a->recording[k]);
			continue;
		}
		a->nrecording = ++k;
	}
	for (size_t i = 0; i < k; i++) {
		ev[i] = a->recording[i].events;
		mk[i] = a->recording[i].marks;
	}
	a->recording_main = recording_main(ev, mk, k);
	rc = 0;
out:
	free(ev);
	free(mk);
	recording_paths_free(paths, n);
	return rc;
}

const struct batch *analysis_last_batch(const struct analysis *a)
{
	return a->series.n ? &a->series.v[a->series.n - 1] : NULL;
}

size_t analysis_stale_modules(const struct analysis *a, const char **first)
{
	*first = NULL;
	return a->symbols ? symbols_stale(a->symbols, first) : 0;
}

int analysis_pinning_matters(const struct analysis *a)
{
	return a->verdict.verdict == VERDICT_FRAGMENTATION ||
	       a->verdict.verdict == VERDICT_MIXED;
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
