/* Unit test of the raw mappings the recorder's tables live in:
 * rmem_remap_table moves a grown table onto a 2 MiB boundary with what
 * it held. */
#include <stdint.h>
#include <stdio.h>

#include "base/rmem.h"
#include "check.h"

/* A table grown from 1 MiB to 4 and then 8 moves onto a 2 MiB boundary
 * with what it held; the part it gains is zeroed and can be written; one
 * kept under 2 MiB grows as rmem_remap does. */
static void test_remap_table(void)
{
	const size_t mib = 1u << 20;
	uint64_t *t = rmem_map(mib);
	CHECK(t != NULL);
	if (!t)
		return;
	for (size_t i = 0; i < mib / 8; i++)
		t[i] = i * 0x9e3779b97f4a7c15ull;
	size_t size = mib;
	for (size_t to = 4 * mib; to <= 8 * mib; to *= 2) {
		uint64_t *g = rmem_remap_table(t, size, to);
		CHECK(g != NULL);
		if (!g)
			break;
		CHECK(((uintptr_t)g & (2 * mib - 1)) == 0);
		int kept = 1, zero = 1;
		for (size_t i = 0; i < mib / 8; i++)
			kept &= g[i] == i * 0x9e3779b97f4a7c15ull;
		for (size_t i = size / 8; i < to / 8; i++)
			zero &= g[i] == 0;
		CHECK(kept && zero);
		for (size_t i = size / 8; i < to / 8; i++)
			g[i] = 1;
		t = g;
		size = to;
	}
	rmem_unmap(t, size);
	uint8_t *s = rmem_map(64 << 10);
	CHECK(s != NULL);
	if (!s)
		return;
	s[0] = 7;
	uint8_t *g = rmem_remap_table(s, 64 << 10, 128 << 10);
	CHECK(g != NULL && g[0] == 7 && g[(128 << 10) - 1] == 0);
	if (g)
		rmem_unmap(g, 128 << 10);
}

int main(void)
{
	test_remap_table();
	return check_report("rmem");
}
