/* Unit test of regions: the threads' region paths from synthetic region
 * records, the blocks they tag, the rows and how they add up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/regions.h"
#include "analyze/replay.h"
#include "analyze/series.h"
#include "analyze/stacks.h"
#include "format/reader.h"

#include "check.h"

struct world {
	struct stacks *st;
	struct series se;
	struct replay *rp;
	struct regions *rg;
};

static void world_init(struct world *w)
{
	w->st = stacks_create(0, 0);
	series_init(&w->se);
	w->rp = w->st ? replay_create(w->st) : NULL;
	w->rg = w->rp ? regions_create(w->rp, w->st) : NULL;
	if (!w->rg || replay_add_consumer(w->rp, &stacks_consumer, w->st) ||
	    replay_add_consumer(w->rp, &series_consumer, &w->se)) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (uint64_t id = 1; id < 10; id++)
		CHECK(stacks_node(w->st, id, 0, 0x1000 + id) == 0);
}

static void world_finish(struct world *w)
{
	regions_destroy(w->rg);
	replay_destroy(w->rp);
	stacks_destroy(w->st);
	series_finish(&w->se);
}

static int record(struct world *w, unsigned kind, uint64_t type,
		  uint64_t tid, uint64_t id, const char *name)
{
	struct hs_record r;
	memset(&r, 0, sizeof(r));
	r.tag = r.kind = kind;
	r.ext_type = type;
	r.tid = tid;
	r.id = id;
	r.str = name;
	r.str_len = name ? strlen(name) : 0;
	return regions_record(w->rg, &r);
}

#define SWITCH(w, t) CHECK(record(w, HS_REC_SWITCH, 0, t, 0, NULL) == 0)
#define NAME(w, t, id, s)                                                   \
	CHECK(record(w, HS_REC_EXT, HS_EXT_REGION_NAME, t, id, s) == 0)
#define BEGIN(w, t, id)                                                     \
	CHECK(record(w, HS_REC_EXT, HS_EXT_REGION_BEGIN, t, id, NULL) == 0)
#define END(w, t) CHECK(record(w, HS_REC_EXT, HS_EXT_REGION_END, t, 0, NULL) == 0)

static void event(struct world *w, unsigned kind, uint64_t old, uint64_t ptr,
		  uint64_t size, uint64_t stack)
{
	struct hs_record r;
	memset(&r, 0, sizeof(r));
	r.tag = r.kind = kind;
	r.fn = kind == HS_REC_FREE ? HS_FN_FREE : HS_FN_MALLOC;
	r.old_ptr = old;
	r.ptr = ptr;
	r.size = size;
	r.stack = stack;
	CHECK(replay_event(w->rp, &r) == 0);
}

#define MALLOC(w, p, n, s) event(w, HS_REC_ALLOC, 0, p, n, s)
#define FREE(w, p) event(w, HS_REC_FREE, 0, p, 0, 0)
#define REALLOC(w, o, p, n, s) event(w, HS_REC_REALLOC, o, p, n, s)

static void report(struct world *w, struct region_report *r)
{
	stacks_close(w->st, (uint32_t)w->se.n);
	CHECK(regions_report(w->rg, &w->se, &w->rp->t, 0, 5, r) == 0);
}

static const struct region_row *row(const struct region_row *v, size_t n,
				    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	CHECK(!"row found");
	static const struct region_row none;
	return &none;
}

/* Two threads, nested regions, a realloc and a free across threads. */
static void test_threads(void)
{
	struct world w;
	world_init(&w);
	MALLOC(&w, 0x100, 10, 1); /* before any region: outside */
	SWITCH(&w, 7);
	NAME(&w, 7, 1, "step");
	BEGIN(&w, 7, 1);
	NAME(&w, 7, 2, "leak");
	BEGIN(&w, 7, 2);
	SWITCH(&w, 8);
	MALLOC(&w, 0x200, 20, 2); /* thread 8 has none open */
	BEGIN(&w, 8, 2);          /* leak, not inside step */
	MALLOC(&w, 0x300, 30, 3);
	SWITCH(&w, 7);
	for (uint64_t b = 0; b < 4; b++) {
		MALLOC(&w, 0x1000 + b * 0x100, 100, 4); /* step > leak */
		CHECK(replay_batch_end(w.rp, b, 1) == 0);
	}
	END(&w, 7);              /* back in step */
	REALLOC(&w, 0x300, 0x400, 40, 5); /* thread 8's block, now step's */
	END(&w, 7);
	END(&w, 7);              /* none open */
	SWITCH(&w, 8);
	FREE(&w, 0x1000);        /* step > leak's block, freed elsewhere */
	struct region_report r;
	report(&w, &r);
	CHECK(r.npaths == 4 && r.nnames == 3 && r.batches == 4);
	CHECK(r.unmatched_ends == 1 && r.open_at_end == 1 && !r.folded);
	const struct region_row *leak = row(r.names, r.nnames, "leak");
	CHECK(leak->bytes_per_batch > 99.99 && leak->bytes_per_batch < 100.01);
	CHECK(leak->leaked_bytes == 300 && leak->leaked_blocks == 3);
	CHECK(leak->allocations == 5 && leak->allocated_bytes == 430);
	CHECK(leak->live_bytes_at_end == 430 && leak->live[0] == 130);
	CHECK(leak->allocated[0] == 130);
	CHECK(leak->nstacks == 1 && leak->stacks[0].id == 4);
	const struct region_row *step = row(r.names, r.nnames, "step");
	CHECK(step->leaked_bytes == 40 && step->allocations == 0);
	CHECK(step->allocated_bytes == 40);
	const struct region_row *out = row(r.names, r.nnames, REGIONS_OUTSIDE);
	CHECK(out->outside && out->leaked_bytes == 30 && out->nstacks == 0);
	CHECK(out->live[3] == 30 && out->allocations == 2);
	double sum = 0;
	for (size_t i = 0; i < r.npaths; i++)
		sum += r.paths[i].bytes_per_batch;
	CHECK(sum > 99.99 && sum < 100.01);
	const struct region_row *sl = row(r.paths, r.npaths, "leak");
	CHECK(sl->depth == 2 || sl->depth == 1);
	int found = 0;
	for (size_t i = 0; i < r.npaths; i++)
		if (r.paths[i].depth == 2)
			found = !strcmp(r.paths[i].path[0], "step") &&
				!strcmp(r.paths[i].path[1], "leak") &&
				r.paths[i].leaked_bytes == 300;
	CHECK(found);
	regions_report_finish(&r);
	world_finish(&w);
}

/* Deeper than REGIONS_DEPTH_MAX: folded into the parent, and the ends
 * match again; a name never written; a corrupt id. */
static void test_limits(void)
{
	struct world w;
	world_init(&w);
	SWITCH(&w, 1);
	for (int i = 0; i < REGIONS_DEPTH_MAX + 3; i++)
		BEGIN(&w, 1, 9);
	MALLOC(&w, 0x100, 8, 1);
	for (int i = 0; i < REGIONS_DEPTH_MAX + 3; i++)
		END(&w, 1);
	MALLOC(&w, 0x200, 16, 1);
	CHECK(record(&w, HS_REC_EXT, HS_EXT_REGION_BEGIN, 1, 1ull << 40,
		     NULL) == -1);
	struct region_report r;
	report(&w, &r);
	CHECK(r.folded == 3 && r.unmatched_ends == 0 && r.open_at_end == 0);
	CHECK(r.npaths == REGIONS_DEPTH_MAX + 1 && r.nnames == 2);
	const struct region_row *n = row(r.names, r.nnames, "(region 9)");
	CHECK(n->leaked_bytes == 8);
	CHECK(row(r.names, r.nnames, REGIONS_OUTSIDE)->leaked_bytes == 16);
	regions_report_finish(&r);
	world_finish(&w);
}

/* No region records: no rows, and no consumer. */
static void test_none(void)
{
	struct world w;
	world_init(&w);
	SWITCH(&w, 1);
	MALLOC(&w, 0x100, 8, 1);
	CHECK(w.rp->nconsumers == 2);
	struct region_report r;
	report(&w, &r);
	CHECK(r.nnames == 0 && r.npaths == 0);
	regions_report_finish(&r);
	world_finish(&w);
}

/* A batch end before the range: the bytes allocated before it are in no
 * batch. */
static void test_skip(void)
{
	struct world w;
	world_init(&w);
	BEGIN(&w, 0, 1);
	MALLOC(&w, 0x100, 8, 1);
	replay_batch_skip(w.rp);
	regions_batch_skip(w.rg);
	MALLOC(&w, 0x200, 16, 1);
	CHECK(replay_batch_end(w.rp, 1, 1) == 0);
	struct region_report r;
	report(&w, &r);
	const struct region_row *n = row(r.names, r.nnames, "(region 1)");
	CHECK(n->allocated[0] == 16 && n->live[0] == 24);
	regions_report_finish(&r);
	world_finish(&w);
}

/* Batches (time windows) closed before the first region record: the
 * rows' batches are the series'. */
static void test_late(void)
{
	struct world w;
	world_init(&w);
	MALLOC(&w, 0x100, 8, 1);
	CHECK(replay_batch_end(w.rp, 1, 0) == 0);
	CHECK(replay_batch_end(w.rp, 2, 0) == 0);
	BEGIN(&w, 0, 1);
	MALLOC(&w, 0x200, 16, 1);
	CHECK(replay_batch_end(w.rp, 3, 0) == 0);
	struct region_report r;
	report(&w, &r);
	const struct region_row *n = row(r.names, r.nnames, "(region 1)");
	const struct region_row *o = row(r.names, r.nnames, REGIONS_OUTSIDE);
	CHECK(n->live[0] == 0 && n->live[1] == 0 && n->live[2] == 16);
	CHECK(o->live[0] == 8 && o->live[2] == 8 && o->allocated[2] == 0);
	regions_report_finish(&r);
	world_finish(&w);
}

/* A new thread with the id of one that ended with a region open starts
 * with none. */
static void test_tid_reuse(void)
{
	struct world w;
	world_init(&w);
	SWITCH(&w, 5);
	BEGIN(&w, 5, 1);
	SWITCH(&w, 6);
	CHECK(record(&w, HS_REC_THREAD, 0, 5, 0, NULL) == 0);
	SWITCH(&w, 5);
	MALLOC(&w, 0x100, 8, 1);
	struct region_report r;
	report(&w, &r);
	CHECK(r.open_at_end == 1);
	CHECK(row(r.names, r.nnames, REGIONS_OUTSIDE)->leaked_bytes == 8);
	regions_report_finish(&r);
	world_finish(&w);
}

int main(void)
{
	test_tid_reuse();
	test_late();
	test_threads();
	test_limits();
	test_none();
	test_skip();
	return check_report("regions");
}
