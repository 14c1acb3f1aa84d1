/* A program allocates from few distinct stacks, over and over, so each
 * thread keeps four caches in front of the table:
 * - chain: the nodes of the frames of the unwinder's kept walk; a stack
 *   that shares its outer part interns only its new inner frames;
 * - keyed: the ids of the stacks the caller named by a key (the walks the
 *   unwinder keeps) and Python stack: coming back to one costs a compare
 *   (stacks_known);
 * - leaves: its recent whole stacks by a 64-bit hash of their return
 *   addresses (and depth) and Python stack, which saves walking the tree
 *   (and trimming the native stack of a Python one);
 * - paths: its recent stacks by their outermost frames; a new stack
 *   usually shares its outer part with the one there, and reuses it
 *   without a lookup.  Stacks cut at the depth limit are why there are
 *   several: each is rooted at whatever frame the limit fell on, so one a
 *   frame deeper shares nothing with the previous stack (an interpreter's
 *   deep stacks made twelve lookups per allocation with one path), but
 *   much with the last one rooted where it is.
 * A forked child's trace has ids of its own: the one thread there empties
 * its caches. */
#include "stacks.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "../base/rmem.h"
#include "internal.h"
#include "python.h"
#include "stackmap.h"

#define HASH_M 0xff51afd7ed558ccdull
#define LEAVES 1024
#define PATHS 32
#define ROOT_FRAMES 4 /* outermost frames that choose a path */

/* A recent stack: a hash of its return addresses, and whether it was
 * trimmed (stacks_intern). */
struct leaf {
	uint64_t hash;
	uint32_t trimmed, n, id;
};

struct path {
	int n; /* frames; 0: empty */
	uintptr_t ips[HS_DEPTH_MAX];
	uint32_t ids[HS_DEPTH_MAX];
};

/* The thread's Python stack, t[cur]: its capture and the node ids of its
 * frames; the next capture goes in the other trail. */
struct py_path {
	int cur;
	struct py_trail t[2];
	uint32_t ids[PY_DEPTH];
	uint32_t code0; /* the trace id of t[cur].raw[0]'s code; 0: none */
	struct py_trail full; /* py_verify's (pages untouched without it) */
	/* a capture's PY_MOVED, until its stack is interned: the move is
	 * in the other trail, t[!cur].raw[0] and t[!cur].v[0].instr */
	int moved;
};

/* The nodes of the unwinder's kept walk (unwind.h), frame by frame from
 * the outermost (position 0): a stack that shares the walk's outer part
 * needs only its new inner frames interned, nothing hashed or compared
 * (an interpreter's stacks are 70 frames deep, of which a few change).
 * For a stack with Python frames the nodes are those of the stack
 * trimmed (python_trim), in two kinds:
 * - u[j]: the stack of frames 0..j whose innermost eval frame is e (all
 *   frames kept inside it), for e <= j < nu;
 * - t[j]: frames 0..j all outside the innermost eval frame (the
 *   interpreter's own left out; the node of the nearest kept frame
 *   outwards, 0 if none), for j < nt.
 * Without Python frames, u[j] for j < nu, e = -1: every frame kept. */
struct chain {
	uint64_t serial; /* the kept walk they are of; 0: none */
	int trimmed;     /* as stacks_intern's */
	int e, nu, nt;
	uint32_t u[HS_DEPTH_MAX], t[HS_DEPTH_MAX];
};

/* The thread's recent nodes, in front of the table's own front cache:
 * the inner frames a stack adds to the chain's (a few per allocation,
 * the same ones over and over) are found in memory the thread keeps
 * warm, not in the table's, which every new node of every thread
 * writes to.  Direct-mapped by near_slot; id 0: empty. */
#define NEAR_BITS 10
#define PY_NEAR_BITS 8 /* the same for Python frame nodes */
struct near {
	uintptr_t ip;
	uint32_t parent, id;
};

/* Mapped, not in TLS: threads with tiny stacks stay possible. */
struct cache {
	struct chain chain;
	struct near near[1u << NEAR_BITS];
	struct near py_near[1u << PY_NEAR_BITS];
	struct leaf leaves[LEAVES];
	struct stacks_keyed keyed[STACKS_KEYED];
	struct path paths[PATHS];
	struct py_path py;
};

/* Small: glibc takes a thread's static TLS out of its stack (a thread
 * without a cache interns every stack from its root). */
static __thread struct {
	int done;         /* the thread is ending: no cache any more */
	struct cache *cache;
} path HS_TLS;
__thread struct stacks_keyed *stacks_keyed HS_TLS;
__thread uint32_t stacks_py_at_last HS_TLS;

static struct stackmap *table;
static struct stackmap *py_table; /* Python frame nodes, ids of their own */
static pthread_key_t cache_key;
static int have_cache_key;

/* Runs as the thread ends; later destructors may still allocate, and
 * must find no cache rather than an unmapped one.  The thread's slot of
 * the recorder's lock goes back too (every thread that records a stack
 * has this cache). */
static void cache_gone(void *p)
{
	stacks_keyed = NULL;
	path.cache = NULL;
	path.done = 1;
	rmem_unmap(p, sizeof(struct cache));
	rlock_leave(&hs_rec.lock, hs_tid());
}

int stacks_create(void)
{
	table = stackmap_create();
	py_table = stackmap_create();
	if (!table || !py_table)
		return -1;
	have_cache_key = pthread_key_create(&cache_key, cache_gone) == 0;
	return 0;
}

int stacks_reset(void)
{
	stacks_py_at_last = 0;
	/* zero pages again, resident as they are used */
	if (path.cache &&
	    madvise(path.cache, sizeof(struct cache), MADV_DONTNEED))
		memset(path.cache, 0, sizeof(struct cache));
	python_reset();
	return stackmap_reset(table) || stackmap_reset(py_table) ? -1 : 0;
}

/* Maps the thread's cache, on its first stack (NULL if it cannot be). */
static __attribute__((noinline)) void map_cache(void)
{
	if (have_cache_key && !path.done) {
		/* the key's destructor unmaps it when the thread ends */
		path.cache = rmem_map(sizeof(struct cache));
		internal_begin();
		int rc = path.cache ? pthread_setspecific(cache_key, path.cache)
				    : 0;
		internal_end();
		if (rc) {
			rmem_unmap(path.cache, sizeof(struct cache));
			path.cache = NULL;
		}
		stacks_keyed = path.cache ? path.cache->keyed : NULL;
		/* cache_gone gives its slot of the lock back */
		hs_rlock_leaves = path.cache != NULL;
	}
}

/* The thread's cache; NULL if it has none.  Inline: each stack with
 * Python frames asks three times. */
static inline struct cache *thread_cache(void)
{
	if (__builtin_expect(!path.cache, 0))
		map_cache();
	return path.cache;
}

/* The node (parent, ip), its record written if it is new; 0 when the
 * table cannot grow (recording stops). */
static inline uint32_t node(uint32_t parent, uintptr_t ip, uint8_t **pp,
			    int *fresh)
{
	int is_new;
	uint32_t id = stackmap_intern(table, parent, ip, &is_new);
	if (__builtin_expect(!id, 0)) {
		hs_fail("out of memory for the stack table", ENOMEM);
		return 0;
	}
	if (is_new) {
		*pp = enc_stack(*pp, id, parent, ip);
		hs_rec.counts[HS_COUNT_STACKS]++;
		*fresh = 1;
	}
	return id;
}

/* The entry of a near cache of 2^bits entries where (parent, ip) goes. */
static inline struct near *near_slot(struct near *tab, unsigned bits,
				     uint32_t parent, uintptr_t ip)
{
	uint64_t h = ((uint64_t)ip ^ (uint64_t)parent << 20) * HASH_M;
	return &tab[h >> (64 - bits)];
}

static inline int near_is(const struct near *e, uint32_t parent,
			  uintptr_t ip)
{
	return e->id && e->ip == ip && e->parent == parent;
}

/* node() through the thread's near cache. */
static inline uint32_t near_node(struct cache *c, uint32_t parent,
				 uintptr_t ip, uint8_t **pp, int *fresh)
{
	struct near *e = near_slot(c->near, NEAR_BITS, parent, ip);
	if (near_is(e, parent, ip))
		return e->id;
	uint32_t id = node(parent, ip, pp, fresh);
	*e = (struct near){ ip, parent, id };
	return id;
}

/* The stack's id by the tree, writing the nodes not seen before.  The
 * outer part it shares with pa, a stack of the thread's, is reused
 * without a lookup; pa becomes this stack (NULL: none). */
static uint32_t intern_path(struct path *pa, const uintptr_t *ips, int n,
			    uint8_t **pp, int *fresh)
{
	int m = pa ? pa->n : 0;
	int c = 0;
	while (c < n && c < m && ips[n - 1 - c] == pa->ips[m - 1 - c])
		c++;
	if (c == n && n == m)
		return n ? pa->ids[0] : 0;
	uint32_t ids[HS_DEPTH_MAX];
	for (int k = 0; k < c; k++)
		ids[n - 1 - k] = pa->ids[m - 1 - k];
	for (int i = n - 1 - c; i >= 0; i--) {
		uint32_t parent = i == n - 1 ? 0 : ids[i + 1];
		uint32_t id = node(parent, ips[i], pp, fresh);
		if (!id) {
			if (pa)
				pa->n = 0;
			return 0;
		}
		ids[i] = id;
	}
	if (!pa)
		return n ? ids[0] : 0;
	memcpy(pa->ips, ips, (size_t)n * sizeof(*ips));
	memcpy(pa->ids, ids, (size_t)n * sizeof(*ids));
	pa->n = n;
	return n ? ids[0] : 0;
}

/* Four lanes, each a multiply-xorshift chain over every fourth address,
 * so that their multiplications overlap instead of waiting on each other
 * (the hash of every allocation's stack is on the hot path). */
static inline uint64_t lane(uint64_t h, uint64_t ip)
{
	h = (h ^ ip) * HASH_M;
	return h ^ (h >> 29);
}

static inline uint64_t stack_hash(const uintptr_t *ips, int n)
{
	uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	uint64_t b = 0xc2b2ae3d27d4eb4full, c = 0x165667b19e3779f9ull;
	uint64_t d = 0x85ebca77c2b2ae63ull;
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		a = lane(a, ips[i]);
		b = lane(b, ips[i + 1]);
		c = lane(c, ips[i + 2]);
		d = lane(d, ips[i + 3]);
	}
	for (; i < n; i++)
		a = lane(a, ips[i]);
	uint64_t h = a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^
		     (d << 47 | d >> 17);
	return lane(h, 0);
}

/* The path for a stack: by its outermost frames, where a stack cut at the
 * depth limit differs from the ones cut a frame higher or lower. */
static struct path *path_of(const uintptr_t *ips, int n)
{
	struct cache *c = thread_cache();
	if (!c)
		return NULL;
	uint64_t h = 0;
	for (int i = n > ROOT_FRAMES ? n - ROOT_FRAMES : 0; i < n; i++)
		h = lane(h, ips[i]);
	return &c->paths[h >> 32 & (PATHS - 1)];
}

/* ---- Python frames ---- */

static inline int raw_same(const struct py_raw *a, const struct py_raw *b)
{
	return a->code == b->code && a->lines == b->lines &&
	       a->where == b->where;
}

/* How many outermost frames f[0..n) has the same as g[0..m). */
static int outer_common(const struct py_raw *f, int n, const struct py_raw *g,
			int m)
{
	int k = 0;
	while (k < n && k < m && raw_same(&f[n - 1 - k], &g[m - 1 - k]))
		k++;
	return k;
}

static inline __attribute__((always_inline)) int
py_capture_in(const struct py_trail **now, int *common, uint32_t *code0)
{
	struct cache *c = thread_cache();
	*code0 = 0;
	if (!c)
		return 0;
	struct py_path *pp = &c->py;
	const struct py_trail *last = &pp->t[pp->cur];
	struct py_trail *t = &pp->t[!pp->cur];
	int n = python_capture(t, last, common);
	*now = t;
	pp->moved = 0;
	if (*common == PY_SAME) {
		*now = last;
		*common = n;
		return n;
	}
	if (*common == PY_MOVED) { /* applied by stacks_py_intern */
		pp->moved = 1;
		*now = last;
		*common = n - 1;
		*code0 = pp->code0;
		return n;
	}
	if (n && *common < 0) /* by the frames put out */
		*common = outer_common(t->raw, n, last->raw, last->n);
	return n;
}

/* Tests (HS_ENV_TEST_PY_VERIFY): the n frames a capture gave (got's,
 * with raw0 for its first if not NULL) and the common outer part it
 * claimed with last, against a full read; recording stops if they
 * differ. */
static __attribute__((noinline)) void
py_verify(struct py_path *pp, const struct py_trail *got,
	  const struct py_raw *raw0, int n, int common,
	  const struct py_trail *last)
{
	struct py_trail *full = &pp->full;
	int c;
	int m = python_capture(full, NULL, &c);
	int bad = m != n ||
		  (n && (common < 0 || common > n ||
			 common > outer_common(full->raw, n, last->raw,
					       last->n)));
	for (int i = 0; !bad && i < n; i++)
		bad = !raw_same(i == 0 && raw0 ? raw0 : &got->raw[i],
				&full->raw[i]);
	if (bad)
		hs_fail("the Python frames of a capture differ from a full "
			"read of them",
			0);
}

/* Inlined into the event paths of events.c where the recorder is
 * optimized at link time (gcc), as is stacks_py_intern: each call and its
 * registers were a sixth of what Python frames cost a loop's event
 * (callgrind); elsewhere an ordinary function. */
__attribute__((always_inline)) inline int
stacks_py_capture(const struct py_trail **now, int *common, uint32_t *code0)
{
	int n = py_capture_in(now, common, code0);
	if (__builtin_expect(hs_settings.test_py_verify, 0) && path.cache) {
		struct py_path *pp = &path.cache->py;
		/* a move is carried in the other trail's first frame */
		const struct py_raw *raw0 =
			pp->moved ? &pp->t[!pp->cur].raw[0] : NULL;
		py_verify(pp, *now, raw0, n, *common, &pp->t[pp->cur]);
	}
	return n;
}

/* py_node's lookup in the table, for a node not in the thread's near
 * cache (e, where it goes there). */
static __attribute__((noinline)) uint32_t
py_node_far(struct cache *c, struct near *e, uint32_t parent, uint32_t code,
	    uint64_t where, uint8_t **pp)
{
	uint64_t key = (uint64_t)code << 32 | where;
	int is_new;
	uint32_t id = stackmap_intern(py_table, parent, key, &is_new);
	*e = (struct near){ key, parent, id };
	if (!id) {
		struct py_path *path_py = &c->py;
		hs_fail("out of memory for the stack table", ENOMEM);
		path_py->t[0].n = path_py->t[1].n = 0;
		path_py->t[0].seen = path_py->t[1].seen = -1;
		return 0;
	}
	if (is_new)
		*pp = enc_py_frame(*pp, id, parent, code, where >> 2, where & 3);
	return id;
}

/* The node of Python frame f under parent, its record written if it is
 * new; 0 when the table cannot grow (the thread's trails are emptied).
 * Found in the thread's near cache, inline; else by py_node_far. */
static inline __attribute__((always_inline)) uint32_t
py_node(struct cache *c, uint32_t parent, uint32_t code, uint64_t where,
	uint8_t **pp)
{
	uint64_t key = (uint64_t)code << 32 | where;
	struct near *e = near_slot(c->py_near, PY_NEAR_BITS, parent, key);
	if (near_is(e, parent, key))
		return e->id;
	return py_node_far(c, e, parent, code, where, pp);
}

static __attribute__((noinline)) uint32_t
py_intern(struct cache *c, const struct py_trail *now, const uint32_t *codes,
	  int common, uint8_t **pp)
{
	struct py_path *path_py = &c->py;
	const struct py_trail *last = &path_py->t[path_py->cur];
	const struct py_raw *f = now->raw;
	uint32_t ids[PY_DEPTH];
	int n = now->n, m = last->n;
	/* a fork in between (from a handler) emptied the cache: none */
	if (common > m)
		common = 0;
	path_py->cur = (int)(now - path_py->t);
	if (common == n && n == m)
		return n ? path_py->ids[0] : 0;
	for (int k = 0; k < common; k++)
		ids[n - 1 - k] = path_py->ids[m - 1 - k];
	for (int i = n - 1 - common; i >= 0; i--) {
		uint32_t parent = i == n - 1 ? 0 : ids[i + 1];
		if (!(ids[i] = py_node(c, parent, codes[i], f[i].where, pp)))
			return 0;
	}
	memcpy(path_py->ids, ids, (size_t)n * sizeof(*ids));
	path_py->code0 = n > common ? codes[0] : 0; /* else not looked up */
	return n ? ids[0] : 0;
}

__attribute__((always_inline)) inline uint32_t
stacks_py_intern(const struct py_trail *now, const uint32_t *codes, int common,
		 uint8_t **pp)
{
	struct cache *c = thread_cache();
	struct py_path *path_py = &c->py;
	struct py_trail *last = &path_py->t[path_py->cur];
	if (now == last) {
		int n = last->n;
		/* the thread's last Python stack (PY_SAME) */
		if (common == n)
			return n ? path_py->ids[0] : 0;
		/* that with its innermost frame further on (PY_MOVED); a
		 * handler's event on this thread has no Python frames
		 * (rec_nested), so no other capture came in between */
		if (path_py->moved && common == n - 1) {
			const struct py_trail *mv = &path_py->t[!path_py->cur];
			path_py->moved = 0;
			last->raw[0].where = mv->raw[0].where;
			last->v[0].instr = mv->v[0].instr;
			uint32_t id = py_node(c, n > 1 ? path_py->ids[1] : 0,
					      codes[0], last->raw[0].where, pp);
			path_py->ids[0] = id;
			path_py->code0 = codes[0];
			return id;
		}
	}
	return py_intern(c, now, codes, common, pp);
}

/* Stack ips[0..n) without what its Python frames stand for
 * (python_trim), interned. */
static uint32_t intern_trimmed(struct cache *c, const uintptr_t *ips, int n,
			       uint8_t **pp, int *fresh)
{
	uintptr_t v[HS_DEPTH_MAX];
	int eval;
	memcpy(v, ips, (size_t)n * sizeof(*v));
	int m = python_trim(v, n, &eval);
	return intern_path(c ? path_of(v, m) : NULL, v, m, pp, fresh);
}

uint8_t *stacks_py_at_put(uint32_t python, uint8_t *p)
{
	stacks_py_at_last = python + 1;
	return enc_py_at(p, python);
}

/* ---- by the unwinder's kept walk ---- */

/* What the chain keeps of the walk before this capture: the part the
 * capture shared with it. */
static void chain_follow(struct chain *ch, const struct unwind_walk *w,
			 int trimmed)
{
	if (!w->prior || ch->serial != w->prior || ch->trimmed != trimmed) {
		ch->nu = ch->nt = 0;
	} else {
		if (ch->nu > w->shared)
			ch->nu = w->shared;
		if (ch->nt > w->shared)
			ch->nt = w->shared;
		if (ch->nu <= ch->e)
			ch->nu = 0;
	}
	ch->serial = w->kept;
	ch->trimmed = trimmed;
}

/* Frame j of a stack of n frames, innermost first, counted from the
 * outermost. */
#define AT_POS(ips, n, j) ((ips)[(n) - 1 - (j)])

/* t[0..p) made; 0 when the table cannot grow. */
static int chain_t(struct cache *c, const uintptr_t *ips, int n, int p,
		   uint8_t **pp, int *fresh)
{
	struct chain *ch = &c->chain;
	for (int j = ch->nt; j < p; j++) {
		uintptr_t ip = AT_POS(ips, n, j);
		uint32_t parent = j ? ch->t[j - 1] : 0;
		if (python_is_interp(ip))
			ch->t[j] = parent; /* left out */
		else if (!(ch->t[j] = near_node(c, parent, ip, pp, fresh)))
			return 0;
	}
	if (ch->nt < p)
		ch->nt = p;
	return 1;
}

/* u[r - 1] made for the stack ips[0..n), whose frames 0..r-1 are the
 * chain's: its node; 0 when the table cannot grow. */
static uint32_t chain_u(struct cache *c, const uintptr_t *ips, int n, int r,
			uint8_t **pp, int *fresh)
{
	struct chain *ch = &c->chain;
	int from = ch->nu;
	if (!ch->nu || ch->e >= r) {
		/* anew, from the innermost eval frame of the shared part */
		int e = -1;
		if (ch->trimmed)
			for (int j = r - 1; j >= 0 && e < 0; j--)
				if (python_is_eval(AT_POS(ips, n, j)))
					e = j;
		ch->e = e;
		from = e < 0 ? 0 : e;
	}
	for (int j = from; j < r; j++) {
		uintptr_t ip = AT_POS(ips, n, j);
		uint32_t parent;
		if (j == ch->e || (ch->trimmed && j > ch->e &&
				   python_is_eval(ip))) {
			/* an eval frame, the innermost so far: the frames
			 * outside it trimmed */
			if (!chain_t(c, ips, n, j, pp, fresh))
				return 0;
			ch->e = j;
			parent = j ? ch->t[j - 1] : 0;
		} else {
			parent = j ? ch->u[j - 1] : 0;
		}
		if (!(ch->u[j] = near_node(c, parent, ip, pp, fresh)))
			return 0;
	}
	if (ch->nu < r)
		ch->nu = r;
	return ch->u[r - 1];
}

/* The id of the stack ips[0..n) by the chain, if the walk that found it
 * shares its outer part with the chain and the frames it does not share
 * are all inside the innermost eval frame; else 0 with *ok 0 (and 0 with
 * *ok 1 when the table cannot grow). */
static uint32_t chain_intern(struct cache *c, const uintptr_t *ips, int n,
			     int shared, uint8_t **pp, int *fresh, int *ok)
{
	struct chain *ch = &c->chain;
	int r = shared < n ? shared : n;
	*ok = 0;
	if (r <= 0)
		return 0;
	if (ch->trimmed)
		for (int i = 0; i < n - r; i++)
			if (python_is_eval(ips[i]))
				return 0;
	*ok = 1;
	uint32_t id = chain_u(c, ips, n, r, pp, fresh);
	for (int j = r; j < n && id; j++)
		id = ch->u[j] = near_node(c, id, AT_POS(ips, n, j), pp, fresh);
	if (!id) {
		ch->serial = 0;
		return 0;
	}
	if (ch->nu < n)
		ch->nu = n;
	return id;
}

uint32_t stacks_intern(const uintptr_t *ips, int n,
		       const struct unwind_walk *walk, int trimmed,
		       uint8_t **pp, int *fresh)
{
	struct cache *c = thread_cache();
	if (!c)
		return trimmed ? intern_trimmed(NULL, ips, n, pp, fresh)
			       : intern_path(NULL, ips, n, pp, fresh);
	uint64_t key = walk ? walk->key : 0;
	struct stacks_keyed *k = &c->keyed[key & (STACKS_KEYED - 1)];
	if (walk)
		chain_follow(&c->chain, walk, trimmed);
	if (key && k->key == key && k->trimmed == (uint32_t)trimmed && k->id)
		return k->id;
	if (walk && walk->rooted && walk->kept) {
		int ok;
		uint32_t id = chain_intern(c, ips, n, walk->shared,
					   pp, fresh, &ok);
		if (ok) {
			if (key && id)
				*k = (struct stacks_keyed){
					key, (uint32_t)trimmed, id
				};
			return id;
		}
	}
	/* by the stack as captured: a hit costs no trim */
	uint64_t h = stack_hash(ips, n) ^ (uint64_t)trimmed * HASH_M;
	struct leaf *l = &c->leaves[h & (LEAVES - 1)];
	uint32_t id;
	if (l->hash == h && l->n == (uint32_t)n &&
	    l->trimmed == (uint32_t)trimmed && l->id) {
		id = l->id;
	} else {
		id = trimmed ? intern_trimmed(c, ips, n, pp, fresh)
			     : intern_path(path_of(ips, n), ips, n, pp, fresh);
		*l = (struct leaf){ h, (uint32_t)trimmed, (uint32_t)n, id };
	}
	if (key && id)
		*k = (struct stacks_keyed){ key, (uint32_t)trimmed, id };
	return id;
}
