/* What a trace's values may cost the analyzer (issue 9, item 8): blocks of
 * any size in the heap map, pointers near 2^64, stack ids far out of
 * sequence, blocks past the user address space, module records repeated
 * or too many. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "../unit/check.h"
#include "analyze/heapmap.h"
#include "analyze/replay.h"
#include "analyze/series.h"
#include "analyze/stacks.h"
#include "analyze/symbols.h"
#include "base/error.h"
#include "format/reader.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* What failing these tests may cost (the code they test used to take
 * all memory): 2 GiB of address space, or under ASan (whose shadow
 * reserves terabytes) 2 GiB of RSS. */
#define MEMORY_MAX (2ull << 30)
#ifdef UNDER_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "hard_rss_limit_mb=2048:allocator_may_return_null=1";
}
#endif

#define PAGE 4096ull
#define HEAP 0x555555000000ull  /* heap_start: the brk heap */
#define ARENA 0x7f0004000000ull /* a 64 MiB-aligned thread heap */
#define TIB (1ull << 40)

static uint64_t pages(uint64_t first_byte, uint64_t end)
{
	return (end - 1) / PAGE - first_byte / PAGE + 1;
}

/* A block of 3.4e15 bytes in a thread arena (the trace of the issue):
 * kept whole, not as 50 million windows of page counts. */
static void test_huge_block(void)
{
	const uint64_t huge = 3400000000000000ull, at = ARENA + 0x1000;
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	struct heapmap_state s;
	CHECK(h);
	CHECK(heapmap_add(h, ARENA + 0x8a0, 48) == 0); /* the arena's */
	CHECK(heapmap_add(h, at, huge) == 0);
	heapmap_state(h, &s);
	CHECK(s.footprint == PAGE + pages(at - 16, at + huge) * PAGE);
	CHECK(s.mmapped == pages(at - 16, at + huge) * PAGE);
	heapmap_sub(h, at, huge);
	heapmap_state(h, &s);
	CHECK(s.footprint == PAGE && s.mmapped == 0 && s.regions == 1);
	/* in the brk heap too (glibc's fallback when mmap fails) */
	CHECK(heapmap_add(h, HEAP + 0x10, 100ull << 30) == 0);
	heapmap_state(h, &s);
	CHECK(s.footprint == PAGE + pages(HEAP, HEAP + 0x10 + (100ull << 30))
					    * PAGE);
	heapmap_sub(h, HEAP + 0x10, 100ull << 30);
	heapmap_state(h, &s);
	CHECK(s.footprint == PAGE);
	heapmap_destroy(h);

	/* another allocator: a 1 TiB block, its pages in the footprint */
	h = heapmap_create(PAGE, 0, 0);
	CHECK(h);
	CHECK(heapmap_add(h, ARENA, TIB) == 0);
	CHECK(heapmap_add(h, ARENA + TIB + 0x10, 64) == 0);
	heapmap_state(h, &s);
	CHECK(s.footprint == TIB + PAGE);
	CHECK(s.mmapped == 0); /* no mmapped class but glibc's */
	heapmap_sub(h, ARENA, TIB);
	heapmap_sub(h, ARENA + TIB + 0x10, 64);
	heapmap_state(h, &s);
	CHECK(s.footprint == 0 && s.regions == 0);
	heapmap_destroy(h);
}

static int no_block(void *ctx, uint64_t addr, uint32_t *slot,
		    uint64_t *size)
{
	(void)ctx, (void)addr, (void)slot, (void)size;
	return 0;
}

/* Blocks near 2^64, in the last window: no pointer arithmetic leaves the
 * count arrays (UBSan reported pointer overflow in touch()). */
static void test_top_of_address_space(void)
{
	const uint64_t top = UINT64_MAX - 0xfff; /* the last page */
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	struct heapmap_state s;
	const struct heapmap_pin *p;
	size_t n;
	CHECK(h);
	CHECK(heapmap_add(h, top - 4 * PAGE + 0x10, 64) == 0);
	CHECK(heapmap_add(h, top + 0x10, 64) == 0);
	CHECK(heapmap_add(h, top + 0x800, UINT64_MAX) == 0); /* wraps */
	CHECK(heapmap_add(h, 8, 200000) == 0); /* chunk header below 0 */
	heapmap_state(h, &s);
	CHECK(s.footprint >= 2 * PAGE);
	CHECK(heapmap_pins(h, no_block, NULL, &p, &n) == 0 && n == 1);
	heapmap_sub(h, 8, 200000);
	heapmap_sub(h, top + 0x800, UINT64_MAX);
	heapmap_sub(h, top + 0x10, 64);
	heapmap_sub(h, top - 4 * PAGE + 0x10, 64);
	heapmap_state(h, &s);
	CHECK(s.footprint == 0 && s.span == 0 && s.regions == 0);
	heapmap_destroy(h);
}

/* The replay refuses blocks past the user address space (and those that
 * wrap), and replays merely large ones. */
static void test_address_space(void)
{
	struct series se;
	struct stacks *st = stacks_create(0, 0);
	struct heapmap *h = heapmap_create(PAGE, HEAP, 1);
	series_init(&se);
	struct replay *r = st && h ? replay_create(st) : NULL;
	CHECK(r);
	if (!r)
		return;
	se.heap = h;
	CHECK(replay_add_consumer(r, &stacks_consumer, st) == 0);
	CHECK(replay_add_consumer(r, &heapmap_consumer, h) == 0);
	CHECK(replay_add_consumer(r, &series_consumer, &se) == 0);
	struct hs_event ok[] = {
		{ .kind = HS_REC_ALLOC, .ptr = ARENA, .size = 16 * TIB },
		{ .kind = HS_REC_ALLOC, .ptr = (1ull << 56), .size = TIB },
		{ .kind = HS_REC_ALLOC, .ptr = REPLAY_ADDR_END - 64,
		  .size = 64 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(replay_events(r, &ok[i], 1) == 0);
	CHECK(r->t.live_blocks == 3);
	struct hs_event bad[] = {
		{ .kind = HS_REC_ALLOC, .ptr = UINT64_MAX - 0xfff, .size = 64 },
		{ .kind = HS_REC_ALLOC, .ptr = REPLAY_ADDR_END - 64,
		  .size = 65 },
		{ .kind = HS_REC_ALLOC, .ptr = HEAP, .size = UINT64_MAX - 8 },
		{ .kind = HS_REC_REALLOC, .fn = HS_FN_REALLOC, .old_ptr = ARENA,
		  .ptr = REPLAY_ADDR_END, .size = 0 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(replay_events(r, &bad[i], 1) == -1);
		CHECK(strstr(hs_last_error(), "user address space"));
	}
	CHECK(r->t.live_blocks == 3);
	/* frees of such addresses are only unmatched */
	struct hs_event f = { .kind = HS_REC_FREE, .fn = HS_FN_FREE,
			      .ptr = UINT64_MAX };
	CHECK(replay_events(r, &f, 1) == 0 && r->t.unmatched_frees == 1);
	replay_destroy(r);
	heapmap_destroy(h);
	stacks_destroy(st);
	series_finish(&se);
}

/* Each record may define an id at most ID_SLACK past the number defined
 * before: a chain of ids each 2^16 past the last would double the table
 * with every record (2^32 nodes, 64 GiB, from 16 records). */
static void test_stack_ids(void)
{
	struct stacks *s = stacks_create(0, 0);
	CHECK(s);
	CHECK(stacks_node(s, 1u << 16, 0, 0x10) == 0);
	CHECK(stacks_node(s, 2u << 16, 0, 0x10) == -1);
	for (uint64_t id = 1; id < 1000; id++)
		CHECK(stacks_node(s, id, id - 1, 0x20) == 0);
	CHECK(stacks_node(s, 1000 + (1u << 16), 0, 0x30) == 0);
	stacks_destroy(s);
}

static void module(struct symbols *s, const char *path, uint64_t base,
		   int want)
{
	struct hs_record rec = { .kind = HS_REC_MODULE, .base = base };
	rec.str = path;
	rec.str_len = strlen(path);
	rec.build_id = (const uint8_t *)"\x01\x02\x03\x04";
	rec.build_id_len = 4;
	rec.nseg = 1;
	rec.segs[0] = (struct hs_segment){ .vaddr = 0, .memsz = 0x10000 };
	CHECK(symbols_module(s, &rec) == want);
}

static const char *module_at(struct symbols *s, uint64_t ip, uint64_t when)
{
	struct frame *f = NULL;
	size_t n = 0, cap = 0;
	CHECK(symbols_resolve_at(s, ip, when, &f, &n, &cap) == 0 && n >= 1);
	const char *m = f[0].module;
	symbols_frames_free(f, n);
	return m ? m : "";
}

/* Module lifetimes: an address captured while a module was mapped is
 * that module's, after it is gone and another takes its place too; a
 * node read just before its module's record (the recorder writes the
 * record after the first node reaching into it) is the module's too. */
static void test_module_lives(void)
{
	struct symbols *s = symbols_create(NULL);
	const uint64_t base = 0x7f0000000000, ip = base + 0x100;
	CHECK(s);
	module(s, "/nonexistent/a.so", base, 0);
	uint64_t in_a = symbols_clock(s);
	symbols_module_gone(s, base);
	uint64_t before_b = symbols_clock(s);
	module(s, "/nonexistent/b.so", base, 0);
	uint64_t in_b = symbols_clock(s);
	symbols_module_gone(s, base);
	module(s, "/nonexistent/a.so", base, 0);
	uint64_t in_a2 = symbols_clock(s);
	CHECK(!strcmp(module_at(s, ip, in_a), "/nonexistent/a.so"));
	CHECK(!strcmp(module_at(s, ip, in_a - 1), "/nonexistent/a.so"));
	CHECK(!strcmp(module_at(s, ip, before_b), "/nonexistent/b.so"));
	CHECK(!strcmp(module_at(s, ip, in_b), "/nonexistent/b.so"));
	CHECK(!strcmp(module_at(s, ip, in_a2), "/nonexistent/a.so"));
	CHECK(!strcmp(module_at(s, ip, SYMBOLS_NOW), "/nonexistent/a.so"));
	CHECK(symbols_module_count(s) == 2);
	symbols_destroy(s);
}

/* Modules: one entry per distinct module however often it is recorded
 * again (dlopen/dlclose loops), the newest covering an address, and at
 * most MODULES_MAX distinct ones. */
static void test_modules(void)
{
	struct symbols *s = symbols_create(NULL);
	CHECK(s);
	for (int i = 0; i < 100000; i++)
		module(s, "/nonexistent/libc.so.6", 0x7f0000000000, 0);
	CHECK(symbols_module_count(s) == 1);
	/* another module loaded at its place, then the first again */
	module(s, "/nonexistent/plugin.so", 0x7f0000000000, 0);
	CHECK(!symbols_in_runtime(s, 0x7f0000000100));
	module(s, "/nonexistent/libc.so.6", 0x7f0000000000, 0);
	CHECK(symbols_in_runtime(s, 0x7f0000000100));
	CHECK(symbols_module_count(s) == 2);
	for (uint64_t i = 2; i < (1u << 16); i++)
		module(s, "/nonexistent/x.so", 0x10000 * i, 0);
	CHECK(symbols_module_count(s) == 1u << 16);
	module(s, "/nonexistent/x.so", 0x10000ull << 20, -1);
	CHECK(strstr(hs_last_error(), "distinct modules"));
	symbols_destroy(s);
}

int main(void)
{
#ifndef UNDER_ASAN
	struct rlimit lim = { MEMORY_MAX, MEMORY_MAX };
	if (setrlimit(RLIMIT_AS, &lim))
		perror("setrlimit");
#endif
	test_huge_block();
	test_top_of_address_space();
	test_address_space();
	test_stack_ids();
	test_modules();
	test_module_lives();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures != 0;
}
