#include "replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/bigmem.h"
#include "format/error.h"
#include "format/reader.h"
#include "heapmap.h"
#include "series.h"
#include "stacks.h"

#define NO_SLOT UINT32_MAX

struct replay *replay_create(struct stacks *stacks, struct series *series,
			     struct heapmap *heap)
{
	struct replay *r = calloc(1, sizeof(*r));
	if (r) {
		r->mask = 1023;
		r->tab = bigmem_zalloc((r->mask + 1) * sizeof(*r->tab));
	}
	if (!r || !r->tab) {
		replay_destroy(r);
		hs_error("out of memory");
		return NULL;
	}
	r->stacks = stacks;
	r->series = series;
	r->heap = heap;
	return r;
}

void replay_destroy(struct replay *r)
{
	if (!r)
		return;
	bigmem_free(r->tab, (r->mask + 1) * sizeof(*r->tab));
	free(r);
}

static inline size_t hash(uint64_t addr, size_t mask)
{
	/* blocks are 16-byte aligned: the low bits carry nothing */
	return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull >> 24) & mask;
}

static int grow(struct replay *r)
{
	size_t cap = (r->mask + 1) * 2;
	struct replay_block *t = cap <= SIZE_MAX / sizeof(*t)
					 ? bigmem_zalloc(cap * sizeof(*t))
					 : NULL;
	if (!t)
		return hs_error("out of memory for %zu live blocks", r->used);
	for (size_t i = 0; i <= r->mask; i++) {
		if (!r->tab[i].addr)
			continue;
		size_t h = hash(r->tab[i].addr, cap - 1);
		while (t[h].addr)
			h = (h + 1) & (cap - 1);
		t[h] = r->tab[i];
	}
	bigmem_free(r->tab, (r->mask + 1) * sizeof(*r->tab));
	r->tab = t;
	r->mask = cap - 1;
	return 0;
}

const struct replay_block *replay_find(const struct replay *r, uint64_t addr)
{
	if (!addr)
		return NULL;
	for (size_t h = hash(addr, r->mask);; h = (h + 1) & r->mask) {
		if (r->tab[h].addr == addr)
			return &r->tab[h];
		if (!r->tab[h].addr)
			return NULL;
	}
}

/* Removes slot h, shifting later members of its probe run back. */
static void erase(struct replay *r, size_t h)
{
	size_t mask = r->mask;
	size_t j = h;
	for (;;) {
		j = (j + 1) & mask;
		if (!r->tab[j].addr)
			break;
		size_t home = hash(r->tab[j].addr, mask);
		/* move j into the hole unless its home lies in (h, j] */
		if (((j - home) & mask) >= ((j - h) & mask)) {
			r->tab[h] = r->tab[j];
			h = j;
		}
	}
	r->tab[h].addr = 0;
	r->used--;
}

/* Drops the live block at addr: 1 if there was one, 0 if not. */
static int drop(struct replay *r, uint64_t addr)
{
	if (!addr)
		return 0;
	for (size_t h = hash(addr, r->mask);; h = (h + 1) & r->mask) {
		struct replay_block *b = &r->tab[h];
		if (b->addr == addr) {
			r->t.live_bytes -= b->size;
			r->t.live_blocks--;
			stacks_sub(r->stacks, b->slot, b->size, r->batch);
			if (r->heap)
				heapmap_sub(r->heap, addr, b->size);
			erase(r, h);
			return 1;
		}
		if (!b->addr)
			return 0;
	}
}

static int insert(struct replay *r, uint64_t addr, uint64_t size,
		  uint64_t stack, int is_alloc)
{
	uint32_t slot = stacks_ref(r->stacks, stack);
	if (slot == NO_SLOT)
		return hs_error("out of memory for stacks");
	/* at most a third full: short probe runs beat a smaller table */
	if ((r->used + 1) * 3 > r->mask + 1 && grow(r))
		return -1;
	size_t h = hash(addr, r->mask);
	while (r->tab[h].addr) {
		if (r->tab[h].addr == addr) {
			/* two allocations of one address without a free in
			 * between: a lost event; the newer block wins */
			r->t.replaced_allocations++;
			drop(r, addr);
			return insert(r, addr, size, stack, is_alloc);
		}
		h = (h + 1) & r->mask;
	}
	r->tab[h] = (struct replay_block){ addr, size, slot, r->batch };
	r->used++;
	r->t.live_bytes += size;
	r->t.live_blocks++;
	if (r->t.live_bytes > r->t.peak_live_bytes)
		r->t.peak_live_bytes = r->t.live_bytes;
	stacks_add(r->stacks, slot, size, r->batch, is_alloc);
	if (r->heap && heapmap_add(r->heap, addr, size))
		return -1;
	return 0;
}

/* Whether [addr, addr + size) reaches past REPLAY_ADDR_END (addr + size
 * cannot wrap: both are below it). */
static inline int outside(uint64_t addr, uint64_t size)
{
	return addr >= REPLAY_ADDR_END || size > REPLAY_ADDR_END - addr;
}

static __attribute__((cold, noinline)) int
corrupt_block(const struct hs_event *e)
{
	return hs_error("corrupt trace: a %s of %llu bytes at 0x%llx reaches "
			"past the user address space",
			hs_fn_name(e->fn), (unsigned long long)e->size,
			(unsigned long long)e->ptr);
}

/* Inlined into replay_events' loop, the analyzer's hottest. */
static inline __attribute__((always_inline)) int
event(struct replay *r, const struct hs_event *e)
{
	struct replay_totals *t = &r->t;
	switch (e->kind) {
	case HS_REC_ALLOC:
		if (e->fn == HS_FN_MMAP) {
			t->mmaps++;
			return 0;
		}
		if (!e->ptr) { /* success with NULL cannot be: a failure */
			t->failed_allocations++;
			return 0;
		}
		if (__builtin_expect(outside(e->ptr, e->size), 0))
			return corrupt_block(e);
		t->allocations++;
		t->allocated_bytes += e->size;
		if (insert(r, e->ptr, e->size, e->stack, 1))
			return -1;
		series_alloc(r->series, e->size, t->live_bytes);
		return 0;
	case HS_REC_FREE:
		if (e->fn == HS_FN_MMAP || e->fn == HS_FN_MUNMAP ||
		    e->fn == HS_FN_MREMAP) {
			t->munmaps++;
			return 0;
		}
		if (!e->ptr)
			return 0; /* free(NULL) does nothing */
		t->frees++;
		series_free(r->series);
		if (!drop(r, e->ptr))
			t->unmatched_frees++;
		return 0;
	case HS_REC_REALLOC:
		if (e->fn == HS_FN_MREMAP) {
			t->mmaps++;
			return 0;
		}
		if (!e->ptr) {
			t->failed_allocations++;
			return 0;
		}
		if (__builtin_expect(outside(e->ptr, e->size), 0))
			return corrupt_block(e);
		if (e->old_ptr) {
			t->reallocs++;
			if (!drop(r, e->old_ptr))
				t->unmatched_frees++;
		} else {
			t->allocations++; /* realloc(NULL, n) is a malloc */
		}
		t->allocated_bytes += e->size;
		if (insert(r, e->ptr, e->size, e->stack, !e->old_ptr))
			return -1;
		if (e->old_ptr)
			series_realloc(r->series, e->size, t->live_bytes);
		else
			series_alloc(r->series, e->size, t->live_bytes);
		return 0;
	case HS_REC_FAIL:
		/* a failed realloc leaves the old block live: nothing to do */
		t->failed_allocations++;
		return 0;
	case HS_REC_MUNMAP:
		t->munmaps++;
		return 0;
	default:
		return 0;
	}
}

int replay_event(struct replay *r, const struct hs_record *rec)
{
	struct hs_event e = {
		.ptr = rec->ptr,
		.old_ptr = rec->old_ptr,
		.size = rec->size,
		.stack = rec->stack,
		.kind = rec->kind,
		.fn = rec->fn,
	};
	return event(r, &e);
}

/* How far ahead of the event replayed the table slot is fetched. */
#define AHEAD 8

int replay_events(struct replay *r, const struct hs_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n)
			__builtin_prefetch(
				&r->tab[hash(ev[i + AHEAD].ptr, r->mask)]);
		if (event(r, &ev[i]))
			return -1;
	}
	return 0;
}

static int find_block(void *ctx, uint64_t addr, uint32_t *slot,
		      uint64_t *size)
{
	const struct replay_block *b = replay_find(ctx, addr);
	if (!b)
		return 0;
	*slot = b->slot;
	*size = b->size;
	return 1;
}

int replay_batch_end(struct replay *r, uint64_t time_ns, int from_mark)
{
	struct heapmap_state hs;
	if (r->heap) {
		const struct heapmap_pin *pins;
		size_t n;
		heapmap_state(r->heap, &hs);
		if (heapmap_pins(r->heap, find_block, r, &pins, &n))
			return -1;
	}
	if (series_batch_end(r->series, time_ns, r->t.live_bytes,
			     r->heap ? &hs : NULL, from_mark))
		return -1;
	r->batch++;
	return 0;
}
