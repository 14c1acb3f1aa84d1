#include "replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/error.h"
#include "format/reader.h"
#include "heapmap.h"
#include "stacks.h"

#define NO_SLOT UINT32_MAX

struct replay *replay_create(struct stacks *stacks)
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
	return r;
}

int replay_add_consumer(struct replay *r, const struct replay_consumer *c,
			void *ctx)
{
	if (r->nconsumers == REPLAY_CONSUMERS_MAX)
		return hs_error("more than %d consumers of the replay",
				REPLAY_CONSUMERS_MAX);
	r->nconsumers++;
	int direct = 0;
	if (c == &stacks_consumer && !r->direct_stacks) {
		r->direct_stacks = ctx;
		direct = 1;
	} else if (c == &heapmap_consumer && !r->direct_heap) {
		r->direct_heap = ctx;
		direct = 1;
	}
	if (c->block_add && !direct)
		r->adds[r->nadds++] = (struct replay_adds){ c->block_add, ctx };
	if (c->block_drop && !direct)
		r->drops[r->ndrops++] =
			(struct replay_drops){ c->block_drop, ctx };
	if (c->batch_end)
		r->batch_ends[r->nbatch_ends++] =
			(struct replay_batch_ends){ c->batch_end, ctx };
	return 0;
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

static inline const struct replay_block *find(const struct replay *r,
					      uint64_t addr)
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

const struct replay_block *replay_find(const struct replay *r, uint64_t addr)
{
	return find(r, addr);
}

int replay_block_at(void *r, uint64_t addr, uint32_t *slot, uint64_t *size)
{
	const struct replay_block *b = find(r, addr);
	if (!b)
		return 0;
	*slot = b->slot;
	*size = b->size;
	return 1;
}

/* The consumers other than the direct ones: apart from the event loop,
 * which they would slow down even when there are none. */
static __attribute__((noinline)) int
feed_add(struct replay *r, const struct replay_block *b, enum replay_cause why)
{
	for (size_t i = 0; i < r->nadds; i++)
		if (r->adds[i].fn(r->adds[i].ctx, b, why))
			return -1;
	return 0;
}

static __attribute__((noinline)) void
feed_drop(struct replay *r, const struct replay_block *b,
	  enum replay_cause why)
{
	for (size_t i = 0; i < r->ndrops; i++)
		r->drops[i].fn(r->drops[i].ctx, b, r->batch, why);
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
static int drop(struct replay *r, uint64_t addr, enum replay_cause why)
{
	if (!addr)
		return 0;
	for (size_t h = hash(addr, r->mask);; h = (h + 1) & r->mask) {
		struct replay_block *b = &r->tab[h];
		if (b->addr == addr) {
			r->t.live_bytes -= b->size;
			r->t.live_blocks--;
			if (r->direct_stacks)
				stacks_sub(r->direct_stacks, b->slot, b->size,
					   r->batch);
			if (r->direct_heap)
				heapmap_sub(r->direct_heap, b->addr, b->size);
			if (__builtin_expect(r->ndrops != 0, 0))
				feed_drop(r, b, why);
			erase(r, h);
			return 1;
		}
		if (!b->addr)
			return 0;
	}
}

static int insert(struct replay *r, uint64_t addr, uint64_t size,
		  uint64_t stack, enum replay_cause why)
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
			drop(r, addr, REPLAY_REPLACED);
			return insert(r, addr, size, stack, why);
		}
		h = (h + 1) & r->mask;
	}
	r->tab[h] = (struct replay_block){ addr, size, slot, r->batch };
	r->used++;
	r->t.live_bytes += size;
	r->t.live_blocks++;
	if (r->t.live_bytes > r->t.peak_live_bytes)
		r->t.peak_live_bytes = r->t.live_bytes;
	if (r->t.live_bytes > r->batch_peak)
		r->batch_peak = r->t.live_bytes;
	if (r->direct_stacks)
		stacks_add(r->direct_stacks, slot, size, r->batch,
			   why == REPLAY_ALLOCATED);
	if (r->direct_heap && heapmap_add(r->direct_heap, addr, size))
		return -1;
	if (__builtin_expect(r->nadds != 0, 0))
		return feed_add(r, &r->tab[h], why);
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
		return insert(r, e->ptr, e->size, e->stack, REPLAY_ALLOCATED);
	case HS_REC_FREE:
		if (e->fn == HS_FN_MMAP || e->fn == HS_FN_MUNMAP ||
		    e->fn == HS_FN_MREMAP) {
			t->munmaps++;
			return 0;
		}
		if (!e->ptr)
			return 0; /* free(NULL) does nothing */
		t->frees++;
		if (!drop(r, e->ptr, REPLAY_FREED))
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
			if (!drop(r, e->old_ptr, REPLAY_RESIZED))
				t->unmatched_frees++;
		} else {
			t->allocations++; /* realloc(NULL, n) is a malloc */
		}
		t->allocated_bytes += e->size;
		return insert(r, e->ptr, e->size, e->stack,
			      e->old_ptr ? REPLAY_RESIZED : REPLAY_ALLOCATED);
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

int replay_batch_end(struct replay *r, uint64_t time_ns, int from_mark)
{
	const struct replay_totals *t = &r->t, *t0 = &r->batch_start;
	const struct replay_batch b = {
		.index = r->batch,
		.end_ns = time_ns,
		.from_mark = from_mark,
		.live_bytes = t->live_bytes,
		.peak_live_bytes = r->batch_peak,
		.allocations = t->allocations - t0->allocations,
		.frees = t->frees - t0->frees,
		.allocated_bytes = t->allocated_bytes - t0->allocated_bytes,
	};
	for (size_t i = 0; i < r->nbatch_ends; i++)
		if (r->batch_ends[i].fn(r->batch_ends[i].ctx, r, &b))
			return -1;
	r->batch_start = *t;
	r->batch_peak = t->live_bytes;
	r->batch++;
	return 0;
}

void replay_batch_skip(struct replay *r)
{
	r->batch_start = r->t;
	r->batch_peak = r->t.live_bytes;
}
