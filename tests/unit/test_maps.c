/* Unit test of maps.c: the table of the program's mappings through
 * partial munmap, mremap, MAP_FIXED over a mapping, shmdt, unknown
 * ranges and PROT_NONE reservations; bytes by kind and by stack; the
 * bound on the ranges kept. */
#include <stdio.h>
#include <string.h>

#include "analyze/maps.h"
#include "analyze/stacks.h"
#include "format/trace_format.h"

#include "check.h"

#define PAGE 4096ull
#define RW 3 /* PROT_READ | PROT_WRITE */
#define A 0x7f0000000000ull

static struct maps_state state(const struct maps *m)
{
	struct maps_state st;
	maps_state(m, &st);
	return st;
}

/* Bytes and ranges still mapped by stack id `id` (after stacks_close). */
static void by_stack(struct stacks *s, uint64_t id, uint64_t *bytes,
		     uint64_t *ranges)
{
	struct stack_growth *g;
	size_t n;
	*bytes = *ranges = 0;
	CHECK(stacks_rank(s, 0, 1, 0, &g, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (g[i].id == id) {
			*bytes = g[i].leaked_bytes;
			*ranges = g[i].leaked_blocks;
		}
	stacks_growth_free(g, n);
}

static void test_partial_unmap(void)
{
	struct stacks *s = stacks_create(0, 0);
	CHECK(stacks_node(s, 1, 0, 0x401000) == 0);
	struct maps *m = maps_create(s);
	CHECK(maps_map(m, A, 10 * PAGE, RW, HS_MAP_ANON, 1, 0) == 0);
	CHECK(state(m).mapped == 10 * PAGE && state(m).ranges == 1);
	/* the head, the tail, a hole in the middle */
	CHECK(maps_unmap(m, A, PAGE, 0) == 0);
	CHECK(maps_unmap(m, A + 9 * PAGE, PAGE, 0) == 0);
	CHECK(maps_unmap(m, A + 4 * PAGE, 2 * PAGE, 0) == 0);
	CHECK(state(m).mapped == 6 * PAGE && state(m).ranges == 2);
	CHECK(state(m).by_kind[HS_MAP_ANON] == 6 * PAGE);
	/* over both pieces and the gap between them, and beyond */
	CHECK(maps_unmap(m, A + 2 * PAGE, 6 * PAGE, 0) == 0);
	CHECK(state(m).mapped == 2 * PAGE && state(m).ranges == 2);
	/* nothing mapped there: ignored */
	CHECK(maps_unmap(m, A + 100 * PAGE, PAGE, 0) == 0);
	CHECK(state(m).ignored == 1 && state(m).mapped == 2 * PAGE);
	stacks_close(s, 1);
	uint64_t bytes, ranges;
	by_stack(s, 1, &bytes, &ranges);
	CHECK(bytes == 2 * PAGE && ranges == 2);
	maps_destroy(m);
	stacks_destroy(s);
}

static void test_fixed_and_reserved(void)
{
	struct stacks *s = stacks_create(0, 0);
	CHECK(stacks_node(s, 1, 0, 0x401000) == 0);
	CHECK(stacks_node(s, 2, 0, 0x402000) == 0);
	struct maps *m = maps_create(s);
	/* a PROT_NONE reservation is not mapped memory */
	CHECK(maps_map(m, A, 16 * PAGE, 0, HS_MAP_ANON, 1, 0) == 0);
	CHECK(state(m).mapped == 0 && state(m).reserved == 16 * PAGE);
	/* MAP_FIXED commits part of it: replaces what it covers */
	CHECK(maps_map(m, A + 4 * PAGE, 4 * PAGE, RW, HS_MAP_FILE, 2, 0) == 0);
	CHECK(state(m).mapped == 4 * PAGE &&
	      state(m).reserved == 12 * PAGE && state(m).ranges == 3);
	CHECK(state(m).by_kind[HS_MAP_FILE] == 4 * PAGE);
	/* and again over the file mapping and beyond */
	CHECK(maps_map(m, A + 6 * PAGE, 20 * PAGE, RW, HS_MAP_SHM, 1, 0) == 0);
	CHECK(state(m).by_kind[HS_MAP_FILE] == 2 * PAGE);
	CHECK(state(m).by_kind[HS_MAP_SHM] == 20 * PAGE);
	CHECK(state(m).mapped == 22 * PAGE && state(m).reserved == 4 * PAGE);
	stacks_close(s, 1);
	uint64_t bytes, ranges;
	by_stack(s, 2, &bytes, &ranges);
	CHECK(bytes == 2 * PAGE && ranges == 1);
	by_stack(s, 1, &bytes, &ranges);
	CHECK(bytes == 20 * PAGE && ranges == 1);
	CHECK(state(m).peak == 22 * PAGE);
	maps_destroy(m);
	stacks_destroy(s);
}

/* A runtime's heap (V8's): reserved PROT_NONE, committed by mprotect a
 * piece at a time, a piece given up again. */
static void test_protect(void)
{
	struct stacks *s = stacks_create(0, 0);
	CHECK(stacks_node(s, 1, 0, 0x401000) == 0);
	struct maps *m = maps_create(s);
	CHECK(maps_map(m, A, 32 * PAGE, 0, HS_MAP_ANON, 1, 0) == 0);
	CHECK(maps_protect(m, A + 2 * PAGE, 4 * PAGE, RW, 0) == 0);
	CHECK(state(m).mapped == 4 * PAGE && state(m).reserved == 28 * PAGE);
	CHECK(state(m).ranges == 3 && state(m).protects == 1);
	/* over committed and reserved pages at once: only the change counts */
	CHECK(maps_protect(m, A, 8 * PAGE, 1 /* PROT_READ */, 0) == 0);
	CHECK(state(m).mapped == 8 * PAGE && state(m).reserved == 24 * PAGE);
	/* read-write again: nothing changes */
	CHECK(maps_protect(m, A, 8 * PAGE, RW, 0) == 0);
	CHECK(state(m).mapped == 8 * PAGE);
	/* ending inside a range that goes on, with nothing to change (the
	 * analyzer spun there on node's trace), or with a change */
	CHECK(maps_protect(m, A + 20 * PAGE, PAGE, 0, 0) == 0);
	CHECK(maps_protect(m, A + 30 * PAGE, PAGE, RW, 0) == 0);
	CHECK(maps_protect(m, A + 30 * PAGE, PAGE, 0, 0) == 0);
	CHECK(state(m).mapped == 8 * PAGE);
	/* given up */
	CHECK(maps_protect(m, A + 6 * PAGE, 2 * PAGE, 0, 0) == 0);
	CHECK(state(m).mapped == 6 * PAGE && state(m).reserved == 26 * PAGE);
	CHECK(state(m).by_kind[HS_MAP_ANON] == 6 * PAGE);
	/* of nothing mapped: ignored */
	uint64_t ignored = state(m).ignored;
	CHECK(maps_protect(m, A + 100 * PAGE, PAGE, RW, 0) == 0);
	CHECK(state(m).ignored == ignored + 1 && state(m).mapped == 6 * PAGE);
	/* the committed bytes are the reservation's stack's */
	stacks_close(s, 1);
	uint64_t bytes, ranges;
	by_stack(s, 1, &bytes, &ranges);
	CHECK(bytes == 6 * PAGE);
	/* unmapping it all leaves nothing either way */
	CHECK(maps_unmap(m, A, 32 * PAGE, 0) == 0);
	CHECK(state(m).mapped == 0 && state(m).reserved == 0 &&
	      state(m).ranges == 0);
	maps_destroy(m);
	stacks_destroy(s);
}

static void test_remap(void)
{
	struct stacks *s = stacks_create(0, 0);
	CHECK(stacks_node(s, 1, 0, 0x401000) == 0);
	CHECK(stacks_node(s, 2, 0, 0x402000) == 0);
	struct maps *m = maps_create(s);
	CHECK(maps_map(m, A, 4 * PAGE, RW, HS_MAP_MEMFD, 1, 0) == 0);
	/* grown in place: the growth is the mremap's stack's */
	CHECK(maps_remap(m, A, 4 * PAGE, A, 8 * PAGE, 2, 0) == 0);
	CHECK(state(m).mapped == 8 * PAGE &&
	      state(m).by_kind[HS_MAP_MEMFD] == 8 * PAGE);
	/* moved and shrunk: the kind stays, the old range goes */
	CHECK(maps_remap(m, A, 8 * PAGE, A + 64 * PAGE, 2 * PAGE, 1, 0) == 0);
	CHECK(state(m).mapped == 2 * PAGE && state(m).ranges == 1);
	CHECK(state(m).by_kind[HS_MAP_MEMFD] == 2 * PAGE);
	CHECK(maps_unmap(m, A, 8 * PAGE, 0) == 0 && state(m).ignored == 1);
	/* an mremap of something not the program's: ignored */
	CHECK(maps_remap(m, A + 1000 * PAGE, PAGE, A, 2 * PAGE, 1, 0) == 0);
	CHECK(state(m).mapped == 2 * PAGE && state(m).ignored == 2);
	/* shmdt: length 0, the whole segment at the address */
	CHECK(maps_map(m, A + 200 * PAGE, 3 * PAGE, RW, HS_MAP_SYSV, 1, 0) ==
	      0);
	CHECK(maps_unmap(m, A + 200 * PAGE, 0, 0) == 0);
	CHECK(state(m).by_kind[HS_MAP_SYSV] == 0);
	CHECK(maps_unmap(m, A + 201 * PAGE, 0, 0) == 0); /* not a start */
	CHECK(state(m).mapped == 2 * PAGE);
	maps_destroy(m);
	stacks_destroy(s);
}

/* Absurd input: addresses past the user space, zero lengths, wrapping
 * ranges are ignored; the table stops at MAPS_MAX ranges. */
static void test_bounds(void)
{
	struct maps *m = maps_create(NULL);
	CHECK(maps_map(m, ~0ull - PAGE, 2 * PAGE, RW, 0, 0, 0) == 0);
	CHECK(maps_map(m, A, 0, RW, 0, 0, 0) == 0);
	CHECK(maps_map(m, A, 1ull << 60, RW, 99, 0, 0) == 0);
	CHECK(maps_unmap(m, ~0ull - PAGE, ~0ull, 0) == 0);
	CHECK(state(m).mapped == 0 && state(m).ignored == 4);
	int failed = 0;
	for (uint64_t i = 0; i <= MAPS_MAX && !failed; i++)
		failed = maps_map(m, A + 2 * i * PAGE, PAGE, RW, 99, 0, 0) != 0;
	CHECK(failed && state(m).ranges == MAPS_MAX);
	CHECK(state(m).by_kind[HS_MAP_OTHER] == MAPS_MAX * PAGE);
	maps_destroy(m);
	maps_destroy(NULL);
}

int main(void)
{
	test_partial_unmap();
	test_fixed_and_reserved();
	test_protect();
	test_remap();
	test_bounds();
	return check_report("maps");
}
