#include "groups.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "base/bigmem.h"
#include "base/error.h"
#include "frame_match.h"
#include "pyframes.h"
#include "regress.h"
#include "stack_series.h"
#include "symbols.h"

#define NONE (-1)
#define DEPTH_MAX 1024
#define NAME_LEN 256

/* ---- which group a stack goes to ---- */

/* What the frames of one return address say. */
struct ip_memo {
	uint64_t ip, when;
	int32_t g, y;  /* first match, first match that yields; NONE */
	uint8_t eval;  /* the interpreter's eval loop: Python frames */
	uint8_t used;
};

/* A module's functions that match, or that are the interpreter's eval
 * loop, by address: a module without inlined calls is matched from its
 * symbol table once, not address by address. */
struct range {
	uint64_t lo, hi;
	int32_t g, y;
	uint8_t eval;
};

enum { MOD_UNKNOWN, MOD_TABLE, MOD_RESOLVE };

struct mod_table {
	int state;
	struct range *v;
	size_t n, cap;
};

/* The first match from a stack node outward. */
struct node_memo {
	int32_t g, y;
	uint8_t crossed; /* an eval loop lies inside g's frame */
	uint8_t done;
};

struct assign {
	struct analysis *a;
	const struct frame_match *m;
	char **names;
	size_t nnames, cap;
	int32_t *index; /* names by hash, open addressing; -1: empty */
	size_t index_mask;
	struct ip_memo *ips;
	size_t ipmask, nips;
	struct node_memo *nodes;
	size_t nnodes;
	struct node_memo joint; /* node_match's answer for a joint */
	int32_t *py; /* per Python node: first match outward; py_unknown */
	size_t npy;
	struct mod_table *mods; /* by module number */
	size_t nmods;
	struct mod_table *cur;  /* the one collect fills */
	int python;
};

static const int32_t py_unknown = INT32_MIN;

static void assign_finish(struct assign *x)
{
	for (size_t i = 0; i < x->nnames; i++)
		free(x->names[i]);
	free(x->names);
	free(x->index);
	free(x->ips);
	bigmem_free(x->nodes, (x->nnodes ? x->nnodes : 1) * sizeof(*x->nodes));
	for (size_t i = 0; i < x->nmods; i++)
		free(x->mods[i].v);
	free(x->mods);
	free(x->py);
}

static size_t name_hash(const char *s)
{
	size_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t name_slot(const struct assign *x, const char *name)
{
	size_t h = name_hash(name) & x->index_mask;
	while (x->index[h] >= 0 && strcmp(x->names[x->index[h]], name))
		h = (h + 1) & x->index_mask;
	return h;
}

/* The index of group name, added if new; -1 when out of memory.  A broad
 * pattern names a group for each function of a big library. */
static int32_t group_of(struct assign *x, const char *name)
{
	if ((x->nnames + 1) * 2 > (x->index ? x->index_mask + 1 : 0)) {
		size_t cap = x->index ? (x->index_mask + 1) * 2 : 256;
		int32_t *t = malloc(cap * sizeof(*t));
		if (!t)
			return -1;
		memset(t, 0xff, cap * sizeof(*t));
		free(x->index);
		x->index = t;
		x->index_mask = cap - 1;
		for (size_t i = 0; i < x->nnames; i++)
			x->index[name_slot(x, x->names[i])] = (int32_t)i;
	}
	size_t h = name_slot(x, name);
	if (x->index[h] >= 0)
		return x->index[h];
	if (x->nnames == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		char **v = realloc(x->names, cap * sizeof(*v));
		if (!v)
			return -1;
		x->names = v;
		x->cap = cap;
	}
	if (!(x->names[x->nnames] = strdup(name)))
		return -1;
	x->index[h] = (int32_t)x->nnames;
	return (int32_t)x->nnames++;
}

static int is_eval(const struct frame *f)
{
	return !f->python && f->function &&
	       !strcmp(f->function, "_PyEval_EvalFrameDefault");
}

static size_t ip_slot(const struct assign *x, uint64_t ip, uint64_t when)
{
	size_t h = (size_t)(((ip ^ when * 0xff51afd7ed558ccdull) *
			     0x9e3779b97f4a7c15ull) >> 17) & x->ipmask;
	while (x->ips[h].used &&
	       (x->ips[h].ip != ip || x->ips[h].when != when))
		h = (h + 1) & x->ipmask;
	return h;
}

static int ip_grow(struct assign *x)
{
	size_t old = x->ips ? x->ipmask + 1 : 0, cap = old ? old * 2 : 4096;
	struct ip_memo *o = x->ips;
	if (!(x->ips = calloc(cap, sizeof(*x->ips)))) {
		x->ips = o;
		return -1;
	}
	x->ipmask = cap - 1;
	for (size_t i = 0; i < old; i++)
		if (o[i].used)
			x->ips[ip_slot(x, o[i].ip, o[i].when)] = o[i];
	free(o);
	return 0;
}

/* The frames of ip, captured at `when`, resolved and matched; -1 when
 * out of memory. */
static int resolve_match(struct assign *x, uint64_t ip, uint64_t when,
			 struct ip_memo *r)
{
	struct frame *fv = NULL;
	size_t n = 0, cap = 0;
	char name[NAME_LEN];
	int yields;
	if (symbols_resolve_at(x->a->symbols, ip, when, &fv, &n, &cap)) {
		symbols_frames_free(fv, n);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		r->eval |= is_eval(&fv[i]);
		if (r->g != NONE || !frame_match(x->m, &fv[i], name,
						 sizeof(name), &yields))
			continue;
		int32_t g = group_of(x, name);
		if (g < 0) {
			symbols_frames_free(fv, n);
			return -1;
		}
		if (!yields)
			r->g = g;
		else if (r->y == NONE)
			r->y = g;
	}
	symbols_frames_free(fv, n);
	return 0;
}

static int32_t group_of(struct assign *x, const char *name);

static int collect(void *ctx, uint64_t lo, uint64_t hi, const char *name)
{
	struct assign *x = ctx;
	struct mod_table *t = x->cur;
	struct frame f = { .function = (char *)name };
	char gname[NAME_LEN];
	int yields;
	struct range r = { lo, hi, NONE, NONE,
			   !strcmp(name, "_PyEval_EvalFrameDefault") };
	if (frame_match(x->m, &f, gname, sizeof(gname), &yields)) {
		int32_t g = group_of(x, gname);
		if (g < 0)
			return hs_error("out of memory");
		if (yields)
			r.y = g;
		else
			r.g = g;
	}
	if (r.g == NONE && r.y == NONE && !r.eval)
		return 0;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct range *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = r;
	return 0;
}

static int by_lo(const void *pa, const void *pb)
{
	const struct range *a = pa, *b = pb;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Module mod's table (MOD_RESOLVE: match its addresses one by one);
 * NULL when out of memory. */
static struct mod_table *mod_table(struct assign *x, uint32_t mod,
				   uint64_t ip, uint64_t when)
{
	if (mod >= x->nmods) {
		size_t cap = x->nmods ? x->nmods : 64;
		while (cap <= mod)
			cap *= 2;
		struct mod_table *v = realloc(x->mods, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + x->nmods, 0, (cap - x->nmods) * sizeof(*v));
		x->mods = v;
		x->nmods = cap;
	}
	struct mod_table *t = &x->mods[mod];
	if (t->state != MOD_UNKNOWN)
		return t;
	int inlined = 0;
	x->cur = t;
	if (symbols_functions(x->a->symbols, ip, when, collect, x, &inlined))
		return NULL;
	t->state = inlined ? MOD_RESOLVE : MOD_TABLE;
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), by_lo);
	return t;
}

/* The match of the call before return address ip in t. */
static void table_match(const struct mod_table *t, uint64_t ip,
			struct ip_memo *r)
{
	uint64_t a = ip ? ip - 1 : 0;
	size_t lo = 0, hi = t->n;
	while (lo < hi) { /* the first range starting past a */
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* aliases start at one address: any of them may match */
	for (size_t k = lo; k-- > 0 && t->v[k].lo == t->v[lo - 1].lo;) {
		const struct range *e = &t->v[k];
		if (a >= e->hi)
			continue;
		r->eval |= e->eval;
		if (e->g != NONE && r->g == NONE)
			r->g = e->g;
		if (e->y != NONE && r->y == NONE)
			r->y = e->y;
	}
}

/* The frames of ip, captured at `when`, matched; NULL when out of
 * memory. */
static const struct ip_memo *ip_match(struct assign *x, uint64_t ip,
				      uint64_t when)
{
	if ((x->nips + 1) * 2 > (x->ips ? x->ipmask + 1 : 0) && ip_grow(x))
		return NULL;
	struct ip_memo *e = &x->ips[ip_slot(x, ip, when)];
	if (e->used)
		return e;
	const uint32_t mod = symbols_module_number(x->a->symbols, ip, when);
	struct ip_memo r = { ip, when, NONE, NONE, 0, 1 };
	struct mod_table *t = mod ? mod_table(x, mod, ip, when) : NULL;
	if (mod && !t)
		return NULL;
	if (t && t->state == MOD_TABLE)
		table_match(t, ip, &r);
	else if (t && resolve_match(x, ip, when, &r))
		return NULL;
	*e = r;
	x->nips++;
	return e;
}

/* The memo of a node whose frame is ip, captured at `when`, under a node
 * whose memo is outer; -1 when out of memory. */
static int memo_of(struct assign *x, uint64_t ip, uint64_t when,
		   const struct node_memo *outer, struct node_memo *m)
{
	const struct ip_memo *r = ip_match(x, ip, when);
	if (!r)
		return -1;
	*m = (struct node_memo){ outer->g, r->y != NONE ? r->y : outer->y,
				 (uint8_t)(r->eval || outer->crossed), 1 };
	if (r->g != NONE) {
		m->g = r->g;
		m->crossed = 0;
	}
	return 0;
}

/* The node memo of stack node id, computed from the first node outward
 * that has one; NULL when out of memory.  A joint of Python frames and a
 * native stack (ids from STACKS_JOINED on) has its native node's frame
 * and parent: its memo is not kept. */
static const struct node_memo *node_match(struct assign *x, uint64_t id)
{
	static const struct node_memo none = { NONE, NONE, 0, 1 };
	uint64_t path[DEPTH_MAX];
	size_t n = 0;
	const struct analysis *a = x->a;
	if (id >= STACKS_JOINED) {
		uint64_t two[2], ip;
		uint64_t parent = stacks_ids(a->stacks, id, two, 2) == 2 ? two[1]
									 : 0;
		const struct node_memo *pm = parent < STACKS_JOINED
						     ? node_match(x, parent)
						     : &none;
		if (!pm || !stacks_ips(a->stacks, id, &ip, 1))
			return pm ? &none : NULL;
		struct node_memo outer = *pm;
		uint64_t native = stacks_native(a->stacks, id);
		uint64_t when = native < a->nnode_when ? a->node_when[native]
						       : SYMBOLS_NOW;
		return memo_of(x, ip, when, &outer, &x->joint) ? NULL
							       : &x->joint;
	}
	uint64_t cur = id;
	while (cur && cur < x->nnodes && !x->nodes[cur].done && n < DEPTH_MAX) {
		uint64_t two[2];
		path[n++] = cur;
		cur = stacks_ids(a->stacks, cur, two, 2) == 2 ? two[1] : 0;
	}
	struct node_memo outer = cur && cur < x->nnodes && x->nodes[cur].done
					 ? x->nodes[cur] : none;
	for (size_t i = n; i-- > 0;) {
		uint64_t ip;
		stacks_ips(a->stacks, path[i], &ip, 1);
		uint64_t when = path[i] < a->nnode_when ? a->node_when[path[i]]
							: SYMBOLS_NOW;
		struct node_memo m;
		if (memo_of(x, ip, when, &outer, &m))
			return NULL;
		x->nodes[path[i]] = m;
		outer = m;
	}
	return id && id < x->nnodes ? &x->nodes[id] : &none;
}

/* The first match in the Python frames from node k outward; -2 when out
 * of memory. */
static int32_t py_match(struct assign *x, uint32_t k)
{
	uint32_t path[DEPTH_MAX];
	size_t n = 0;
	const struct pyframes *p = x->a->py;
	while (k && k < x->npy && x->py[k] == py_unknown && n < DEPTH_MAX) {
		path[n++] = k;
		k = pyframes_parent(p, k);
	}
	int32_t outer = k && k < x->npy && x->py[k] != py_unknown ? x->py[k]
								  : NONE;
	for (size_t i = n; i-- > 0;) {
		struct frame f = { .python = 1 };
		const char *fn, *file;
		char name[NAME_LEN];
		if (!pyframes_names(p, path[i], &fn, &file)) {
			f.function = (char *)fn;
			f.file = (char *)file;
			if (frame_match(x->m, &f, name, sizeof(name), NULL)) {
				int32_t g = group_of(x, name);
				if (g < 0)
					return -2;
				outer = g;
			}
		}
		x->py[path[i]] = outer;
	}
	return outer;
}

/* The group of stack id: the native frames inside the innermost Python
 * call, the Python frames, the native frames outside it, then a match
 * that gives way (NONE: unmatched); -2 when out of memory. */
static int32_t stack_group(struct assign *x, uint64_t id)
{
	const struct node_memo *nm = node_match(x, id);
	if (!nm)
		return -2;
	if (nm->g != NONE && !nm->crossed)
		return nm->g;
	if (x->python) {
		uint64_t ids[DEPTH_MAX];
		size_t n = stacks_ids(x->a->stacks, id, ids, DEPTH_MAX);
		uint32_t k = pyframes_stack_node(x->a->py, ids, n);
		int32_t g = k ? py_match(x, k) : NONE;
		if (g != NONE)
			return g;
	}
	return nm->g != NONE ? nm->g : nm->y;
}

static int assign_init(struct assign *x, struct analysis *a,
		       const struct frame_match *m)
{
	memset(x, 0, sizeof(*x));
	x->a = a;
	x->m = m;
	x->nnodes = a->nnode_when;
	x->nodes = bigmem_zalloc((x->nnodes ? x->nnodes : 1) *
				 sizeof(*x->nodes));
	x->python = a->py && pyframes_any(a->py) &&
		    !frame_match_native_only(m);
	if (x->python) {
		x->npy = pyframes_nodes(a->py);
		x->py = malloc((x->npy ? x->npy : 1) * sizeof(*x->py));
		for (size_t i = 0; x->py && i < x->npy; i++)
			x->py[i] = py_unknown;
	}
	if (!x->nodes || (x->python && !x->py))
		return hs_error("out of memory");
	return 0;
}

/* ---- the rows ---- */

static int by_growth(const void *pa, const void *pb)
{
	const struct group_row *a = pa, *b = pb;
	if (a->unmatched != b->unmatched)
		return a->unmatched - b->unmatched;
	if (a->bytes_per_batch != b->bytes_per_batch)
		return a->bytes_per_batch < b->bytes_per_batch ? 1 : -1;
	if (a->live_bytes_at_end != b->live_bytes_at_end)
		return a->live_bytes_at_end < b->live_bytes_at_end ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Each row's series from the log: the changes of its stacks, added up
 * at their marks, then fitted after the warm-up. */
static int fit_rows(struct groups *gs, const struct analysis *a,
		    const struct stack_series_change *log, size_t nlog,
		    const int32_t *slot_row, size_t nslots)
{
	const size_t batches = a->series.n, rows = gs->nrows;
	int64_t *d = calloc(rows * (batches ? batches : 1), sizeof(*d));
	uint64_t *prev = calloc(nslots ? nslots : 1, sizeof(*prev));
	double *y = calloc(batches ? batches : 1, sizeof(*y));
	if (!d || !prev || !y) {
		free(d);
		free(prev);
		free(y);
		return hs_error("out of memory");
	}
	for (size_t i = 0; i < nlog; i++) {
		const struct stack_series_change *c = &log[i];
		if (c->slot >= nslots || c->mark >= batches)
			continue;
		d[(size_t)slot_row[c->slot] * batches + c->mark] +=
			(int64_t)(c->value - prev[c->slot]);
		prev[c->slot] = c->value;
	}
	const size_t w = a->warmup < batches ? a->warmup : batches;
	for (size_t r = 0; r < rows; r++) {
		int64_t v = 0;
		for (size_t k = 0; k < batches; k++) {
			v += d[r * batches + k];
			y[k] = (double)v;
		}
		struct regress fit = { 0 };
		regress_series(y + w, batches - w, w, &fit);
		gs->rows[r].bytes_per_batch = fit.slope;
		gs->rows[r].r2 = fit.r2;
		gs->rows_slope += fit.slope;
	}
	free(d);
	free(prev);
	free(y);
	return 0;
}

int groups_build(struct analysis *a, const struct frame_match *m,
		 struct stack_series *series, struct groups **out)
{
	const struct stack_series_change *log;
	size_t nlog;
	struct assign x;
	struct groups *gs = calloc(1, sizeof(*gs));
	const size_t nslots = stacks_count(a->stacks);
	int32_t *slot_row = calloc(nslots ? nslots : 1, sizeof(*slot_row));
	int32_t *stack_row = calloc(a->nranked ? a->nranked : 1,
				    sizeof(*stack_row));
	int32_t *row_of = NULL; /* group -> row */
	*out = NULL;
	if (assign_init(&x, a, m) || !gs || !slot_row || !stack_row ||
	    !(gs->pattern = strdup(frame_match_pattern(m))))
		goto oom;
	if (stack_series_close(series, (uint32_t)a->series.n, &log, &nlog))
		goto fail;
	gs->preset = frame_match_preset_name(m);
	gs->stacks = a->nranked;
	for (size_t i = 0; i < a->nranked; i++) {
		int32_t g = stack_group(&x, a->ranked[i].id);
		if (g == -2)
			goto oom;
		stack_row[i] = g;
	}
	/* a row for each group a stack went to (a module's symbols name
	 * many that none does), then the unmatched one */
	row_of = malloc((x.nnames ? x.nnames : 1) * sizeof(*row_of));
	if (!row_of)
		goto oom;
	memset(row_of, 0xff, (x.nnames ? x.nnames : 1) * sizeof(*row_of));
	for (size_t i = 0; i < a->nranked; i++)
		if (stack_row[i] != NONE && row_of[stack_row[i]] < 0)
			row_of[stack_row[i]] = (int32_t)gs->nrows++;
	const int32_t unmatched = (int32_t)gs->nrows++;
	gs->rows = calloc(gs->nrows, sizeof(*gs->rows));
	if (!gs->rows)
		goto oom;
	for (size_t g = 0; g < x.nnames; g++)
		if (row_of[g] >= 0 &&
		    !(gs->rows[row_of[g]].name = strdup(x.names[g])))
			goto oom;
	gs->rows[unmatched].unmatched = 1;
	if (!(gs->rows[unmatched].name = strdup("(unmatched)")))
		goto oom;
	for (size_t i = 0; i < nslots; i++)
		slot_row[i] = unmatched;
	for (size_t i = 0; i < a->nranked; i++) {
		const struct stack_growth *s = &a->ranked[i];
		int32_t r = stack_row[i] == NONE ? unmatched
						 : row_of[stack_row[i]];
		struct group_row *row = &gs->rows[r];
		uint32_t slot = stacks_ref(a->stacks, s->id);
		if (slot < nslots)
			slot_row[slot] = r;
		gs->matched_stacks += !row->unmatched;
		/* the stacks come ranked: a row's first is its top */
		if (!row->stacks++) {
			row->top = *s;
			row->top.frames = NULL;
			row->top.nframes = 0;
			row->top.paths = NULL;
			row->top.npaths = 0;
		}
		row->live_bytes_at_end += s->live_bytes_at_end;
		row->leaked_bytes += s->leaked_bytes;
		row->leaked_blocks += s->leaked_blocks;
		row->allocations += s->allocations;
	}
	if (fit_rows(gs, a, log, nlog, slot_row, nslots))
		goto fail;
	for (size_t r = 0; r < gs->nrows; r++) {
		struct group_row *row = &gs->rows[r];
		if (row->stacks && analysis_frames(a, row->top.id,
						   &row->top.frames,
						   &row->top.nframes))
			goto fail;
	}
	qsort(gs->rows, gs->nrows, sizeof(*gs->rows), by_growth);
	assign_finish(&x);
	free(slot_row);
	free(stack_row);
	free(row_of);
	*out = gs;
	return 0;
oom:
	hs_error("out of memory");
fail:
	assign_finish(&x);
	free(slot_row);
	free(stack_row);
	free(row_of);
	groups_destroy(gs);
	return -1;
}

void groups_destroy(struct groups *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nrows; i++) {
		free(g->rows[i].name);
		symbols_frames_free(g->rows[i].top.frames,
				    g->rows[i].top.nframes);
	}
	free(g->rows);
	free(g->pattern);
	free(g);
}
