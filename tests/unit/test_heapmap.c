/* heapmap: footprint, spans, holes, releasable pages and pinning blocks of
 * hand-built glibc layouts, after every kind of change. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyze/heapmap.h"
#include "check.h"

#define PAGE 4096ull
#define HEAP 0x555555000000ull /* heap_start: the brk heap */
#define ARENA 0x7f0004000000ull /* a 64 MiB-aligned thread heap */
#define MAPPED 0x7f1234567010ull /* a directly mmapped block */

/* glibc's chunk of a request (what the heap loses to a block) */
static uint64_t chunk(uint64_t n)
{
	uint64_t c = (n + 8 + 15) & ~15ull;
	return c < 32 ? 32 : c;
}

/* The live blocks the pin lookup can find: address -> slot. */
static struct {
	uint64_t addr, size;
	uint32_t slot;
} live[64];
static size_t nlive;

static int find(void *ctx, uint64_t addr, uint32_t *slot, uint64_t *size)
{
	(void)ctx;
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].addr == addr) {
			*slot = live[i].slot;
			*size = live[i].size;
			return 1;
		}
	}
	return 0;
}

static void add(struct heapmap *h, uint64_t addr, uint64_t size,
		uint32_t slot)
{
	CHECK(heapmap_add(h, addr, size) == 0);
	live[nlive].addr = addr;
	live[nlive].size = size;
	live[nlive++].slot = slot;
}

static void sub(struct heapmap *h, uint64_t addr)
{
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].addr == addr) {
			heapmap_sub(h, addr, live[i].size);
			live[i] = live[--nlive];
			return;
		}
	}
	CHECK(!"sub of a block never added");
}

static void test_brk_heap(void)
{
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	struct heapmap_state s;
	CHECK(h);
	nlive = 0;
	heapmap_state(h, &s);
	CHECK(s.footprint == 0 && s.span == 0 && s.holes == 0);
	CHECK(s.regions == 0);

	/* one small block on the first page */
	add(h, HEAP + 0x10, 100, 1);
	heapmap_state(h, &s);
	CHECK(s.footprint == PAGE);
	CHECK(s.span == PAGE);
	CHECK(s.holes == PAGE - chunk(100));
	CHECK(s.releasable == 0);
	CHECK(s.regions == 1);

	/* a 3-page scratch block, then a pin above it, then the scratch
	 * freed: a 2-page gap (pages 2 and 3) pinned by the pin */
	add(h, HEAP + PAGE + 0x10, 3 * PAGE, 2);
	add(h, HEAP + 4 * PAGE + 0x100, 64, 3);
	heapmap_state(h, &s);
	CHECK(s.footprint == 5 * PAGE);
	CHECK(s.span == 5 * PAGE);
	CHECK(s.releasable == 0);
	sub(h, HEAP + PAGE + 0x10);
	heapmap_state(h, &s);
	/* pages 0 and 4 hold live bytes, 1..3 are free */
	CHECK(s.footprint == 2 * PAGE);
	CHECK(s.span == 5 * PAGE);
	CHECK(s.releasable == 3 * PAGE);
	CHECK(s.holes == 5 * PAGE - chunk(100) - chunk(64));

	const struct heapmap_pin *p;
	size_t n;
	CHECK(heapmap_pins(h, find, NULL, &p, &n) == 0);
	CHECK(n == 1);
	CHECK(n == 1 && p[0].slot == 3 && p[0].pinned_bytes == 3 * PAGE &&
	      p[0].blocks == 1 && p[0].live_bytes == 64);

	/* a second pinned gap lower down, held by another stack's block */
	sub(h, HEAP + 0x10); /* page 0 empties: a gap from heap_start */
	add(h, HEAP + 0x2000 + 0x40, 32, 4); /* page 2 */
	heapmap_state(h, &s);
	CHECK(s.span == 5 * PAGE); /* from heap_start to page 4 */
	CHECK(s.releasable == 3 * PAGE); /* pages 0, 1 and 3 */
	CHECK(heapmap_pins(h, find, NULL, &p, &n) == 0);
	CHECK(n == 2);
	/* ranked: each pins one gap; ties by slot */
	CHECK(n == 2 && p[0].pinned_bytes == 2 * PAGE && p[0].slot == 4);
	CHECK(n == 2 && p[1].pinned_bytes == PAGE && p[1].slot == 3);

	/* the top block goes: the span shrinks to the next live page */
	sub(h, HEAP + 4 * PAGE + 0x100);
	heapmap_state(h, &s);
	CHECK(s.span == 3 * PAGE);
	CHECK(s.footprint == PAGE);
	CHECK(s.releasable == 2 * PAGE);
	sub(h, HEAP + 0x2000 + 0x40);
	heapmap_state(h, &s);
	CHECK(s.span == 0 && s.footprint == 0 && s.holes == 0);
	CHECK(s.regions == 0);
	CHECK(heapmap_pins(h, find, NULL, &p, &n) == 0 && n == 0);
	heapmap_destroy(h);
}

static void test_regions(void)
{
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	struct heapmap_state s;
	nlive = 0;
	/* a big block outside the brk heap with no arena around: mmapped */
	add(h, MAPPED, 200000, 1);
	heapmap_state(h, &s);
	uint64_t pages = ((MAPPED + 200000 - 1) / PAGE) - (MAPPED - 16) / PAGE
			 + 1;
	CHECK(s.mmapped == pages * PAGE);
	CHECK(s.footprint == pages * PAGE && s.span == pages * PAGE);
	CHECK(s.holes == 0 && s.regions == 1);

	/* a thread arena: small blocks make the window a heap; its span
	 * starts at its lowest live page */
	add(h, ARENA + 0x8a0, 48, 2);
	add(h, ARENA + 10 * PAGE + 0x10, 48, 3);
	heapmap_state(h, &s);
	CHECK(s.regions == 2);
	CHECK(s.span == pages * PAGE + 11 * PAGE);
	CHECK(s.releasable == 9 * PAGE);
	/* a big block inside the arena's window belongs to the arena */
	add(h, ARENA + 12 * PAGE + 0x10, 200000, 4);
	heapmap_state(h, &s);
	CHECK(s.mmapped == pages * PAGE);
	CHECK(s.regions == 2);
	sub(h, ARENA + 12 * PAGE + 0x10);
	sub(h, MAPPED);
	heapmap_state(h, &s);
	CHECK(s.mmapped == 0 && s.regions == 1);
	CHECK(s.span == 11 * PAGE);
	heapmap_destroy(h);

	/* another allocator: no mmapped class, footprint only matters */
	h = heapmap_create(PAGE, 0, 0);
	nlive = 0;
	add(h, MAPPED, 200000, 1);
	heapmap_state(h, &s);
	CHECK(s.mmapped == 0);
	CHECK(s.footprint == ((MAPPED + 200000 - 1) / PAGE - MAPPED / PAGE + 1)
				     * PAGE);
	/* a block across a 64 MiB boundary counts in both windows */
	uint64_t edge = (ARENA + (64ull << 20)) - PAGE;
	add(h, edge, 2 * PAGE, 2);
	heapmap_state(h, &s);
	CHECK(s.regions == 3);
	sub(h, edge);
	sub(h, MAPPED);
	heapmap_state(h, &s);
	CHECK(s.footprint == 0 && s.regions == 0);
	heapmap_destroy(h);
}

/* Blocks at the last 16 bytes of every even page: finding each one
 * probes its whole page. */
static int find_last(void *ctx, uint64_t addr, uint32_t *slot,
		     uint64_t *size)
{
	(void)ctx;
	uint64_t off = addr - HEAP;
	if (off % PAGE != PAGE - 16 || (off / PAGE) % 2)
		return 0;
	*slot = 7;
	*size = 8;
	return 1;
}

/* More gaps than the probe budget covers: the rest are gathered under
 * HEAPMAP_UNPROBED, never taken for an inconsistent trace. */
static void test_probe_budget(void)
{
	enum { GAPS = 20000, PROBED = (1 << 22) / (PAGE / 16) };
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	CHECK(h);
	for (uint64_t k = 0; k <= GAPS; k++)
		CHECK(heapmap_add(h, HEAP + 2 * k * PAGE + PAGE - 16, 8) == 0);
	const struct heapmap_pin *p;
	size_t n;
	CHECK(heapmap_pins(h, find_last, NULL, &p, &n) == 0);
	CHECK(n == 2);
	if (n == 2) {
		/* ranked by pinned bytes: 16384 probed gaps, then the rest */
		CHECK(p[0].slot == 7 && p[0].blocks == PROBED &&
		      p[0].pinned_bytes == PROBED * PAGE);
		CHECK(p[1].slot == HEAPMAP_UNPROBED &&
		      p[1].blocks == GAPS - PROBED &&
		      p[1].pinned_bytes == (GAPS - PROBED) * PAGE);
	}
	heapmap_destroy(h);
}

int main(void)
{
	test_brk_heap();
	test_regions();
	test_probe_budget();
	return check_report("heapmap");
}
