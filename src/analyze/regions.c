#include "regions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "format/reader.h"
#include "regress.h"
#include "replay.h"
#include "series.h"
#include "stacks.h"

/* Region name ids come from the recorder: 1 .. 4096 */
#define NAMES_MAX 65536
#define NAME_KEY 0x80000000u /* an accumulator's key: a name, not a path */

struct path {
	uint32_t parent, name, depth;
	uint64_t live, blocks, allocations;
	uint64_t allocated, batch_start; /* bytes: all along, at batch start */
	uint64_t *live_at, *alloc_in;    /* per batch, from `first` on */
	size_t first;                    /* batches closed before it */
};

/* A thread's innermost region path; extra: begins folded into it */
struct thread {
	uint64_t tid;
	uint32_t path, extra;
	int used;
};

/* A live block allocated inside a region, and its stack's accumulator
 * there (an index into accs) */
struct tag {
	uint64_t addr; /* 0: empty */
	uint32_t path, acc;
};

/* A stack's bytes inside a path (key) or a name (NAME_KEY | name); a
 * path's has its name's (name_acc) */
struct acc {
	uint32_t key, slot, name_acc;
	struct stacks_acc acc;
};
#define NO_ACC UINT32_MAX

struct regions {
	struct replay *replay;
	struct stacks *stacks;
	int active; /* a region record was seen: the consumer follows */
	char **names;
	size_t nnames;
	struct path *paths; /* [0]: outside any region */
	size_t npaths;
	/* open addressing over (parent, name): path id, 0 empty */
	uint16_t path_index[2 * REGIONS_PATHS_MAX];
	struct thread *threads;
	size_t nthreads, thread_mask;
	uint64_t tid;           /* the current thread */
	uint32_t path, extra;   /* ... and its regions */
	struct tag *tags;
	size_t ntags, tag_mask;
	struct acc *accs;     /* in the order made: indexes stay */
	size_t naccs, accs_cap;
	uint32_t *acc_index;  /* open addressing: index + 1, 0 empty */
	size_t acc_mask;
	uint32_t last_acc;    /* the latest block's, often the next's */
	size_t batches; /* batch ends seen */
	uint64_t unmatched, folded;
	uint64_t left_open; /* by threads whose id another one took */
};

static size_t hash64(uint64_t v)
{
	return (size_t)(v * 0x9e3779b97f4a7c15ull >> 20);
}

/* ---- open addressing tables, at most half full ---- */

static int threads_grow(struct regions *g)
{
	size_t cap = g->threads ? (g->thread_mask + 1) * 2 : 64;
	struct thread *t = calloc(cap, sizeof(*t));
	if (!t)
		return hs_error("out of memory");
	for (size_t i = 0; g->threads && i <= g->thread_mask; i++) {
		if (!g->threads[i].used)
			continue;
		size_t h = hash64(g->threads[i].tid) & (cap - 1);
		while (t[h].used)
			h = (h + 1) & (cap - 1);
		t[h] = g->threads[i];
	}
	free(g->threads);
	g->threads = t;
	g->thread_mask = cap - 1;
	return 0;
}

static struct thread *thread_of(struct regions *g, uint64_t tid)
{
	if ((g->nthreads + 1) * 2 > g->thread_mask + 1 || !g->threads)
		if (threads_grow(g))
			return NULL;
	size_t h = hash64(tid) & g->thread_mask;
	while (g->threads[h].used && g->threads[h].tid != tid)
		h = (h + 1) & g->thread_mask;
	struct thread *t = &g->threads[h];
	if (!t->used) {
		*t = (struct thread){ .tid = tid, .used = 1 };
		g->nthreads++;
	}
	return t;
}

static size_t tag_hash(uint64_t addr, size_t mask)
{
	return hash64(addr >> 4) & mask;
}

static int tags_grow(struct regions *g)
{
	size_t cap = g->tags ? (g->tag_mask + 1) * 2 : 1024;
	struct tag *t = calloc(cap, sizeof(*t));
	if (!t)
		return hs_error("out of memory");
	for (size_t i = 0; g->tags && i <= g->tag_mask; i++) {
		if (!g->tags[i].addr)
			continue;
		size_t h = tag_hash(g->tags[i].addr, cap - 1);
		while (t[h].addr)
			h = (h + 1) & (cap - 1);
		t[h] = g->tags[i];
	}
	free(g->tags);
	g->tags = t;
	g->tag_mask = cap - 1;
	return 0;
}

static int tag_put(struct regions *g, uint64_t addr, uint32_t path,
		   uint32_t acc)
{
	if ((g->ntags + 1) * 2 > g->tag_mask + 1 || !g->tags)
		if (tags_grow(g))
			return -1;
	size_t h = tag_hash(addr, g->tag_mask);
	while (g->tags[h].addr && g->tags[h].addr != addr)
		h = (h + 1) & g->tag_mask;
	g->ntags += !g->tags[h].addr;
	g->tags[h] = (struct tag){ addr, path, acc };
	return 0;
}

/* The tag of the block at addr, which goes; path 0: none (outside). */
static struct tag tag_take(struct regions *g, uint64_t addr)
{
	size_t h = tag_hash(addr, g->tag_mask), m = g->tag_mask;
	while (g->tags[h].addr != addr) {
		if (!g->tags[h].addr)
			return (struct tag){ 0, 0, 0 };
		h = (h + 1) & m;
	}
	struct tag tag = g->tags[h];
	/* shift the rest of the probe run back over the hole */
	for (size_t j = (h + 1) & m; g->tags[j].addr; j = (j + 1) & m) {
		size_t home = tag_hash(g->tags[j].addr, m);
		if (((j - home) & m) >= ((j - h) & m)) {
			g->tags[h] = g->tags[j];
			h = j;
		}
	}
	g->tags[h].addr = 0;
	g->ntags--;
	return tag;
}

static size_t acc_hash(uint32_t key, uint32_t slot, size_t mask)
{
	return hash64((uint64_t)key << 32 | slot) & mask;
}

static int acc_index_grow(struct regions *g)
{
	size_t cap = g->acc_index ? (g->acc_mask + 1) * 2 : 256;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return hs_error("out of memory");
	for (size_t i = 0; i < g->naccs; i++) {
		size_t h = acc_hash(g->accs[i].key, g->accs[i].slot, cap - 1);
		while (t[h])
			h = (h + 1) & (cap - 1);
		t[h] = (uint32_t)i + 1;
	}
	free(g->acc_index);
	g->acc_index = t;
	g->acc_mask = cap - 1;
	return 0;
}

/* The accumulator of slot's stack in key, made on first use (a path's
 * with its name's); NO_ACC when out of memory. */
static uint32_t acc_of(struct regions *g, uint32_t key, uint32_t slot)
{
	if ((g->naccs + 1) * 2 > g->acc_mask + 1 || !g->acc_index)
		if (acc_index_grow(g))
			return NO_ACC;
	size_t h = acc_hash(key, slot, g->acc_mask);
	for (uint32_t i; (i = g->acc_index[h]); h = (h + 1) & g->acc_mask)
		if (g->accs[i - 1].key == key && g->accs[i - 1].slot == slot)
			return i - 1;
	uint32_t name_acc = NO_ACC;
	if (!(key & NAME_KEY)) {
		name_acc = acc_of(g, NAME_KEY | g->paths[key].name, slot);
		if (name_acc == NO_ACC)
			return NO_ACC;
		/* that one may have grown the index */
		h = acc_hash(key, slot, g->acc_mask);
		while (g->acc_index[h])
			h = (h + 1) & g->acc_mask;
	}
	if (g->naccs == g->accs_cap) {
		size_t cap = g->accs_cap ? g->accs_cap * 2 : 64;
		struct acc *v = realloc(g->accs, cap * sizeof(*v));
		if (!v) {
			hs_error("out of memory");
			return NO_ACC;
		}
		g->accs = v;
		g->accs_cap = cap;
	}
	struct acc *a = &g->accs[g->naccs];
	memset(a, 0, sizeof(*a));
	a->key = key;
	a->slot = slot;
	a->name_acc = name_acc;
	g->acc_index[h] = (uint32_t)++g->naccs;
	return (uint32_t)g->naccs - 1;
}

/* ---- the replay's consumer ---- */

static int block_add(void *ctx, const struct replay_block *b,
		     enum replay_cause why)
{
	struct regions *g = ctx;
	if (!g->path)
		return 0;
	struct path *p = &g->paths[g->path];
	int is_alloc = why == REPLAY_ALLOCATED;
	p->live += b->size;
	p->blocks++;
	p->allocated += b->size;
	p->allocations += is_alloc;
	uint32_t i = g->last_acc;
	if (i >= g->naccs || g->accs[i].key != g->path ||
	    g->accs[i].slot != b->slot)
		i = g->last_acc = acc_of(g, g->path, b->slot);
	if (i == NO_ACC || tag_put(g, b->addr, g->path, i))
		return hs_error("out of memory");
	struct acc *a = &g->accs[i];
	stacks_acc_add(g->stacks, &a->acc, b->size, b->batch, is_alloc);
	stacks_acc_add(g->stacks, &g->accs[a->name_acc].acc, b->size,
		       b->batch, is_alloc);
	return 0;
}

static void block_drop(void *ctx, const struct replay_block *b,
		       uint32_t batch, enum replay_cause why)
{
	struct regions *g = ctx;
	(void)why;
	if (!g->ntags)
		return;
	struct tag t = tag_take(g, b->addr);
	if (!t.path)
		return;
	struct path *p = &g->paths[t.path];
	p->live -= b->size;
	p->blocks--;
	struct acc *a = &g->accs[t.acc];
	stacks_acc_sub(g->stacks, &a->acc, b->size, batch);
	stacks_acc_sub(g->stacks, &g->accs[a->name_acc].acc, b->size, batch);
}

/* Appends v at batch k of a path's series (zeros before its first). */
static int series_put(uint64_t **v, size_t first, size_t k, uint64_t x)
{
	size_t n = k - first;
	if (!(n & (n - 1)) || !*v) { /* 0, 1, 2, 4...: double */
		uint64_t *nv = realloc(*v, (n ? n * 2 : 1) * sizeof(*nv));
		if (!nv)
			return hs_error("out of memory");
		*v = nv;
	}
	(*v)[n] = x;
	return 0;
}

static int batch_end(void *ctx, const struct replay *r,
		     const struct replay_batch *b)
{
	struct regions *g = ctx;
	(void)r;
	(void)b;
	for (size_t i = 1; i < g->npaths; i++) {
		struct path *p = &g->paths[i];
		if (series_put(&p->live_at, p->first, g->batches, p->live) ||
		    series_put(&p->alloc_in, p->first, g->batches,
			       p->allocated - p->batch_start))
			return -1;
		p->batch_start = p->allocated;
	}
	g->batches++;
	return 0;
}

static const struct replay_consumer consumer = {
	.block_add = block_add,
	.block_drop = block_drop,
	.batch_end = batch_end,
};

void regions_batch_skip(struct regions *g)
{
	for (size_t i = 1; g && i < g->npaths; i++)
		g->paths[i].batch_start = g->paths[i].allocated;
}

struct regions *regions_create(struct replay *r, struct stacks *s)
{
	struct regions *g = calloc(1, sizeof(*g));
	if (!g) {
		hs_error("out of memory");
		return NULL;
	}
	g->replay = r;
	g->stacks = s;
	return g;
}

void regions_destroy(struct regions *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nnames; i++)
		free(g->names[i]);
	free(g->names);
	for (size_t i = 0; i < g->npaths; i++) {
		free(g->paths[i].live_at);
		free(g->paths[i].alloc_in);
	}
	free(g->paths);
	free(g->threads);
	free(g->tags);
	free(g->accs);
	free(g->acc_index);
	free(g);
}

/* ---- the region records ---- */

static int activate(struct regions *g)
{
	if (g->active)
		return 0;
	g->paths = calloc(REGIONS_PATHS_MAX, sizeof(*g->paths));
	if (!g->paths)
		return hs_error("out of memory");
	g->npaths = 1;
	/* batches (time windows) may have closed before the first region */
	g->batches = g->replay->batch;
	if (replay_add_consumer(g->replay, &consumer, g))
		return -1;
	g->active = 1;
	return 0;
}

static int name_record(struct regions *g, const struct hs_record *rec)
{
	if (rec->id == 0 || rec->id >= NAMES_MAX)
		return hs_error("corrupt trace: region id %llu",
				(unsigned long long)rec->id);
	if (rec->id >= g->nnames) {
		size_t cap = g->nnames ? g->nnames : 16;
		while (cap <= rec->id)
			cap *= 2;
		char **v = realloc(g->names, cap * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		memset(v + g->nnames, 0, (cap - g->nnames) * sizeof(*v));
		g->names = v;
		g->nnames = cap;
	}
	char *s = strndup(rec->str, rec->str_len);
	if (!s)
		return hs_error("out of memory");
	free(g->names[rec->id]);
	g->names[rec->id] = s;
	return 0;
}

/* The path of region `name` inside path `parent`, made on first use;
 * 0 when there is no room for it. */
static uint32_t path_of(struct regions *g, uint32_t parent, uint32_t name)
{
	const size_t m = 2 * REGIONS_PATHS_MAX - 1;
	size_t h = hash64((uint64_t)parent << 32 | name) & m;
	for (uint16_t i; (i = g->path_index[h]); h = (h + 1) & m)
		if (g->paths[i].parent == parent && g->paths[i].name == name)
			return i;
	if (g->npaths == REGIONS_PATHS_MAX ||
	    g->paths[parent].depth == REGIONS_DEPTH_MAX)
		return 0;
	struct path *p = &g->paths[g->npaths];
	*p = (struct path){ .parent = parent, .name = name,
			    .depth = g->paths[parent].depth + 1,
			    .first = g->batches };
	g->path_index[h] = (uint16_t)g->npaths;
	return (uint32_t)g->npaths++;
}

static int switch_thread(struct regions *g, uint64_t tid)
{
	if (tid == g->tid)
		return 0;
	if (g->active) {
		struct thread *t = thread_of(g, g->tid);
		if (!t)
			return -1;
		t->path = g->path;
		t->extra = g->extra;
		if (!(t = thread_of(g, tid)))
			return -1;
		g->path = t->path;
		g->extra = t->extra;
	}
	g->tid = tid;
	return 0;
}

/* A thread seen for the first time: a new thread that took the id of one
 * that ended starts with no region open (the old one's still open count
 * as open at the end). */
static int new_thread(struct regions *g, uint64_t tid)
{
	struct thread *t;
	if (!g->active)
		return 0;
	if (tid == g->tid) {
		g->left_open += g->paths[g->path].depth + g->extra;
		g->path = g->extra = 0;
		return 0;
	}
	if (!(t = thread_of(g, tid)))
		return -1;
	g->left_open += g->paths[t->path].depth + t->extra;
	t->path = t->extra = 0;
	return 0;
}

int regions_record(struct regions *g, const struct hs_record *rec)
{
	if (rec->kind == HS_REC_SWITCH)
		return switch_thread(g, rec->tid);
	if (rec->kind == HS_REC_THREAD)
		return new_thread(g, rec->tid);
	if (rec->kind != HS_REC_EXT || rec->ext_type < HS_EXT_REGION_NAME ||
	    rec->ext_type > HS_EXT_REGION_END)
		return 0;
	if (activate(g) || switch_thread(g, rec->tid))
		return -1;
	if (rec->ext_type == HS_EXT_REGION_NAME)
		return name_record(g, rec);
	if (rec->ext_type == HS_EXT_REGION_END) {
		if (g->extra)
			g->extra--;
		else if (g->path)
			g->path = g->paths[g->path].parent;
		else
			g->unmatched++;
		return 0;
	}
	if (rec->id >= NAMES_MAX)
		return hs_error("corrupt trace: region id %llu",
				(unsigned long long)rec->id);
	uint32_t p = g->extra ? 0 : path_of(g, g->path, (uint32_t)rec->id);
	if (p) {
		g->path = p;
	} else {
		g->extra++;
		g->folded++;
	}
	return 0;
}

/* ---- the report ---- */

static char *name_text(const struct regions *g, uint32_t id)
{
	if (id < g->nnames && g->names[id])
		return strdup(g->names[id]);
	char buf[32];
	snprintf(buf, sizeof(buf), "(region %u)", id);
	return strdup(buf);
}

/* Fits the row's series over [warmup, n) */
static int fit_row(struct region_row *w, size_t n, size_t warmup)
{
	struct regress fit = { 0 };
	double *y = malloc((n ? n : 1) * sizeof(*y));
	if (!y)
		return hs_error("out of memory");
	double alloc = 0;
	for (size_t i = warmup; i < n; i++) {
		y[i - warmup] = (double)w->live[i];
		alloc += (double)w->allocated[i];
	}
	if (n > warmup) {
		regress_series(y, n - warmup, warmup, &fit);
		w->allocated_per_batch = alloc / (double)(n - warmup);
	}
	w->bytes_per_batch = fit.slope;
	w->r2 = fit.r2;
	w->live_bytes_at_end = n ? w->live[n - 1] : 0;
	free(y);
	return 0;
}

static int new_series(struct region_row *w, size_t n)
{
	w->live = calloc(n ? n : 1, sizeof(*w->live));
	w->allocated = calloc(n ? n : 1, sizeof(*w->allocated));
	return w->live && w->allocated ? 0 : hs_error("out of memory");
}

static int by_growth(const void *pa, const void *pb)
{
	const struct region_row *a = pa, *b = pb;
	if (a->bytes_per_batch != b->bytes_per_batch)
		return a->bytes_per_batch < b->bytes_per_batch ? 1 : -1;
	if (a->leaked_bytes != b->leaked_bytes)
		return a->leaked_bytes < b->leaked_bytes ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Row w of path i (0: outside, the rest of the heap) */
static int path_row(struct regions *g, size_t i, const struct series *s,
		    struct region_row *w)
{
	const size_t n = s->n;
	if (new_series(w, n))
		return -1;
	if (i == 0) {
		w->outside = 1;
		w->name = strdup(REGIONS_OUTSIDE);
		w->path = calloc(1, sizeof(*w->path));
		return w->name && w->path ? 0 : hs_error("out of memory");
	}
	const struct path *p = &g->paths[i];
	for (size_t k = p->first; k < n && k < g->batches; k++) {
		w->live[k] = p->live_at[k - p->first];
		w->allocated[k] = p->alloc_in[k - p->first];
	}
	w->allocated_bytes = p->allocated;
	w->allocations = p->allocations;
	w->leaked_bytes = p->live;
	w->leaked_blocks = p->blocks;
	w->depth = p->depth;
	w->name = name_text(g, p->name);
	w->path = calloc(p->depth + 1, sizeof(*w->path));
	if (!w->name || !w->path)
		return hs_error("out of memory");
	size_t d = p->depth;
	for (uint32_t j = (uint32_t)i; j; j = g->paths[j].parent)
		if (!(w->path[--d] = name_text(g, g->paths[j].name)))
			return hs_error("out of memory");
	return 0;
}

/* The outside row: the heap's figures less the regions' */
static void outside_row(struct region_row *out, const struct region_row *v,
			size_t nv, const struct series *s,
			const struct replay_totals *t)
{
	out->allocated_bytes = t->allocated_bytes;
	out->allocations = t->allocations;
	out->leaked_bytes = t->live_bytes;
	out->leaked_blocks = t->live_blocks;
	for (size_t k = 0; k < s->n; k++) {
		out->live[k] = s->v[k].live_bytes;
		out->allocated[k] = s->v[k].allocated_bytes;
	}
	for (size_t i = 0; i < nv; i++) {
		const struct region_row *w = &v[i];
		if (w->outside)
			continue;
		out->allocated_bytes -= w->allocated_bytes;
		out->allocations -= w->allocations;
		out->leaked_bytes -= w->leaked_bytes;
		out->leaked_blocks -= w->leaked_blocks;
		for (size_t k = 0; k < s->n; k++) {
			out->live[k] -= w->live[k];
			out->allocated[k] -= w->allocated[k];
		}
	}
}

/* The row of name id among r's names rows: made on first use. */
static struct region_row *name_row(struct regions *g,
				   struct region_report *r, uint32_t *ids,
				   uint32_t id, size_t n)
{
	for (size_t i = 1; i < r->nnames; i++)
		if (ids[i] == id)
			return &r->names[i];
	struct region_row *w = &r->names[r->nnames];
	ids[r->nnames++] = id;
	if (new_series(w, n) || !(w->name = name_text(g, id)))
		return NULL;
	return w;
}

/* Each row's stacks, from the accumulators: key -> row */
static int row_stacks(struct regions *g, struct region_report *r,
		      size_t warmup, size_t top)
{
	struct stack_growth *tmp = NULL;
	size_t cap = 0;
	int rc = -1;
	for (size_t pass = 0; pass < r->npaths + r->nnames; pass++) {
		struct region_row *w = pass < r->npaths
					       ? &r->paths[pass]
					       : &r->names[pass - r->npaths];
		if (w->outside)
			continue;
		uint32_t key = pass < r->npaths ? w->id : NAME_KEY | w->id;
		size_t n = 0;
		for (size_t i = 0; i < g->naccs; i++) {
			struct acc *a = &g->accs[i];
			if (a->key != key)
				continue;
			if (n == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct stack_growth *v =
					realloc(tmp, c * sizeof(*v));
				if (!v) {
					hs_error("out of memory");
					goto out;
				}
				tmp = v;
				cap = c;
			}
			stacks_acc_growth(g->stacks, &a->acc, (uint32_t)warmup,
					  (uint32_t)r->batches, a->slot,
					  &tmp[n++]);
		}
		if (n > 1)
			qsort(tmp, n, sizeof(*tmp), stacks_growth_cmp);
		/* only the growing ones */
		size_t keep = 0;
		while (keep < n && keep < top && tmp[keep].bytes_per_batch > 0)
			keep++;
		if (!keep)
			continue;
		w->stacks = calloc(keep, sizeof(*w->stacks));
		if (!w->stacks) {
			hs_error("out of memory");
			goto out;
		}
		memcpy(w->stacks, tmp, keep * sizeof(*tmp));
		w->nstacks = keep;
	}
	rc = 0;
out:
	free(tmp);
	return rc;
}

int regions_report(struct regions *g, const struct series *s,
		   const struct replay_totals *t, size_t warmup, size_t top,
		   struct region_report *r)
{
	memset(r, 0, sizeof(*r));
	if (!g || !g->active)
		return 0;
	const size_t n = s->n;
	uint32_t *name_ids = NULL;
	r->batches = n;
	r->unmatched_ends = g->unmatched;
	r->folded = g->folded;
	/* the current thread's regions go back to the table first */
	struct thread *cur = thread_of(g, g->tid);
	if (!cur)
		return -1;
	cur->path = g->path;
	cur->extra = g->extra;
	r->open_at_end = g->left_open;
	for (size_t i = 0; g->threads && i <= g->thread_mask; i++)
		if (g->threads[i].used)
			r->open_at_end += g->paths[g->threads[i].path].depth +
					  g->threads[i].extra;
	r->paths = calloc(g->npaths, sizeof(*r->paths));
	r->names = calloc(g->npaths, sizeof(*r->names));
	name_ids = calloc(g->npaths, sizeof(*name_ids));
	if (!r->paths || !r->names || !name_ids)
		goto oom;
	/* paths 1.. first, outside (row 0) from them */
	for (size_t i = 0; i < g->npaths; i++) {
		if (path_row(g, i, s, &r->paths[i]))
			goto fail;
		r->npaths = i + 1;
		r->paths[i].id = (uint32_t)i;
	}
	outside_row(&r->paths[0], r->paths, r->npaths, s, t);
	/* names: row 0 outside, then one per innermost name */
	struct region_row *o = &r->names[0];
	if (new_series(o, n) || !(o->name = strdup(REGIONS_OUTSIDE)))
		goto oom;
	o->outside = 1;
	r->nnames = 1;
	for (size_t i = 1; i < g->npaths; i++) {
		const struct region_row *p = &r->paths[i];
		struct region_row *w = name_row(g, r, name_ids,
						g->paths[i].name, n);
		if (!w)
			goto oom;
		w->id = g->paths[i].name;
		w->allocated_bytes += p->allocated_bytes;
		w->allocations += p->allocations;
		w->leaked_bytes += p->leaked_bytes;
		w->leaked_blocks += p->leaked_blocks;
		for (size_t k = 0; k < n; k++) {
			w->live[k] += p->live[k];
			w->allocated[k] += p->allocated[k];
		}
	}
	outside_row(o, r->names, r->nnames, s, t);
	if (row_stacks(g, r, warmup, top))
		goto fail;
	for (size_t i = 0; i < r->npaths; i++)
		if (fit_row(&r->paths[i], n, warmup))
			goto fail;
	for (size_t i = 0; i < r->nnames; i++)
		if (fit_row(&r->names[i], n, warmup))
			goto fail;
	qsort(r->paths, r->npaths, sizeof(*r->paths), by_growth);
	qsort(r->names, r->nnames, sizeof(*r->names), by_growth);
	free(name_ids);
	return 0;
oom:
	hs_error("out of memory");
fail:
	free(name_ids);
	regions_report_finish(r);
	return -1;
}

static void row_finish(struct region_row *w)
{
	free(w->name);
	for (size_t i = 0; w->path && i < w->depth; i++)
		free(w->path[i]);
	free(w->path);
	free(w->live);
	free(w->allocated);
	stacks_growth_free(w->stacks, w->nstacks);
}

void regions_report_finish(struct region_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->npaths; i++)
		row_finish(&r->paths[i]);
	for (size_t i = 0; i < r->nnames; i++)
		row_finish(&r->names[i]);
	free(r->paths);
	free(r->names);
	memset(r, 0, sizeof(*r));
}
