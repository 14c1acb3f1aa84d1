#include "stacks.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/error.h"
#include "replay.h"
#include "symbols.h"

/* Ids come from the recorder's counter, 1, 2, 3...: a node's id is at
 * most a little past the number of nodes defined before it (threads'
 * records may arrive out of order); anything further is corruption.
 * Bounding by the count of records, not by the table's size, keeps the
 * table proportional to the trace's stacks: else each record could
 * double it. */
#define ID_SLACK (1u << 16)
#define NO_SLOT UINT32_MAX

struct node {
	uint64_t ip;
	uint32_t parent;
	uint32_t slot; /* NO_SLOT until an event uses this stack */
};

/* A joint (stacks_join): the native node it copies, as its own node. */
struct joint {
	struct node node;
	uint32_t native;
};

struct slot {
	struct stacks_acc acc;
	uint64_t id;
	uint32_t site; /* with grouping: index into sites */
};

struct site {
	struct stacks_acc acc;
	uint64_t ip;
};

struct stacks {
	struct node *nodes;
	size_t nnodes; /* ids [0, nnodes) are addressable */
	struct joint *joined; /* ids STACKS_JOINED + [0, njoined) */
	size_t njoined, joined_cap;
	uint64_t defined; /* HS_REC_STACK records seen */
	struct slot *slots;
	size_t nslots, slots_cap;
	uint32_t from;
	uint64_t bad_refs;
	int by_site;
	struct site *sites;
	size_t nsites, sites_cap;
	uint32_t *site_index; /* open addressing over ip, NO_SLOT = empty */
	size_t site_mask;
	stacks_skip_fn skip;
	void *skip_ctx;
	stacks_site_fn site_key;
	void *site_key_ctx;
	int exited; /* stacks_exiting was called: at_exit holds */
};

void stacks_set_site_key(struct stacks *s, stacks_site_fn key, void *ctx)
{
	s->site_key = key;
	s->site_key_ctx = ctx;
}

void stacks_set_site_filter(struct stacks *s, stacks_skip_fn skip,
			    void *ctx)
{
	s->skip = skip;
	s->skip_ctx = ctx;
}

/* Node id, a recorded one or a joined one (stacks_join); NULL if there
 * is none. */
static inline struct node *node_at(const struct stacks *s, uint64_t id)
{
	if (id < s->nnodes)
		return &s->nodes[id];
	if (id - STACKS_JOINED < s->njoined)
		return &s->joined[id - STACKS_JOINED].node;
	return NULL;
}

/* The innermost ip of stack id that the filter keeps. */
static uint64_t site_ip(const struct stacks *s, uint64_t id)
{
	const struct node *nd = id ? node_at(s, id) : NULL;
	uint64_t first = nd ? nd->ip : 0;
	for (size_t depth = 0; id && (nd = node_at(s, id)) && depth < 1024;
	     depth++) {
		if (!s->skip || !s->skip(s->skip_ctx, nd->ip))
			return nd->ip;
		id = nd->parent;
	}
	return first;
}

/* Room for one more element in *v (of n, with *cap allocated). */
static int reserve(void *v, size_t *cap, size_t n, size_t size)
{
	return bigmem_room((void **)v, cap, n, size, 64);
}

struct stacks *stacks_create(uint32_t from, int group_by_site)
{
	struct stacks *s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	s->from = from;
	s->by_site = group_by_site;
	s->nodes = calloc(1, sizeof(*s->nodes));
	if (!s->nodes)
		goto oom;
	s->nodes[0].slot = NO_SLOT; /* id 0: the empty stack */
	s->nnodes = 1;
	return s;
oom:
	stacks_destroy(s);
	hs_error("out of memory");
	return NULL;
}

void stacks_destroy(struct stacks *s)
{
	if (!s)
		return;
	bigmem_free(s->nodes, s->nnodes * sizeof(*s->nodes));
	bigmem_free(s->joined, s->joined_cap * sizeof(*s->joined));
	bigmem_free(s->slots, s->slots_cap * sizeof(*s->slots));
	bigmem_free(s->sites, s->sites_cap * sizeof(*s->sites));
	free(s->site_index);
	free(s);
}

int stacks_node(struct stacks *s, uint64_t id, uint64_t parent, uint64_t ip)
{
	if (id == 0 || id >= UINT32_MAX || id > s->defined + ID_SLACK)
		return hs_error("corrupt trace: stack id %llu out of sequence",
				(unsigned long long)id);
	s->defined++;
	if (parent >= s->nnodes)
		parent = 0; /* a parent never defined: cut the stack there */
	if (id >= s->nnodes) {
		size_t n = s->nnodes, cap = n;
		while (cap <= id)
			cap *= 2;
		struct node *v = bigmem_realloc(s->nodes, n * sizeof(*v),
						cap * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		for (size_t i = n; i < cap; i++)
			v[i] = (struct node){ 0, 0, NO_SLOT };
		s->nodes = v;
		s->nnodes = cap;
	}
	/* a redefinition keeps the slot: its events stay with it */
	s->nodes[id].ip = ip;
	s->nodes[id].parent = (uint32_t)parent;
	return 0;
}

int stacks_join(struct stacks *s, uint64_t id, uint64_t native)
{
	const struct node *of = node_at(s, native);
	if (!native || !of || native >= STACKS_JOINED)
		return 1; /* never defined (a corrupt trace): not joined */
	if (id != STACKS_JOINED + s->njoined)
		return hs_error("stack %llu cannot be joined as %llu",
				(unsigned long long)native,
				(unsigned long long)id);
	if (reserve(&s->joined, &s->joined_cap, s->njoined,
		    sizeof(*s->joined)))
		return hs_error("out of memory");
	s->joined[s->njoined++] = (struct joint){
		{ of->ip, of->parent, NO_SLOT }, (uint32_t)native };
	return 0;
}

uint64_t stacks_native(const struct stacks *s, uint64_t id)
{
	return id - STACKS_JOINED < s->njoined
		       ? s->joined[id - STACKS_JOINED].native
		       : id;
}

static uint32_t site_of(struct stacks *s, uint64_t ip)
{
	if ((s->nsites + 1) * 2 > s->site_mask + 1 || !s->site_index) {
		size_t cap = s->site_index ? (s->site_mask + 1) * 2 : 64;
		uint32_t *t = malloc(cap * sizeof(*t));
		if (!t)
			return NO_SLOT;
		memset(t, 0xff, cap * sizeof(*t));
		for (size_t i = 0; i < s->nsites; i++) {
			size_t h = (s->sites[i].ip * 0x9e3779b97f4a7c15ull >>
				    20) & (cap - 1);
			while (t[h] != NO_SLOT)
				h = (h + 1) & (cap - 1);
			t[h] = (uint32_t)i;
		}
		free(s->site_index);
		s->site_index = t;
		s->site_mask = cap - 1;
	}
	size_t h = (ip * 0x9e3779b97f4a7c15ull >> 20) & s->site_mask;
	while (s->site_index[h] != NO_SLOT) {
		if (s->sites[s->site_index[h]].ip == ip)
			return s->site_index[h];
		h = (h + 1) & s->site_mask;
	}
	if (reserve(&s->sites, &s->sites_cap, s->nsites, sizeof(*s->sites)))
		return NO_SLOT;
	memset(&s->sites[s->nsites], 0, sizeof(s->sites[0]));
	s->sites[s->nsites].ip = ip;
	s->site_index[h] = (uint32_t)s->nsites;
	return (uint32_t)s->nsites++;
}

uint32_t stacks_ref(struct stacks *s, uint64_t id)
{
	struct node *nd = node_at(s, id);
	if (!nd) {
		s->bad_refs++;
		id = 0;
		nd = &s->nodes[0];
	}
	if (nd->slot != NO_SLOT)
		return nd->slot;
	if (reserve(&s->slots, &s->slots_cap, s->nslots, sizeof(*s->slots)))
		return NO_SLOT;
	struct slot *sl = &s->slots[s->nslots];
	memset(sl, 0, sizeof(*sl));
	sl->id = id;
	if (s->by_site) {
		uint64_t key = s->site_key ? s->site_key(s->site_key_ctx, id)
					   : 0;
		sl->site = site_of(s, key ? key : site_ip(s, id));
		if (sl->site == NO_SLOT)
			return NO_SLOT;
	}
	nd->slot = (uint32_t)s->nslots;
	return (uint32_t)s->nslots++;
}

void stacks_exiting(struct stacks *s)
{
	if (s->exited)
		return;
	s->exited = 1;
	for (size_t i = 0; i < s->nslots; i++)
		s->slots[i].acc.at_exit = s->slots[i].acc.live;
	for (size_t i = 0; i < s->nsites; i++)
		s->sites[i].acc.at_exit = s->sites[i].acc.live;
}

/* Adds the marks [since, b) at which a's value was a->live to the sums. */
static void flush(struct stacks_acc *a, uint32_t b, uint32_t from)
{
	if (a->since >= b)
		return;
	uint64_t v = a->live;
	for (uint32_t k = a->since; k < b && k < STACKS_FIRST_MAX; k++)
		a->first[k] = v;
	uint32_t lo = a->since > from ? a->since : from;
	if (v && lo < b) {
		stacks_u128 cnt = b - lo;
		stacks_u128 ks = ((stacks_u128)lo + b - 1) * cnt / 2;
		a->sy += (stacks_u128)v * cnt;
		a->sxy += (stacks_u128)v * ks;
		a->syy += (stacks_u128)v * v * cnt;
	}
	a->at_mark = v;
	a->since = b;
}

static inline void add(struct stacks *s, uint32_t ref, uint64_t size,
		       uint32_t batch, int is_alloc)
{
	struct slot *sl = &s->slots[ref];
	flush(&sl->acc, batch, s->from);
	sl->acc.live += size;
	sl->acc.blocks++;
	sl->acc.allocations += is_alloc != 0;
	if (s->by_site) {
		struct stacks_acc *a = &s->sites[sl->site].acc;
		flush(a, batch, s->from);
		a->live += size;
		a->blocks++;
		a->allocations += is_alloc != 0;
	}
}

static inline void sub(struct stacks *s, uint32_t ref, uint64_t size,
		       uint32_t batch)
{
	struct slot *sl = &s->slots[ref];
	flush(&sl->acc, batch, s->from);
	sl->acc.live -= size;
	sl->acc.blocks--;
	if (s->by_site) {
		struct stacks_acc *a = &s->sites[sl->site].acc;
		flush(a, batch, s->from);
		a->live -= size;
		a->blocks--;
	}
}

void stacks_add(struct stacks *s, uint32_t ref, uint64_t size,
		uint32_t batch, int is_alloc)
{
	add(s, ref, size, batch, is_alloc);
}

void stacks_sub(struct stacks *s, uint32_t ref, uint64_t size,
		uint32_t batch)
{
	sub(s, ref, size, batch);
}

static int block_add(void *ctx, const struct replay_block *b,
		     enum replay_cause why)
{
	add(ctx, b->slot, b->size, b->batch, why == REPLAY_ALLOCATED);
	return 0;
}

static void block_drop(void *ctx, const struct replay_block *b,
		       uint32_t batch, enum replay_cause why)
{
	(void)why;
	sub(ctx, b->slot, b->size, batch);
}

const struct replay_consumer stacks_consumer = {
	.block_add = block_add,
	.block_drop = block_drop,
};

void stacks_close(struct stacks *s, uint32_t batches)
{
	for (size_t i = 0; i < s->nslots; i++)
		flush(&s->slots[i].acc, batches, s->from);
	for (size_t i = 0; i < s->nsites; i++)
		flush(&s->sites[i].acc, batches, s->from);
}

uint64_t stacks_bad_refs(const struct stacks *s)
{
	return s->bad_refs;
}

size_t stacks_count(const struct stacks *s)
{
	return s->nslots;
}

int stacks_fit(const struct stacks *s, const struct stacks_acc *a,
	       uint32_t warmup, uint32_t batches, struct regress *out)
{
	stacks_u128 sy = a->sy, sxy = a->sxy, syy = a->syy;
	/* the sums start at `from`; a later warm-up, decided after the
	 * trace was read, can only drop the first STACKS_FIRST_MAX marks */
	if (warmup < s->from)
		warmup = s->from;
	else if (warmup > s->from && warmup > STACKS_FIRST_MAX)
		warmup = s->from > STACKS_FIRST_MAX ? s->from
						    : STACKS_FIRST_MAX;
	for (uint32_t k = s->from; k < warmup && k < batches; k++) {
		stacks_u128 y = a->first[k];
		sy -= y;
		sxy -= y * k;
		syy -= y * y;
	}
	size_t n = batches > warmup ? batches - warmup : 0;
	struct regress_sums r = {
		.n = (long double)n,
		.sy = (long double)sy,
		.sxy = (long double)sxy,
		.syy = (long double)syy,
	};
	regress_x_sums(warmup, n, &r.sx, &r.sxx);
	return regress_from_sums(&r, out);
}

static void fill(const struct stacks *s, const struct stacks_acc *a,
		 uint32_t warmup, uint32_t batches, struct stack_growth *g)
{
	struct regress fit;
	stacks_fit(s, a, warmup, batches, &fit);
	g->bytes_per_batch = fit.slope;
	g->r2 = fit.r2;
	g->live_bytes_at_end = a->at_mark;
	g->leaked_bytes = a->live;
	g->live_at_exit = s->exited ? a->at_exit : a->live;
	g->leaked_blocks = a->blocks;
	g->allocations = a->allocations;
}

static int by_growth(const void *pa, const void *pb)
{
	const struct stack_growth *a = pa, *b = pb;
	if (a->bytes_per_batch != b->bytes_per_batch)
		return a->bytes_per_batch < b->bytes_per_batch ? 1 : -1;
	if (a->leaked_bytes != b->leaked_bytes)
		return a->leaked_bytes < b->leaked_bytes ? 1 : -1;
	if (a->live_bytes_at_end != b->live_bytes_at_end)
		return a->live_bytes_at_end < b->live_bytes_at_end ? 1 : -1;
	return a->id < b->id ? -1 : a->id > b->id;
}

void stacks_acc_add(const struct stacks *s, struct stacks_acc *a,
		    uint64_t size, uint32_t batch, int is_alloc)
{
	flush(a, batch, s->from);
	a->live += size;
	a->blocks++;
	a->allocations += is_alloc != 0;
}

void stacks_acc_sub(const struct stacks *s, struct stacks_acc *a,
		    uint64_t size, uint32_t batch)
{
	flush(a, batch, s->from);
	a->live -= size;
	a->blocks--;
}

void stacks_acc_growth(const struct stacks *s, struct stacks_acc *a,
		       uint32_t warmup, uint32_t batches, uint32_t slot,
		       struct stack_growth *g)
{
	flush(a, batches, s->from);
	memset(g, 0, sizeof(*g));
	g->id = s->slots[slot].id;
	g->site_ip = g->id ? node_at(s, g->id)->ip : 0;
	fill(s, a, warmup, batches, g);
	g->live_at_exit = g->leaked_bytes; /* not kept for these */
}

int stacks_growth_cmp(const void *a, const void *b)
{
	return by_growth(a, b);
}

static int rank_stacks(const struct stacks *s, uint32_t warmup,
		       uint32_t batches, struct stack_growth **out, size_t *n)
{
	struct stack_growth *g = calloc(s->nslots ? s->nslots : 1, sizeof(*g));
	if (!g)
		return hs_error("out of memory");
	for (size_t i = 0; i < s->nslots; i++) {
		g[i].id = s->slots[i].id;
		g[i].site_ip = s->by_site ? s->sites[s->slots[i].site].ip
				: g[i].id ? node_at(s, g[i].id)->ip : 0;
		fill(s, &s->slots[i].acc, warmup, batches, &g[i]);
	}
	qsort(g, s->nslots, sizeof(*g), by_growth);
	*out = g;
	*n = s->nslots;
	return 0;
}

static int rank_sites(const struct stacks *s, uint32_t warmup,
		      uint32_t batches, struct stack_growth **out, size_t *n)
{
	struct stack_growth *all = NULL, *g = NULL;
	size_t nall = 0;
	size_t *count = NULL, *at = NULL;
	if (rank_stacks(s, warmup, batches, &all, &nall))
		return -1;
	g = calloc(s->nsites ? s->nsites : 1, sizeof(*g));
	count = calloc(s->nsites + 1, sizeof(*count));
	at = calloc(s->nsites + 1, sizeof(*at));
	if (!g || !count || !at)
		goto oom;
	for (size_t i = 0; i < nall; i++)
		count[s->slots[node_at(s, all[i].id)->slot].site]++;
	for (size_t i = 0; i < s->nsites; i++) {
		g[i].site_ip = s->sites[i].ip;
		fill(s, &s->sites[i].acc, warmup, batches, &g[i]);
		g[i].paths = calloc(count[i] ? count[i] : 1, sizeof(*g->paths));
		if (!g[i].paths)
			goto oom;
	}
	/* the stacks arrive ranked, so each site's paths are ranked too */
	for (size_t i = 0; i < nall; i++) {
		size_t site = s->slots[node_at(s, all[i].id)->slot].site;
		g[site].paths[at[site]++] = all[i];
		g[site].npaths++;
	}
	free(all);
	free(count);
	free(at);
	/* a site's id: its top path's, so callers can show its frames */
	for (size_t i = 0; i < s->nsites; i++)
		if (g[i].npaths)
			g[i].id = g[i].paths[0].id;
	qsort(g, s->nsites, sizeof(*g), by_growth);
	*out = g;
	*n = s->nsites;
	return 0;
oom:
	free(all);
	stacks_growth_free(g, s->nsites);
	free(count);
	free(at);
	return hs_error("out of memory");
}

int stacks_rank(const struct stacks *s, uint32_t warmup, uint32_t batches,
		int by_site, struct stack_growth **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (by_site && s->by_site)
		return rank_sites(s, warmup, batches, out, n);
	return rank_stacks(s, warmup, batches, out, n);
}

void stacks_growth_free(struct stack_growth *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		stacks_growth_free(g[i].paths, g[i].npaths);
		symbols_frames_free(g[i].frames, g[i].nframes);
	}
	free(g);
}

uint64_t stacks_slot_id(const struct stacks *s, uint32_t slot)
{
	return slot < s->nslots ? s->slots[slot].id : 0;
}

size_t stacks_ips(const struct stacks *s, uint64_t id, uint64_t *ips,
		  size_t max)
{
	size_t n = 0;
	/* parents always have smaller ids in a sane trace; the bound also
	 * ends a cycle in a corrupt one */
	const struct node *nd;
	while (id && (nd = node_at(s, id)) && n < max) {
		ips[n++] = nd->ip;
		id = nd->parent;
	}
	return n;
}

size_t stacks_ids(const struct stacks *s, uint64_t id, uint64_t *ids,
		  size_t max)
{
	size_t n = 0;
	const struct node *nd;
	while (id && (nd = node_at(s, id)) && n < max) {
		ids[n++] = id;
		id = nd->parent;
	}
	return n;
}
