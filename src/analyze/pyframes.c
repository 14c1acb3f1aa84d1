#include "pyframes.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/error.h"
#include "base/mix.h"
#include "format/reader.h"
#include "symbols.h"

/* Ids are handed out in order from 1: one further ahead than this comes
 * from a corrupt trace, not a table to grow. */
#define ID_SLACK (1u << 16)
/* Python frames followed per stack. */
#define CHAIN_MAX 4096
/* The line table past this is not kept (the recorder cuts it there). */
#define LINES_MAX (1u << 20)
#define STR_MAX 4096

struct pycode {
	char *file, *name, *qualname; /* NUL-terminated copies */
	uint8_t *lines;
	size_t nlines;
	unsigned first;
};

/* uint64 -> uint64, open addressing; key 0 is empty. */
struct map64 {
	uint64_t *k, *v;
	size_t mask, n;
};

static size_t map_slot(const struct map64 *m, uint64_t key)
{
	/* every bit of the key into the low ones: pairs' keys differ in
	 * their top and bottom halves */
	size_t h = (size_t)hs_mix64(key) & m->mask;
	while (m->k[h] && m->k[h] != key)
		h = (h + 1) & m->mask;
	return h;
}

static uint64_t map_get(const struct map64 *m, uint64_t key)
{
	if (!m->k || !key)
		return 0;
	size_t h = map_slot(m, key);
	return m->k[h] ? m->v[h] : 0;
}

static int map_put(struct map64 *m, uint64_t key, uint64_t value)
{
	if (!key)
		return 0; /* the empty key (a thread id of 2^64 - 1): not kept */
	if ((m->n + 1) * 2 > (m->k ? m->mask + 1 : 0)) {
		size_t cap = m->k ? (m->mask + 1) * 2 : 1024;
		struct map64 g = { calloc(cap, sizeof(uint64_t)),
				   calloc(cap, sizeof(uint64_t)), cap - 1, 0 };
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return hs_error("out of memory");
		}
		for (size_t i = 0; m->k && i <= m->mask; i++)
			if (m->k[i]) {
				size_t h = map_slot(&g, m->k[i]);
				g.k[h] = m->k[i];
				g.v[h] = m->v[i];
			}
		g.n = m->n;
		free(m->k);
		free(m->v);
		*m = g;
	}
	size_t h = map_slot(m, key);
	m->n += !m->k[h];
	m->k[h] = key;
	m->v[h] = value;
	return 0;
}

static void map_free(struct map64 *m)
{
	free(m->k);
	free(m->v);
	*m = (struct map64){ 0 };
}

struct pynode {
	uint32_t parent, code;
	uint64_t offset;
	uint32_t flags;
	int32_t line; /* -1: not computed yet */
};

struct pyframes {
	struct pycode *codes;
	size_t ncodes; /* room, indexed by id */
	uint64_t codes_defined;
	struct pynode *nodes;
	size_t nnodes;
	uint64_t nodes_defined;
	struct map64 joins; /* stack node -> the Python node it carries */
	struct map64 pairs; /* native stack << 32 | Python node -> joint */
	struct map64 threads; /* 1 + tid -> 1 + its Python node */
	uint64_t tid;         /* the thread of the events read now */
	uint32_t at;          /* its Python node (HS_EXT_PY_AT), 0: none */
	uint64_t next_joint;  /* the id the next joint takes */
	uint64_t version; /* Py_Version of the first code */
};

struct pyframes *pyframes_create(void)
{
	struct pyframes *p = calloc(1, sizeof(*p));
	if (!p)
		hs_error("out of memory");
	return p;
}

static void code_free(struct pycode *c)
{
	free(c->file);
	free(c->name);
	free(c->qualname);
	free(c->lines);
	memset(c, 0, sizeof(*c));
}

void pyframes_destroy(struct pyframes *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncodes; i++)
		code_free(&p->codes[i]);
	free(p->codes);
	bigmem_free(p->nodes, p->nnodes * sizeof(*p->nodes));
	map_free(&p->joins);
	map_free(&p->pairs);
	map_free(&p->threads);
	free(p);
}

int pyframes_any(const struct pyframes *p)
{
	return p && p->joins.n > 0;
}

uint64_t pyframes_version(const struct pyframes *p)
{
	return pyframes_any(p) ? p->version : 0;
}

/* Room for index id in *v of *n elements of size bytes (zeroed). */
static int room(void **v, size_t *n, uint64_t id, size_t size, int big)
{
	if (id < *n)
		return 0;
	size_t cap = *n ? *n : 256;
	while (cap <= id)
		cap *= 2;
	void *nv = big ? bigmem_realloc(*v, *n * size, cap * size)
		       : realloc(*v, cap * size);
	if (!nv)
		return hs_error("out of memory");
	memset((uint8_t *)nv + *n * size, 0, (cap - *n) * size);
	*v = nv;
	*n = cap;
	return 0;
}

static char *copy_str(const char *s, size_t n)
{
	if (n > STR_MAX)
		n = STR_MAX;
	char *c = malloc(n + 1);
	if (c) {
		memcpy(c, s, n);
		c[n] = 0;
		/* a NUL inside would cut the name where the report prints it */
		for (size_t i = 0; i < n; i++)
			if (!c[i])
				c[i] = '?';
	}
	return c;
}

static int on_code(struct pyframes *p, const struct hs_record *r)
{
	const struct hs_py_info *py = &r->py;
	if (py->code == 0 || py->code > p->codes_defined + ID_SLACK)
		return hs_error("corrupt trace: Python code id %llu out of "
				"sequence", (unsigned long long)py->code);
	if (room((void **)&p->codes, &p->ncodes, py->code, sizeof(*p->codes),
		 0))
		return -1;
	p->codes_defined++;
	if (!p->version)
		p->version = py->version;
	struct pycode *c = &p->codes[py->code];
	code_free(c); /* a redefinition replaces it */
	size_t nl = py->lines_len < LINES_MAX ? py->lines_len : LINES_MAX;
	c->file = copy_str(r->str, r->str_len);
	c->name = copy_str(py->name, py->name_len);
	c->qualname = copy_str(py->qualname, py->qualname_len);
	c->lines = malloc(nl ? nl : 1);
	if (!c->file || !c->name || !c->qualname || !c->lines) {
		code_free(c);
		return hs_error("out of memory");
	}
	if (nl)
		memcpy(c->lines, py->lines, nl);
	c->nlines = nl;
	c->first = py->first_line < (1u << 30) ? (unsigned)py->first_line : 0;
	return 0;
}

static int on_frame(struct pyframes *p, const struct hs_record *r)
{
	if (r->id == 0 || r->id >= UINT32_MAX ||
	    r->id > p->nodes_defined + ID_SLACK)
		return hs_error("corrupt trace: Python frame id %llu out of "
				"sequence", (unsigned long long)r->id);
	if (room((void **)&p->nodes, &p->nnodes, r->id, sizeof(*p->nodes), 1))
		return -1;
	p->nodes_defined++;
	struct pynode *n = &p->nodes[r->id];
	/* parents come first; another one cuts the chain there */
	n->parent = r->parent < r->id ? (uint32_t)r->parent : 0;
	n->code = r->py.code < UINT32_MAX ? (uint32_t)r->py.code : 0;
	n->offset = r->py.offset;
	n->flags = (uint32_t)(r->py.flags & (HS_PY_ENTRY | HS_PY_NONE));
	n->line = -1;
	return 0;
}

static int on_stack(struct pyframes *p, const struct hs_record *r)
{
	if (r->id == 0 || r->py.python >= p->nnodes)
		return 0; /* a node never defined: the stack stays native */
	return map_put(&p->joins, r->id, r->py.python);
}

/* The Python node of the thread's next stacks; one never defined counts
 * as none. */
static int on_at(struct pyframes *p, const struct hs_record *r)
{
	p->at = r->py.python < p->nnodes ? (uint32_t)r->py.python : 0;
	return map_put(&p->threads, p->tid + 1, (uint64_t)p->at + 1);
}

int pyframes_thread(struct pyframes *p, uint64_t tid)
{
	if (tid == p->tid)
		return 0;
	p->tid = tid;
	uint64_t at = map_get(&p->threads, tid + 1);
	p->at = at ? (uint32_t)(at - 1) : 0;
	return 0;
}

int pyframes_joining(const struct pyframes *p)
{
	return p->at != 0;
}

uint64_t pyframes_join(struct pyframes *p, uint64_t stack,
		       pyframes_make_fn make, void *ctx)
{
	if (!p->at || !stack || stack > UINT32_MAX)
		return stack;
	uint64_t key = stack << 32 | p->at;
	uint64_t joint = map_get(&p->pairs, key);
	if (joint)
		return joint;
	joint = PYFRAMES_JOINED + p->next_joint;
	int made = make(ctx, joint, stack);
	if (made > 0)
		return stack; /* not a stack: left as it is */
	if (made || map_put(&p->pairs, key, joint) ||
	    map_put(&p->joins, joint, p->at))
		return 0;
	p->next_joint++;
	return joint;
}

int pyframes_record(struct pyframes *p, const struct hs_record *r)
{
	switch (r->ext_type) {
	case HS_EXT_PY_CODE:
		return on_code(p, r);
	case HS_EXT_PY_FRAME:
		return on_frame(p, r);
	case HS_EXT_PY_STACK:
		return on_stack(p, r);
	case HS_EXT_PY_AT:
		return on_at(p, r);
	}
	return 0;
}

/* The Python node stack node id carries, or 0. */
static uint32_t joined(const struct pyframes *p, uint64_t id)
{
	return (uint32_t)map_get(&p->joins, id);
}

/* ---- lines ---- */

/* A varint of the line table (6 bits a byte, 0x40: more) at *i. */
static unsigned varint(const uint8_t *lt, size_t n, size_t *i)
{
	unsigned v = 0, shift = 0;
	while (*i < n && shift < 32) {
		uint8_t b = lt[(*i)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int signed_varint(const uint8_t *lt, size_t n, size_t *i)
{
	unsigned u = varint(lt, n, i);
	return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

unsigned pyframes_line(const uint8_t *lt, size_t n, unsigned first,
		       uint64_t offset)
{
	long line = first;
	uint64_t at = 0;
	size_t i = 0;
	while (i < n) {
		uint8_t b = lt[i++];
		if (!(b & 128))
			continue; /* not the first byte of an entry */
		unsigned code = b >> 3 & 15;
		uint64_t len = (b & 7) + 1;
		int none = code == 15;
		if (code == 13 || code == 14)
			line += signed_varint(lt, n, &i);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		if (offset < at + len)
			return none || line <= 0 ? 0 : (unsigned)line;
		at += len;
		while (i < n && !(lt[i] & 128))
			i++;
	}
	return 0;
}

static unsigned node_line(struct pyframes *p, struct pynode *n)
{
	if (n->line < 0) {
		const struct pycode *c =
			n->code < p->ncodes ? &p->codes[n->code] : NULL;
		n->line = c && c->file ? (int32_t)pyframes_line(
						 c->lines, c->nlines, c->first,
						 n->offset)
				       : 0;
	}
	return (unsigned)n->line;
}

/* ---- frames ---- */

static const struct pycode *node_code(const struct pyframes *p,
				      const struct pynode *n)
{
	const struct pycode *c = n->code < p->ncodes ? &p->codes[n->code]
						     : NULL;
	return c && c->file ? c : NULL;
}

/* The report's frame of Python node n into f; -1 when out of memory. */
static int python_frame(struct pyframes *p, struct pynode *n,
			struct frame *f)
{
	const struct pycode *c = node_code(p, n);
	memset(f, 0, sizeof(*f));
	f->python = 1;
	f->offset = n->offset * 2; /* bytes, as CPython's f_lasti */
	f->line = node_line(p, n);
	const char *name = !c ? "?" : c->qualname[0] ? c->qualname : c->name;
	f->function = strdup(name);
	f->file = c ? strdup(c->file) : NULL;
	if (!f->function || (c && !f->file)) {
		free(f->function);
		free(f->file);
		return hs_error("out of memory");
	}
	return 0;
}

/* The Python node of the stack whose nodes, innermost first, are
 * ids[0..n): its innermost joint node's (the recorder joins the Python
 * frames at the innermost frame, or at the innermost eval loop frame with
 * the frames inside it below). */
static uint32_t python_of(const struct pyframes *p, const uint64_t *ids,
			  size_t n)
{
	for (size_t i = 0; p->joins.n && i < n; i++) {
		uint32_t k = joined(p, ids[i]);
		if (k)
			return k;
	}
	return 0;
}

uint32_t pyframes_stack_node(const struct pyframes *p, const uint64_t *ids,
			     size_t n)
{
	return python_of(p, ids, n);
}

uint32_t pyframes_parent(const struct pyframes *p, uint32_t k)
{
	return k < p->nnodes ? p->nodes[k].parent : 0;
}

int pyframes_names(const struct pyframes *p, uint32_t k,
		   const char **function, const char **file)
{
	if (k >= p->nnodes || (p->nodes[k].flags & HS_PY_NONE))
		return -1;
	const struct pycode *c = node_code(p, &p->nodes[k]);
	if (!c)
		return -1;
	*function = c->qualname[0] ? c->qualname : c->name;
	*file = c->file;
	return 0;
}

size_t pyframes_nodes(const struct pyframes *p)
{
	return p->nnodes;
}

uint64_t pyframes_site(struct pyframes *p, const uint64_t *ids, size_t n)
{
	uint32_t k = python_of(p, ids, n);
	for (size_t depth = 0; k && k < p->nnodes && depth < CHAIN_MAX;
	     depth++) {
		struct pynode *n = &p->nodes[k];
		if (!(n->flags & HS_PY_NONE) && node_code(p, n))
			return PYFRAMES_SITE | (uint64_t)n->code << 32 |
			       node_line(p, n);
		k = n->parent;
	}
	return 0;
}

int pyframes_site_frame(struct pyframes *p, uint64_t key,
			struct frame **frames, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4;
		struct frame *v = realloc(*frames, c * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		*frames = v;
		*cap = c;
	}
	struct pynode node = { 0, (uint32_t)(key >> 32 & 0x7fffffff), 0, 0,
			       (int32_t)(key & 0xffffffff) };
	if (python_frame(p, &node, &(*frames)[*n]))
		return -1;
	(*frames)[*n].offset = 0;
	(*n)++;
	return 0;
}

static int is_eval(const struct frame *f)
{
	return !f->python && f->function &&
	       !strcmp(f->function, "_PyEval_EvalFrameDefault");
}

static int is_libc(const char *path)
{
	const char *b = strrchr(path, '/');
	return !strncmp(b ? b + 1 : path, "libc.so", 7);
}

static void frame_drop(struct frame *f)
{
	free(f->function);
	free(f->file);
	f->function = f->file = NULL;
}

int pyframes_merge(struct pyframes *p, const uint64_t *ids, size_t nids,
		   enum pyframes_mode mode, struct frame *nv, size_t nn,
		   struct frame **out, size_t *nout)
{
	uint32_t chain[CHAIN_MAX];
	size_t nc = 0;
	for (uint32_t k = mode == PYFRAMES_NATIVE ? 0 : python_of(p, ids, nids);
	     k && k < p->nnodes && nc < CHAIN_MAX; k = p->nodes[k].parent)
		chain[nc++] = k;
	size_t real = 0;
	for (size_t i = 0; i < nc; i++)
		real += !(p->nodes[chain[i]].flags & HS_PY_NONE);
	if (!real) {
		*out = nv;
		*nout = nn;
		return 0;
	}
	struct frame *v = calloc(nn + nc, sizeof(*v));
	size_t o = 0, g = 0;
	if (!v)
		goto oom;
	/* Python frames from chain[g] to the end of their eval call */
#define EMIT_GROUP(all)                                                        \
	for (; g < nc; g++) {                                                  \
		struct pynode *pn = &p->nodes[chain[g]];                       \
		if (!(pn->flags & HS_PY_NONE) && python_frame(p, pn, &v[o++])) \
			goto oom;                                              \
		if (!(all) && (pn->flags & HS_PY_ENTRY)) {                     \
			g++;                                                   \
			break;                                                 \
		}                                                              \
	}
	if (mode == PYFRAMES_PYTHON) {
		EMIT_GROUP(1);
		symbols_frames_free(nv, nn);
		*out = v;
		*nout = o;
		return 0;
	}
	const char *interp = NULL; /* the interpreter's module */
	for (size_t i = 0; i < nn; i++) {
		struct frame *f = &nv[i];
		if (is_eval(f) && g < nc) {
			interp = f->module;
			/* what was inlined into the eval loop goes with it */
			while (o > 0 && v[o - 1].inlined && !v[o - 1].python)
				frame_drop(&v[--o]);
			frame_drop(f);
			EMIT_GROUP(0);
			continue;
		}
		/* outside the innermost call of the interpreter, its own
		 * frames only call the next Python function; outside the
		 * outermost, the C library's start the process or thread */
		if (interp && f->module &&
		    (!strcmp(f->module, interp) ||
		     (g == nc && is_libc(f->module)))) {
			frame_drop(f);
			continue;
		}
		v[o++] = *f;
		f->function = f->file = NULL; /* moved */
	}
	EMIT_GROUP(1);
#undef EMIT_GROUP
	symbols_frames_free(nv, nn);
	*out = v;
	*nout = o;
	return 0;
oom:
	symbols_frames_free(v, o);
	symbols_frames_free(nv, nn);
	return hs_error("out of memory");
}
