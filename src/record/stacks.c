/* A program allocates from few distinct stacks, over and over, so each
 * thread keeps three caches in front of the table:
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

/* The thread's previous Python stack: raw frames and their node ids. */
struct py_path {
	int n;
	struct py_raw raw[PY_DEPTH];
	uint32_t ids[PY_DEPTH];
};

/* Mapped, not in TLS: threads with tiny stacks stay possible. */
struct cache {
	struct leaf leaves[LEAVES];
	struct stacks_keyed keyed[STACKS_KEYED];
	struct path paths[PATHS];
	struct py_path py;
};

static __thread struct {
	struct path last; /* without a cache: the previous stack */
	int done;         /* the thread is ending: no cache any more */
	struct cache *cache;
	uint32_t py_at;   /* 1 + the Python node of the thread's last
			   * HS_EXT_PY_AT; 0: none written yet */
} path HS_TLS;
__thread struct stacks_keyed *stacks_keyed HS_TLS;

static struct stackmap *table;
static struct stackmap *py_table; /* Python frame nodes, ids of their own */
static pthread_key_t cache_key;
static int have_cache_key;

/* Runs as the thread ends; later destructors may still allocate, and
 * must find no cache rather than an unmapped one. */
static void cache_gone(void *p)
{
	stacks_keyed = NULL;
	path.cache = NULL;
	path.done = 1;
	rmem_unmap(p, sizeof(struct cache));
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
	path.last.n = 0;
	path.py_at = 0;
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

/* The stack's id by the tree, writing the nodes not seen before.  The
 * outer part it shares with pa, a stack of the thread's, is reused
 * without a lookup; pa becomes this stack. */
static uint32_t intern_path(struct path *pa, const uintptr_t *ips, int n,
			    uint8_t **pp, int *fresh)
{
	int m = pa->n;
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
		int is_new;
		uint32_t id = stackmap_intern(table, parent, ips[i], &is_new);
		if (!id) {
			hs_fail("out of memory for the stack table", ENOMEM);
			pa->n = 0;
			return 0;
		}
		if (is_new)
			*pp = enc_stack(*pp, id, parent, ips[i]);
		if (is_new) {
			hs_rec.counts[HS_COUNT_STACKS]++;
			*fresh = 1;
		}
		ids[i] = id;
	}
	memcpy(pa->ips, ips, (size_t)n * sizeof(*ips));
	memcpy(pa->ids, ids, (size_t)n * sizeof(*ids));
	pa->n = n;
	return n ? ids[0] : 0;
}

/* Four lanes, each a multiply-xorshift chain over every fourth address,
 * so that their multiplications overlap instead of waiting on each other
 * (the hash of every allocation's stack is on the hot path). */
#define HASH_M 0xff51afd7ed558ccdull
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
		return &path.last;
	uint64_t h = 0;
	for (int i = n > ROOT_FRAMES ? n - ROOT_FRAMES : 0; i < n; i++)
		h = lane(h, ips[i]);
	return &c->paths[h >> 32 & (PATHS - 1)];
}

/* ---- Python frames ---- */

int stacks_py_common(const struct py_raw *f, int n)
{
	struct cache *c = thread_cache();
	if (!c)
		return -1;
	const struct py_path *pp = &c->py;
	int m = pp->n, k = 0;
	while (k < n && k < m) {
		const struct py_raw *a = &f[n - 1 - k], *b = &pp->raw[m - 1 - k];
		if (a->code != b->code || a->lines != b->lines ||
		    a->where != b->where)
			break;
		k++;
	}
	return k;
}

uint32_t stacks_py_intern(const struct py_raw *f, const uint32_t *codes,
			  int n, int common, uint8_t **pp)
{
	struct py_path *path_py = &thread_cache()->py;
	uint32_t ids[PY_DEPTH];
	int m = path_py->n;
	if (common == n && n == m)
		return n ? path_py->ids[0] : 0;
	for (int k = 0; k < common; k++)
		ids[n - 1 - k] = path_py->ids[m - 1 - k];
	for (int i = n - 1 - common; i >= 0; i--) {
		uint32_t parent = i == n - 1 ? 0 : ids[i + 1];
		uint64_t key = (uint64_t)codes[i] << 32 | f[i].where;
		int is_new;
		uint32_t id = stackmap_intern(py_table, parent, key, &is_new);
		if (!id) {
			hs_fail("out of memory for the stack table", ENOMEM);
			path_py->n = 0;
			return 0;
		}
		if (is_new)
			*pp = enc_py_frame(*pp, id, parent, codes[i],
					   f[i].where >> 2, f[i].where & 3);
		ids[i] = id;
	}
	memcpy(path_py->raw, f, (size_t)n * sizeof(*f));
	memcpy(path_py->ids, ids, (size_t)n * sizeof(*ids));
	path_py->n = n;
	return n ? ids[0] : 0;
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
	return intern_path(c ? path_of(v, m) : &path.last, v, m, pp, fresh);
}

uint8_t *stacks_py_at(uint32_t python, uint8_t *p)
{
	if (path.py_at == python + 1)
		return p;
	path.py_at = python + 1;
	return enc_py_at(p, python);
}

uint32_t stacks_intern(const uintptr_t *ips, int n, uint64_t key,
		       int trimmed, uint8_t **pp, int *fresh)
{
	struct cache *c = thread_cache();
	if (!c)
		return trimmed ? intern_trimmed(NULL, ips, n, pp, fresh)
			       : intern_path(&path.last, ips, n, pp, fresh);
	struct stacks_keyed *k = &c->keyed[key & (STACKS_KEYED - 1)];
	if (key && k->key == key && k->trimmed == (uint32_t)trimmed && k->id)
		return k->id;
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
