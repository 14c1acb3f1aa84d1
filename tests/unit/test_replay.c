/* Unit test of replay: the live-block map and the counting rules of the
 * JSON report, fed with synthetic records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/heapmap.h"
#include "analyze/replay.h"
#include "analyze/series.h"
#include "analyze/stacks.h"
#include "format/reader.h"

#include "check.h"

struct world {
	struct stacks *st;
	struct series se;
	struct replay *rp;
};

static void world_init(struct world *w)
{
	w->st = stacks_create(0, 0);
	series_init(&w->se);
	w->rp = w->st ? replay_create(w->st) : NULL;
	if (!w->rp ||
	    replay_add_consumer(w->rp, &stacks_consumer, w->st) ||
	    replay_add_consumer(w->rp, &series_consumer, &w->se)) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	/* stacks 1..9: chains main(0x100) > f_i */
	CHECK(stacks_node(w->st, 1, 0, 0x100) == 0);
	for (uint64_t id = 2; id < 10; id++)
		CHECK(stacks_node(w->st, id, 1, 0x1000 + id) == 0);
}

static void world_finish(struct world *w)
{
	replay_destroy(w->rp);
	stacks_destroy(w->st);
	series_finish(&w->se);
}

static void event(struct world *w, unsigned kind, unsigned fn, uint64_t old,
		  uint64_t ptr, uint64_t size, uint64_t stack)
{
	struct hs_record r;
	memset(&r, 0, sizeof(r));
	r.tag = kind | fn;
	r.kind = kind;
	r.fn = fn;
	r.old_ptr = old;
	r.ptr = ptr;
	r.size = size;
	r.stack = stack;
	CHECK(replay_event(w->rp, &r) == 0);
}

#define MALLOC(w, p, n, s) event(w, HS_REC_ALLOC, HS_FN_MALLOC, 0, p, n, s)
#define FREE(w, p) event(w, HS_REC_FREE, HS_FN_FREE, 0, p, 0, 0)
#define REALLOC(w, o, p, n, s)                                              \
	event(w, HS_REC_REALLOC, HS_FN_REALLOC, o, p, n, s)

/* The growth entry of stack id after finishing `batches` marks. */
static struct stack_growth find(struct world *w, uint64_t id,
				uint32_t batches)
{
	struct stack_growth *g = NULL, out = { 0 };
	size_t n = 0;
	stacks_close(w->st, batches);
	CHECK(stacks_rank(w->st, 0, batches, 0, &g, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (g[i].id == id)
			out = g[i];
	stacks_growth_free(g, n);
	return out;
}

static void test_realloc_chain(void)
{
	struct world w;
	world_init(&w);
	MALLOC(&w, 0x1000, 10, 2);
	REALLOC(&w, 0x1000, 0x2000, 20, 3);  /* moved */
	REALLOC(&w, 0x2000, 0x2000, 40, 4);  /* in place */
	REALLOC(&w, 0x2000, 0x3000, 4000, 4);
	const struct replay_totals *t = &w.rp->t;
	CHECK(t->allocations == 1);
	CHECK(t->reallocs == 3);
	CHECK(t->frees == 0);
	CHECK(t->live_bytes == 4000);
	CHECK(t->live_blocks == 1);
	CHECK(t->peak_live_bytes == 4000);
	CHECK(t->allocated_bytes == 10 + 20 + 40 + 4000);
	CHECK(t->unmatched_frees == 0);
	CHECK(!replay_find(w.rp, 0x1000) && !replay_find(w.rp, 0x2000));
	const struct replay_block *b = replay_find(w.rp, 0x3000);
	CHECK(b && b->size == 4000);
	/* the block belongs to the stack of its last realloc */
	CHECK(find(&w, 4, 0).leaked_bytes == 4000);
	CHECK(find(&w, 2, 0).leaked_bytes == 0);
	CHECK(find(&w, 3, 0).leaked_blocks == 0);
	world_finish(&w);
}

static void test_realloc_zero_and_null(void)
{
	struct world w;
	world_init(&w);
	/* realloc(NULL, 64) is an allocation */
	event(&w, HS_REC_ALLOC, HS_FN_REALLOC, 0, 0x1000, 64, 2);
	/* realloc(p, 0) that freed p comes as a FREE with fn realloc */
	event(&w, HS_REC_FREE, HS_FN_REALLOC, 0, 0x1000, 0, 0);
	const struct replay_totals *t = &w.rp->t;
	CHECK(t->allocations == 1);
	CHECK(t->frees == 1);
	CHECK(t->reallocs == 0);
	CHECK(t->live_bytes == 0 && t->live_blocks == 0);
	/* a failed realloc leaves the old block live */
	MALLOC(&w, 0x2000, 100, 2);
	event(&w, HS_REC_FAIL, HS_FN_REALLOC, 0, 0, (uint64_t)1 << 62, 3);
	CHECK(t->failed_allocations == 1);
	CHECK(t->live_bytes == 100);
	/* failed mallocs are never live */
	event(&w, HS_REC_FAIL, HS_FN_MALLOC, 0, 0, 12345, 3);
	CHECK(t->failed_allocations == 2);
	CHECK(t->live_blocks == 1);
	/* free(NULL) does nothing */
	FREE(&w, 0);
	CHECK(t->frees == 1);
	CHECK(t->unmatched_frees == 0);
	/* a leaked malloc(0) is a leaked block of 0 bytes */
	MALLOC(&w, 0x3000, 0, 5);
	CHECK(t->live_blocks == 2);
	struct stack_growth g = find(&w, 5, 0);
	CHECK(g.leaked_blocks == 1 && g.leaked_bytes == 0);
	world_finish(&w);
}

static void test_unmatched(void)
{
	struct world w;
	world_init(&w);
	FREE(&w, 0xdead0);
	REALLOC(&w, 0xbeef0, 0x5000, 8, 2); /* old never seen */
	const struct replay_totals *t = &w.rp->t;
	CHECK(t->unmatched_frees == 2);
	CHECK(t->frees == 1);
	CHECK(t->reallocs == 1);
	CHECK(t->live_blocks == 1 && t->live_bytes == 8);
	/* double free: the second is unmatched */
	FREE(&w, 0x5000);
	FREE(&w, 0x5000);
	CHECK(t->unmatched_frees == 3);
	CHECK(t->live_blocks == 0);
	/* an allocation of a live address: counted, the newer block wins */
	MALLOC(&w, 0x6000, 10, 2);
	MALLOC(&w, 0x6000, 30, 3);
	CHECK(t->replaced_allocations == 1);
	CHECK(t->live_bytes == 30 && t->live_blocks == 1);
	CHECK(find(&w, 2, 0).leaked_bytes == 0);
	CHECK(find(&w, 3, 0).leaked_bytes == 30);
	/* stacks never defined count as the empty stack, no crash */
	MALLOC(&w, 0x7000, 1, 999999);
	CHECK(stacks_bad_refs(w.st) == 1);
	CHECK(find(&w, 0, 0).leaked_bytes == 1);
	world_finish(&w);
}

static void test_mmap_apart(void)
{
	struct world w;
	world_init(&w);
	event(&w, HS_REC_ALLOC, HS_FN_MMAP, 0, 0x7f0000000000, 1 << 20, 2);
	event(&w, HS_REC_REALLOC, HS_FN_MREMAP, 0x7f0000000000,
	      0x7f1000000000, 2 << 20, 2);
	event(&w, HS_REC_MUNMAP, 0, 0, 0x7f1000000000, 2 << 20, 0);
	const struct replay_totals *t = &w.rp->t;
	CHECK(t->allocations == 0 && t->reallocs == 0 && t->frees == 0);
	CHECK(t->live_bytes == 0 && t->allocated_bytes == 0);
	CHECK(t->mmaps == 2 && t->munmaps == 1);
	CHECK(t->unmatched_frees == 0);
	world_finish(&w);
}

static void test_thousand_leaks(void)
{
	struct world w;
	world_init(&w);
	for (uint64_t i = 0; i < 1000; i++)
		MALLOC(&w, 0x100000 + 16 * i, 1, 7);
	MALLOC(&w, 0x900000, 32u << 20, 8); /* a 32 MiB block */
	const struct replay_totals *t = &w.rp->t;
	CHECK(t->live_blocks == 1001);
	CHECK(t->live_bytes == 1000 + (32u << 20));
	struct stack_growth g = find(&w, 7, 0);
	CHECK(g.leaked_blocks == 1000 && g.leaked_bytes == 1000);
	CHECK(g.allocations == 1000);
	g = find(&w, 8, 0);
	CHECK(g.leaked_blocks == 1 && g.leaked_bytes == 32u << 20);
	world_finish(&w);
}

static void test_batches(void)
{
	struct world w;
	world_init(&w);
	struct hs_record smp;
	memset(&smp, 0, sizeof(smp));
	smp.kind = smp.tag = HS_REC_SAMPLE;
	for (uint32_t b = 0; b < 4; b++) {
		MALLOC(&w, 0x1000 + 64 * b, 100, 2);   /* kept */
		MALLOC(&w, 0x8000, 1000, 3);           /* temporary */
		FREE(&w, 0x8000);
		CHECK(replay_batch_end(w.rp, (b + 1) * 1000000ull, 1) == 0);
		smp.rss = 1000000 + b;
		smp.has_mallinfo = 1;
		smp.mi_fordblks = 50 + b;
		series_sample(&w.se, &smp);
	}
	MALLOC(&w, 0x9000, 5, 2); /* after the last mark: not a batch */
	CHECK(w.se.n == 4);
	for (uint32_t b = 0; b < 4 && w.se.n == 4; b++) {
		const struct batch *x = &w.se.v[b];
		CHECK(x->live_bytes == 100 * (b + 1));
		CHECK(x->peak_live_bytes == 100 * (b + 1) + 1000);
		CHECK(x->allocations == 2 && x->frees == 1);
		CHECK(x->allocated_bytes == 1100);
		CHECK(x->has_rss && x->rss_bytes == 1000000 + b);
		CHECK(x->has_heap_free && x->heap_free_bytes == 50 + b);
		CHECK(x->end_ns == (b + 1) * 1000000ull);
	}
	struct stack_growth g = find(&w, 2, 4);
	CHECK(g.bytes_per_batch > 99.999 && g.bytes_per_batch < 100.001);
	CHECK(g.r2 > 0.999999);
	CHECK(g.live_bytes_at_end == 400);
	CHECK(g.leaked_bytes == 405);
	g = find(&w, 3, 4);
	CHECK(g.bytes_per_batch == 0 && g.leaked_bytes == 0);
	world_finish(&w);
}

/* The map against a plain array, through many inserts and erases (the
 * backward-shift deletion must keep every probe run intact). */
static void test_map_random(void)
{
	enum { SLOTS = 5000, STEPS = 400000 };
	static uint64_t size_of[SLOTS];
	struct world w;
	world_init(&w);
	uint64_t x = 88172645463325252ull, live = 0;
	for (int i = 0; i < STEPS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t slot = x % SLOTS;
		/* addresses that collide in their low bits on purpose */
		uint64_t addr = 0x10000 + slot * 4096;
		if (size_of[slot]) {
			FREE(&w, addr);
			live -= size_of[slot];
			size_of[slot] = 0;
		} else {
			size_of[slot] = 1 + (x >> 40) % 1000;
			MALLOC(&w, addr, size_of[slot], 2 + slot % 8);
			live += size_of[slot];
		}
	}
	CHECK(w.rp->t.live_bytes == live);
	CHECK(w.rp->t.unmatched_frees == 0);
	CHECK(w.rp->t.replaced_allocations == 0);
	for (uint64_t s = 0; s < SLOTS; s++) {
		const struct replay_block *b =
			replay_find(w.rp, 0x10000 + s * 4096);
		CHECK(size_of[s] ? b && b->size == size_of[s] : !b);
	}
	world_finish(&w);
}

/* The analyzer's own consumers are called directly; as plain consumers
 * (copies, which the replay does not know) they must end the same. */
static void test_direct_and_generic(void)
{
	enum { PAGE = 4096, BATCHES = 6, STEPS = 20000 };
	const uint64_t heap = 0x555555554000ull;
	struct replay_consumer stacks_plain = stacks_consumer;
	struct replay_consumer heap_plain = heapmap_consumer;
	const struct replay_consumer *use[2][2] = {
		{ &stacks_consumer, &heapmap_consumer },
		{ &stacks_plain, &heap_plain },
	};
	struct stacks *st[2];
	struct heapmap *hm[2];
	struct series se[2];
	struct replay *rp[2];
	for (int k = 0; k < 2; k++) {
		st[k] = stacks_create(0, 0);
		hm[k] = heapmap_create(PAGE, heap, 1);
		series_init(&se[k]);
		se[k].heap = hm[k];
		rp[k] = st[k] && hm[k] ? replay_create(st[k]) : NULL;
		if (!rp[k] || replay_add_consumer(rp[k], use[k][0], st[k]) ||
		    replay_add_consumer(rp[k], use[k][1], hm[k]) ||
		    replay_add_consumer(rp[k], &series_consumer, &se[k])) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		CHECK(stacks_node(st[k], 1, 0, 0x100) == 0);
		for (uint64_t id = 2; id < 10; id++)
			CHECK(stacks_node(st[k], id, 1, 0x1000 + id) == 0);
	}
	CHECK(rp[0]->direct_stacks && rp[0]->direct_heap);
	CHECK(!rp[1]->direct_stacks && !rp[1]->direct_heap);
	uint64_t x = 2463534242ull;
	for (int i = 0; i < STEPS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* few addresses: frees, reallocs and replaced blocks hit */
		uint64_t addr = heap + 0x40 * (x % 512), old = 0;
		struct hs_event e = { .ptr = addr,
				      .size = 16 + (x >> 20) % 9000,
				      .stack = 2 + (x >> 40) % 8,
				      .kind = HS_REC_ALLOC,
				      .fn = HS_FN_MALLOC };
		if ((x >> 50) % 3 == 0) {
			e.kind = HS_REC_FREE;
			e.fn = HS_FN_FREE;
		} else if ((x >> 50) % 3 == 1) {
			old = heap + 0x40 * ((x >> 30) % 512);
			e.kind = HS_REC_REALLOC;
			e.fn = HS_FN_REALLOC;
			e.old_ptr = old;
		}
		for (int k = 0; k < 2; k++) {
			CHECK(replay_events(rp[k], &e, 1) == 0);
			if ((i + 1) % (STEPS / BATCHES) == 0)
				CHECK(replay_batch_end(rp[k], i, 1) == 0);
		}
	}
	struct heapmap_state hs[2];
	const struct heapmap_pin *pins[2];
	size_t npins[2];
	struct stack_growth *g[2];
	size_t ng[2];
	for (int k = 0; k < 2; k++) {
		heapmap_state(hm[k], &hs[k]);
		heapmap_last_pins(hm[k], &pins[k], &npins[k]);
		stacks_close(st[k], rp[k]->batch);
		CHECK(stacks_rank(st[k], 0, rp[k]->batch, 0, &g[k], &ng[k]) ==
		      0);
	}
	CHECK(!memcmp(&hs[0], &hs[1], sizeof(hs[0])));
	CHECK(hs[0].footprint > 0 && rp[0]->t.replaced_allocations > 0);
	CHECK(npins[0] == npins[1]);
	for (size_t i = 0; i < npins[0] && i < npins[1]; i++)
		CHECK(pins[0][i].slot == pins[1][i].slot &&
		      pins[0][i].pinned_bytes == pins[1][i].pinned_bytes &&
		      pins[0][i].blocks == pins[1][i].blocks);
	CHECK(ng[0] == ng[1] && ng[0] == 8);
	for (size_t i = 0; i < ng[0] && i < ng[1]; i++) {
		CHECK(g[0][i].id == g[1][i].id);
		CHECK(g[0][i].bytes_per_batch == g[1][i].bytes_per_batch);
		CHECK(g[0][i].leaked_bytes == g[1][i].leaked_bytes);
		CHECK(g[0][i].allocations == g[1][i].allocations);
	}
	CHECK(se[0].n == se[1].n && se[0].n == BATCHES);
	for (size_t i = 0; i < se[0].n && i < se[1].n; i++) {
		const struct batch *a = &se[0].v[i], *b = &se[1].v[i];
		CHECK(a->live_bytes == b->live_bytes &&
		      a->peak_live_bytes == b->peak_live_bytes &&
		      a->allocations == b->allocations &&
		      a->frees == b->frees &&
		      a->allocated_bytes == b->allocated_bytes);
		CHECK(a->has_shape && b->has_shape &&
		      a->footprint_bytes == b->footprint_bytes &&
		      a->holes_bytes == b->holes_bytes &&
		      a->span_bytes == b->span_bytes);
	}
	for (int k = 0; k < 2; k++) {
		stacks_growth_free(g[k], ng[k]);
		replay_destroy(rp[k]);
		heapmap_destroy(hm[k]);
		stacks_destroy(st[k]);
		series_finish(&se[k]);
	}
}

int main(void)
{
	test_realloc_chain();
	test_realloc_zero_and_null();
	test_unmatched();
	test_mmap_apart();
	test_thousand_leaks();
	test_batches();
	test_map_random();
	test_direct_and_generic();
	return check_report("replay");
}
