#include "heapmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "replay.h"

/* glibc's non-main heaps are HEAP_MAX_SIZE = 64 MiB, aligned to it. */
#define WINDOW_SHIFT 26
/* The smallest mmap threshold glibc uses unless told otherwise: blocks
 * below it always come from an arena. */
#define MMAP_MIN (128u * 1024)
/* The brk heap is contiguous from heap_start; beyond this it is not. */
#define BRK_SPAN (64ull << 30)
/* Blocks this large are kept whole, as one extent in the table of mmapped
 * blocks, never page by page: a count per page across a block of any
 * size (a 100 GiB malloc, or the 3.4e15 bytes a corrupt trace claims) is
 * memory and time without bound.  glibc mmaps every request this large
 * (its mmap threshold is at most 32 MiB), and a block of one 64 MiB
 * window or more shares its pages with no other block but at its ends. */
#define LARGE (1ull << WINDOW_SHIFT)
/* Probes of the replay per page when looking for a gap's block. */
#define PROBES_MAX (1u << 22)
#define NOT_FOUND UINT32_MAX

struct region {
	uint64_t first;     /* page number of count[0] */
	uint32_t *count;    /* live blocks touching each page */
	uint64_t npages;    /* entries of count */
	uint64_t lo;        /* span start: lowest page ever occupied (the
			     * brk heap: heap_start's page) */
	uint64_t hi;        /* 1 + highest occupied page; 0: none */
	uint64_t live;      /* bytes of live blocks in the region */
	uint64_t occupied;  /* pages with count > 0 */
	uint64_t key;       /* window number; UINT64_MAX: the brk heap */
	int arena;          /* has held a block below MMAP_MIN */
};

struct mapped {
	uint64_t addr, pages; /* addr 0: empty */
};

struct heapmap {
	int changed; /* a block came or went since the pins were found */
	uint64_t page_size;
	unsigned page_shift;
	uint64_t heap_start;
	int glibc;
	struct region brk;
	struct region **win; /* open addressing over key */
	size_t win_mask, nwin;
	struct region *last; /* the region of the previous block */
	struct mapped *map;  /* directly mmapped blocks */
	size_t map_mask, nmap;
	/* totals over the regions */
	uint64_t span_pages, mapped_pages, regions;
	/* heapmap_pins' result and scratch */
	struct heapmap_pin *pins;
	size_t npins, pins_cap;
	uint32_t *pin_index; /* open addressing over slot */
	size_t pin_mask;
};

static inline size_t mix(uint64_t x, size_t mask)
{
	return (size_t)(x * 0x9e3779b97f4a7c15ull >> 20) & mask;
}

struct heapmap *heapmap_create(uint64_t page_size, uint64_t heap_start,
			       int glibc)
{
	struct heapmap *h = calloc(1, sizeof(*h));
	if (!h)
		goto oom;
	/* Linux pages are 4 KiB to 1 MiB, powers of two; any other value is
	 * unknown or corrupt (a smaller one would make each 64 MiB window's
	 * counts grow to match) */
	if (page_size < 4096 || (page_size & (page_size - 1)) ||
	    page_size > (1u << 20))
		page_size = 4096;
	h->page_size = page_size;
	while ((1ull << h->page_shift) < page_size)
		h->page_shift++;
	h->heap_start = heap_start;
	h->glibc = glibc;
	h->brk.key = UINT64_MAX;
	h->brk.first = h->brk.lo = heap_start >> h->page_shift;
	h->win_mask = 63;
	h->win = calloc(h->win_mask + 1, sizeof(*h->win));
	h->map_mask = 63;
	h->map = calloc(h->map_mask + 1, sizeof(*h->map));
	if (!h->win || !h->map)
		goto oom;
	return h;
oom:
	heapmap_destroy(h);
	hs_error("out of memory");
	return NULL;
}

void heapmap_destroy(struct heapmap *h)
{
	if (!h)
		return;
	for (size_t i = 0; h->win && i <= h->win_mask; i++) {
		if (h->win[i]) {
			free(h->win[i]->count);
			free(h->win[i]);
		}
	}
	free(h->win);
	free(h->brk.count);
	free(h->map);
	free(h->pins);
	free(h->pin_index);
	free(h);
}

static struct region *window_find(const struct heapmap *h, uint64_t key)
{
	for (size_t i = mix(key, h->win_mask);; i = (i + 1) & h->win_mask) {
		if (!h->win[i] || h->win[i]->key == key)
			return h->win[i];
	}
}

static struct region *window_get(struct heapmap *h, uint64_t key)
{
	struct region *r = window_find(h, key);
	if (r)
		return r;
	if ((h->nwin + 1) * 2 > h->win_mask + 1) {
		size_t mask = h->win_mask * 2 + 1;
		struct region **t = calloc(mask + 1, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i <= h->win_mask; i++) {
			if (!h->win[i])
				continue;
			size_t j = mix(h->win[i]->key, mask);
			while (t[j])
				j = (j + 1) & mask;
			t[j] = h->win[i];
		}
		free(h->win);
		h->win = t;
		h->win_mask = mask;
	}
	r = calloc(1, sizeof(*r));
	uint64_t pages = 1ull << (WINDOW_SHIFT - h->page_shift);
	if (r)
		r->count = calloc(pages, sizeof(*r->count));
	if (!r || !r->count) {
		free(r);
		return NULL;
	}
	r->key = key;
	r->first = key << (WINDOW_SHIFT - h->page_shift);
	r->npages = pages;
	r->lo = UINT64_MAX;
	size_t i = mix(key, h->win_mask);
	while (h->win[i])
		i = (i + 1) & h->win_mask;
	h->win[i] = r;
	h->nwin++;
	return r;
}

/* The brk heap's count array reaches page `last`. */
static int brk_reach(struct heapmap *h, uint64_t last)
{
	struct region *r = &h->brk;
	uint64_t need = last - r->first + 1;
	if (need <= r->npages)
		return 0;
	uint64_t n = r->npages ? r->npages : 4096;
	while (n < need)
		n *= 2;
	uint32_t *c = realloc(r->count, n * sizeof(*c));
	if (!c)
		return -1;
	memset(c + r->npages, 0, (n - r->npages) * sizeof(*c));
	r->count = c;
	r->npages = n;
	return 0;
}

/* The span of r changed from old_span pages (was_live: r had blocks). */
static void span_moved(struct heapmap *h, const struct region *r,
		       uint64_t old_span, int was_live)
{
	uint64_t span = r->hi ? r->hi - r->lo : 0;
	h->span_pages += span - old_span;
	h->regions += (r->hi != 0) - was_live;
}

/* The count of page p, which r covers.  Indexed from r->first: a pointer
 * to page 0 (r->count - r->first) would lie far outside the array. */
static inline uint32_t *count_of(const struct region *r, uint64_t p)
{
	return &r->count[p - r->first];
}

/* Pages [p0, p1] of region r gain (+1) or lose (-1) a block that has
 * `bytes` of its bytes in them. */
static inline __attribute__((always_inline)) void
touch(struct heapmap *h, struct region *r, uint64_t p0, uint64_t p1,
      uint64_t bytes, int add)
{
	uint32_t *c = count_of(r, p0);
	const uint64_t n = p1 - p0;
	uint64_t p;
	if (add) {
		for (uint64_t i = 0; i <= n; i++)
			r->occupied += c[i]++ == 0;
		r->live += bytes;
		if (__builtin_expect(p0 < r->lo || p1 >= r->hi, 0)) {
			uint64_t old = r->hi ? r->hi - r->lo : 0;
			int was_live = r->hi != 0;
			if (p0 < r->lo)
				r->lo = p0;
			if (p1 + 1 > r->hi)
				r->hi = p1 + 1;
			span_moved(h, r, old, was_live);
		}
		return;
	}
	for (uint64_t i = 0; i <= n; i++)
		if (c[i]) /* else not added: an inconsistent trace */
			r->occupied -= --c[i] == 0;
	r->live -= bytes <= r->live ? bytes : r->live;
	if (__builtin_expect(p1 + 1 >= r->hi || !r->occupied, 0) &&
	    (!r->occupied || !*count_of(r, r->hi - 1))) {
		uint64_t old = r->hi ? r->hi - r->lo : 0;
		int was_live = r->hi != 0; /* not when the trace is wrong */
		if (!r->occupied) {
			r->hi = 0;
		} else {
			p = r->hi - 1;
			while (p > r->lo && !*count_of(r, p))
				p--;
			r->hi = p + 1;
		}
		span_moved(h, r, old, was_live);
	}
}

static struct mapped *map_slot(struct heapmap *h, uint64_t addr)
{
	for (size_t i = mix(addr >> 4, h->map_mask);;
	     i = (i + 1) & h->map_mask)
		if (!h->map[i].addr || h->map[i].addr == addr)
			return &h->map[i];
}

static int map_add(struct heapmap *h, uint64_t addr, uint64_t pages)
{
	if ((h->nmap + 1) * 2 > h->map_mask + 1) {
		struct mapped *old = h->map;
		size_t old_mask = h->map_mask;
		h->map_mask = old_mask * 2 + 1;
		h->map = calloc(h->map_mask + 1, sizeof(*h->map));
		if (!h->map) {
			h->map = old;
			h->map_mask = old_mask;
			return -1;
		}
		for (size_t i = 0; i <= old_mask; i++)
			if (old[i].addr)
				*map_slot(h, old[i].addr) = old[i];
		free(old);
	}
	struct mapped *m = map_slot(h, addr);
	h->nmap += !m->addr;
	if (m->addr)
		h->mapped_pages -= m->pages;
	*m = (struct mapped){ addr, pages };
	h->mapped_pages += pages;
	return 0;
}

/* Drops addr from the mmapped blocks: 1 if it was one. */
static int map_sub(struct heapmap *h, uint64_t addr)
{
	struct mapped *m = map_slot(h, addr);
	if (!m->addr)
		return 0;
	h->mapped_pages -= m->pages;
	/* backward-shift deletion */
	size_t i = (size_t)(m - h->map), j = i;
	for (;;) {
		j = (j + 1) & h->map_mask;
		if (!h->map[j].addr)
			break;
		size_t home = mix(h->map[j].addr >> 4, h->map_mask);
		if (((j - home) & h->map_mask) >= ((j - i) & h->map_mask)) {
			h->map[i] = h->map[j];
			i = j;
		}
	}
	h->map[i].addr = 0;
	h->nmap--;
	return 1;
}

static inline int in_brk(const struct heapmap *h, uint64_t addr)
{
	return h->heap_start && addr >= h->heap_start &&
	       addr - h->heap_start < BRK_SPAN;
}

/* glibc's chunk for a request of size bytes (x86_64 and the like: 8-byte
 * size fields, 16-byte alignment, 32-byte minimum); what a block takes
 * out of its heap. */
static inline uint64_t chunk_size(uint64_t size)
{
	uint64_t c = (size + 8 + 15) & ~(uint64_t)15;
	return c < 32 ? 32 : c;
}

/* Adds or drops [addr, addr + size) region by region: size < LARGE, so
 * one or two windows. */
static inline __attribute__((always_inline)) int
update(struct heapmap *h, uint64_t addr, uint64_t size, int add)
{
	uint64_t end = addr + size; /* exclusive */
	if (end < addr)
		end = UINT64_MAX;
	if (in_brk(h, addr)) {
		uint64_t p0 = addr >> h->page_shift;
		uint64_t p1 = (end - 1) >> h->page_shift;
		if (add && brk_reach(h, p1))
			return hs_error("out of memory");
		if (!add && p1 >= h->brk.first + h->brk.npages)
			return 0;
		touch(h, &h->brk, p0, p1, h->glibc ? chunk_size(size) : size,
		      add);
		return 0;
	}
	while (addr < end) {
		uint64_t key = addr >> WINDOW_SHIFT;
		uint64_t wend = (key + 1) << WINDOW_SHIFT;
		uint64_t stop = end < wend || !wend ? end : wend;
		struct region *r = h->last && h->last->key == key
					   ? h->last
					   : add ? window_get(h, key)
						 : window_find(h, key);
		if (!r) {
			if (add)
				return hs_error("out of memory");
		} else {
			h->last = r;
			if (add && h->glibc && size < MMAP_MIN)
				r->arena = 1;
			uint64_t bytes = stop - addr;
			if (h->glibc && stop == end && addr + size == end)
				bytes = chunk_size(size); /* the whole block */
			touch(h, r, addr >> h->page_shift,
			      (stop - 1) >> h->page_shift, bytes, add);
		}
		if (!wend)
			break;
		addr = stop;
	}
	return 0;
}

/* Pages of a block kept whole; glibc's mmapped chunks start 16 bytes
 * below the block. */
static uint64_t extent_pages(const struct heapmap *h, uint64_t addr,
			     uint64_t size)
{
	uint64_t first = (h->glibc && addr >= 16 ? addr - 16 : addr) >>
			 h->page_shift;
	uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;
	return ((end - 1) >> h->page_shift) - first + 1;
}

/* Whether addr lies in a window where glibc has put blocks below its mmap
 * threshold: a thread arena, whose large blocks are its own. */
static int in_arena(const struct heapmap *h, uint64_t addr)
{
	const struct region *r = window_find(h, addr >> WINDOW_SHIFT);
	return r && r->arena;
}

int heapmap_add(struct heapmap *h, uint64_t addr, uint64_t size)
{
	if (!size)
		return 0; /* holds no byte */
	h->changed = 1;
	if (size >= LARGE || (h->glibc && size >= MMAP_MIN &&
			      !in_brk(h, addr) && !in_arena(h, addr))) {
		if (map_add(h, addr, extent_pages(h, addr, size)))
			return hs_error("out of memory");
		return 0;
	}
	return update(h, addr, size, 1);
}

void heapmap_sub(struct heapmap *h, uint64_t addr, uint64_t size)
{
	if (!size)
		return;
	h->changed = 1;
	/* only blocks this large can be in the table of whole blocks */
	if (size >= (h->glibc ? MMAP_MIN : LARGE) && h->nmap &&
	    map_sub(h, addr))
		return;
	if (size < LARGE) /* else never added page by page */
		update(h, addr, size, 0);
}

void heapmap_state(const struct heapmap *h, struct heapmap_state *out)
{
	const uint64_t ps = h->page_size;
	/* occupied pages and live bytes over all the regions */
	uint64_t occupied = h->brk.occupied, live = h->brk.live;
	for (size_t i = 0; i <= h->win_mask; i++) {
		if (h->win[i]) {
			occupied += h->win[i]->occupied;
			live += h->win[i]->live;
		}
	}
	uint64_t span = h->span_pages * ps;
	out->footprint = (occupied + h->mapped_pages) * ps;
	out->span = span + h->mapped_pages * ps;
	out->holes = span > live ? span - live : 0;
	out->releasable = h->span_pages > occupied
				  ? (h->span_pages - occupied) * ps
				  : 0;
	out->mmapped = h->glibc ? h->mapped_pages * ps : 0;
	out->regions = h->regions + h->nmap;
	out->brk_top = !h->glibc || !h->heap_start ? 0
		       : h->brk.hi ? h->brk.hi << h->page_shift
				   : h->heap_start;
}

static int pins_grow(struct heapmap *h)
{
	size_t cap = h->pins_cap ? h->pins_cap * 2 : 64;
	size_t mask = cap * 2 - 1;
	struct heapmap_pin *p = realloc(h->pins, cap * sizeof(*p));
	if (!p)
		return -1;
	h->pins = p;
	h->pins_cap = cap;
	uint32_t *idx = malloc((mask + 1) * sizeof(*idx));
	if (!idx)
		return -1;
	memset(idx, 0xff, (mask + 1) * sizeof(*idx));
	for (size_t k = 0; k < h->npins; k++) {
		size_t i = mix(h->pins[k].slot, mask);
		while (idx[i] != NOT_FOUND)
			i = (i + 1) & mask;
		idx[i] = (uint32_t)k;
	}
	free(h->pin_index);
	h->pin_index = idx;
	h->pin_mask = mask;
	return 0;
}

/* The pin entry of slot, created on first use; NULL when out of memory. */
static struct heapmap_pin *pin_of(struct heapmap *h, uint32_t slot)
{
	if (h->npins == h->pins_cap && pins_grow(h))
		return NULL;
	size_t i = mix(slot, h->pin_mask);
	for (; h->pin_index[i] != NOT_FOUND; i = (i + 1) & h->pin_mask)
		if (h->pins[h->pin_index[i]].slot == slot)
			return &h->pins[h->pin_index[i]];
	h->pin_index[i] = (uint32_t)h->npins;
	h->pins[h->npins] = (struct heapmap_pin){ .slot = slot };
	return &h->pins[h->npins++];
}

/* The lowest live block starting in page p, found by probing the replay
 * at every possible block address of the page.  Past PROBES_MAX probes
 * at one batch end, gaps are attributed to HEAPMAP_UNPROBED. */
static uint32_t lowest_block(const struct heapmap *h, uint64_t p,
			     heapmap_find_fn find, void *ctx, uint64_t *size,
			     uint64_t *probes)
{
	const uint64_t step = h->glibc ? 16 : 8;
	uint64_t a = p << h->page_shift, end = a + h->page_size;
	uint32_t slot;
	*size = 0;
	if (*probes >= PROBES_MAX)
		return HEAPMAP_UNPROBED;
	for (; a < end; a += step) {
		++*probes;
		if (find(ctx, a, &slot, size))
			return slot;
	}
	return HEAPMAP_NOT_FOUND;
}

/* Gaps of one region: runs of empty pages in [lo, hi). */
static int region_pins(struct heapmap *h, const struct region *r,
		       heapmap_find_fn find, void *ctx, uint64_t *probes)
{
	if (!r->hi || r->hi - r->lo == r->occupied)
		return 0;
	const uint32_t *c = count_of(r, r->lo); /* c[i]: page lo + i */
	const uint64_t lo = r->lo;
	uint64_t p = lo;
	while (p < r->hi) {
		if (c[p - lo]) {
			p++;
			continue;
		}
		uint64_t g = p;
		while (p < r->hi && !c[p - lo])
			p++;
		/* p: the first occupied page above the gap [g, p) */
		uint64_t size;
		uint32_t slot = lowest_block(h, p, find, ctx, &size, probes);
		struct heapmap_pin *pin = pin_of(h, slot);
		if (!pin)
			return -1;
		pin->pinned_bytes += (p - g) << h->page_shift;
		pin->blocks++;
		pin->live_bytes += size;
	}
	return 0;
}

static int by_pinned(const void *a, const void *b)
{
	const struct heapmap_pin *x = a, *y = b;
	if (x->pinned_bytes != y->pinned_bytes)
		return x->pinned_bytes < y->pinned_bytes ? 1 : -1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

int heapmap_pins(struct heapmap *h, heapmap_find_fn find, void *ctx,
		 const struct heapmap_pin **out, size_t *n)
{
	uint64_t probes = 0;
	h->npins = 0;
	*out = h->pins;
	*n = 0;
	if (!h->glibc)
		return 0; /* gaps mean nothing outside glibc's layout */
	if (h->pin_index)
		memset(h->pin_index, 0xff,
		       (h->pin_mask + 1) * sizeof(*h->pin_index));
	int rc = region_pins(h, &h->brk, find, ctx, &probes);
	for (size_t i = 0; !rc && i <= h->win_mask; i++)
		if (h->win[i])
			rc = region_pins(h, h->win[i], find, ctx, &probes);
	if (rc)
		return hs_error("out of memory");
	if (h->npins)
		qsort(h->pins, h->npins, sizeof(*h->pins), by_pinned);
	*out = h->pins;
	*n = h->npins;
	return 0;
}

static int block_add(void *ctx, const struct replay_block *b,
		     enum replay_cause why)
{
	(void)why;
	return heapmap_add(ctx, b->addr, b->size);
}

static void block_drop(void *ctx, const struct replay_block *b,
		       uint32_t batch, enum replay_cause why)
{
	(void)batch, (void)why;
	heapmap_sub(ctx, b->addr, b->size);
}

/* The blocks that pin the heap at every batch end: heapmap_last_pins
 * gives those of the last.  A batch in which no block came or went
 * leaves them as they were (marks in a row cost no scan of the heap). */
static int batch_end(void *ctx, const struct replay *r,
		     const struct replay_batch *b)
{
	struct heapmap *h = ctx;
	const struct heapmap_pin *pins;
	size_t n;
	(void)b;
	if (!h->changed)
		return 0;
	h->changed = 0;
	return heapmap_pins(h, replay_block_at, (void *)r, &pins, &n);
}

const struct replay_consumer heapmap_consumer = {
	.block_add = block_add,
	.block_drop = block_drop,
	.batch_end = batch_end,
};

void heapmap_last_pins(const struct heapmap *h,
		       const struct heapmap_pin **out, size_t *n)
{
	*out = h->pins;
	*n = h->npins;
}
