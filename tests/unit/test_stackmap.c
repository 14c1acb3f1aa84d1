/* Unit test of the recorder's stack table: ids are dense and stable, a
 * (parent, ip) pair is interned once, growth keeps every node, whether
 * the index has it or it is its parent's first child, and a reset
 * forgets the addresses' numbers too. */
#include <stdint.h>
#include <stdio.h>

#include "base/mix.h"
#include "check.h"
#include "record/stackmap.h"

/* The entry of the table's front cache a node under the root takes:
 * stackmap.c's front index, copied. */
static uint32_t front_of(uint64_t ip)
{
	return (uint32_t)(hs_mix64(ip) >> 32) & ((1u << 14) - 1);
}

int main(void)
{
	struct stackmap *m = stackmap_create();
	CHECK(m != NULL);
	if (!m)
		return 1;
	int is_new;
	/* a chain of 200,000 nodes forces several rehashes */
	enum { N = 200000 };
	uint32_t parent = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t id = stackmap_intern(m, parent, 0x400000 + i * 16,
					      &is_new);
		CHECK(is_new && id == i + 1);
		parent = id;
	}
	CHECK(stackmap_count(m) == N);
	parent = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t id = stackmap_intern(m, parent, 0x400000 + i * 16,
					      &is_new);
		CHECK(!is_new && id == i + 1);
		parent = id;
	}
	/* a node made under the newest node, then found again at once */
	uint32_t a = stackmap_intern(m, N, 0x10, &is_new);
	CHECK(is_new && a == N + 1);
	uint32_t b = stackmap_intern(m, a, 0x20, &is_new);
	CHECK(is_new && b == N + 2);
	CHECK(stackmap_intern(m, a, 0x20, &is_new) == b && !is_new);
	CHECK(stackmap_intern(m, N, 0x10, &is_new) == a && !is_new);
	/* same ip under another parent is another node */
	uint32_t other = stackmap_intern(m, 5, 0x400000, &is_new);
	CHECK(is_new && other == N + 3);
	/* a wide tree of many distinct addresses, some with the high bit set
	 * (another kind of frame), grows both tables */
	uint32_t first = N + 4;
	for (uint32_t i = 0; i < N; i++) {
		uintptr_t ip = (i & 1 ? (uintptr_t)1 << 63 : 0) | i * 7;
		uint32_t id = stackmap_intern(m, i % 1000, ip, &is_new);
		CHECK(is_new && id == first + i);
	}
	for (uint32_t i = 0; i < N; i++) {
		uintptr_t ip = (i & 1 ? (uintptr_t)1 << 63 : 0) | i * 7;
		CHECK(stackmap_intern(m, i % 1000, ip, &is_new) == first + i &&
		      !is_new);
	}
	CHECK(stackmap_count(m) == 2 * N + 3);
	/* first children (a new node's, not in the index) and nodes made
	 * under older nodes, mixed: each found again, none made twice, as the
	 * index grows and its slots need more bits for the ids than their
	 * count does */
	uint32_t base = stackmap_count(m);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t under = i % 3 ? base + i : 7 + i % 50;
		uint32_t id = stackmap_intern(m, under, 0x700000 + i,
					      &is_new);
		CHECK(is_new && id == base + i + 1);
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t under = i % 3 ? base + i : 7 + i % 50;
		CHECK(stackmap_intern(m, under, 0x700000 + i,
				      &is_new) == base + i + 1 &&
		      !is_new);
	}
	CHECK(stackmap_count(m) == 3 * N + 3);
	CHECK(stackmap_reset(m) == 0);
	CHECK(stackmap_count(m) == 0);
	CHECK(stackmap_intern(m, 0, 0x400000, &is_new) == 1 && is_new);
	/* the node made last before the reset is forgotten too (it was in
	 * the table's front cache) */
	CHECK(stackmap_intern(m, 5, 0x400000, &is_new) == 2 && is_new);
	/* after the reset the index still finds nodes by their return
	 * addresses (a node's hash reads its address from the table's own
	 * addresses): a chain and a wide tree grow it again */
	parent = 2;
	for (uint32_t i = 0; i < N; i++) {
		uintptr_t ip = 0x500000 + (uintptr_t)(i % 5000) * 16 +
			       (uintptr_t)(i / 5000) * 0x1000000;
		uint32_t id = stackmap_intern(m, parent, ip, &is_new);
		CHECK(is_new && id == i + 3);
		parent = i % 7 ? id : 1;
	}
	parent = 2;
	for (uint32_t i = 0; i < N; i++) {
		uintptr_t ip = 0x500000 + (uintptr_t)(i % 5000) * 16 +
			       (uintptr_t)(i / 5000) * 0x1000000;
		uint32_t id = stackmap_intern(m, parent, ip, &is_new);
		CHECK(!is_new && id == i + 3);
		parent = i % 7 ? id : 1;
	}
	CHECK(stackmap_count(m) == N + 2);
	/* a node added by a lookup whose room needed two rebuilds of the
	 * index at once (more bits for the ids, as the keys fill their
	 * array, and more slots): found again, not made twice.  3,276 nodes
	 * under the root fill the first index to its limit, first children
	 * the keys' array up to 4,095, and the next node needs both. */
	CHECK(stackmap_reset(m) == 0);
	for (uint32_t i = 0; i < 3276; i++)
		CHECK(stackmap_intern(m, 0, 0x900000 + i * 16, &is_new) ==
			      i + 1 &&
		      is_new);
	for (uint32_t i = 3277; i <= 4095; i++)
		CHECK(stackmap_intern(m, i - 1, 0x910000, &is_new) == i &&
		      is_new);
	CHECK(stackmap_intern(m, 0, 0x920000, &is_new) == 4096 && is_new);
	/* found by the index, not the front: a node that takes its front
	 * entry first (another rebuild would put every key right again) */
	uintptr_t rival = 0x930000;
	while (rival == 0x920000 || front_of(rival) != front_of(0x920000))
		rival += 16;
	CHECK(stackmap_intern(m, 0, rival, &is_new) == 4097 && is_new);
	CHECK(stackmap_intern(m, 0, 0x920000, &is_new) == 4096 && !is_new);
	CHECK(stackmap_intern(m, 0, 0x900000, &is_new) == 1 && !is_new);
	/* the addresses' numbers are forgotten by a reset too: 0xaaaa0's,
	 * the first before it, is not taken for 0xbbbb0's, the first after */
	CHECK(stackmap_reset(m) == 0);
	CHECK(stackmap_intern(m, 0, 0xaaaa0, &is_new) == 1 && is_new);
	CHECK(stackmap_reset(m) == 0);
	CHECK(stackmap_intern(m, 0, 0xbbbb0, &is_new) == 1 && is_new);
	CHECK(stackmap_intern(m, 0, 0xaaaa0, &is_new) == 2 && is_new);
	/* and each found again once the index was rebuilt from its keys
	 * (a stale number made a key the rebuild put where 0xbbbb0's goes) */
	for (uint32_t i = 0; i < N / 2; i++)
		CHECK(stackmap_intern(m, 1 + i % 2, 0x800000 + i * 16,
				      &is_new) == i + 3 &&
		      is_new);
	CHECK(stackmap_intern(m, 0, 0xaaaa0, &is_new) == 2 && !is_new);
	CHECK(stackmap_intern(m, 0, 0xbbbb0, &is_new) == 1 && !is_new);
	stackmap_destroy(m);
	stackmap_destroy(NULL);
	return check_report("stackmap");
}
