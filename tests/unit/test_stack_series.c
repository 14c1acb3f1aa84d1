/* Unit test of the stacks' series (stack_series.h): blocks that come and
 * go between marks log a stack's live bytes only at the marks where they
 * changed, as stacks.c sums them; a stack back to its value by the next
 * mark logs nothing. */
#include <stdint.h>

#include "analyze/replay.h"
#include "analyze/stack_series.h"

#include "check.h"

static void add(struct stack_series *l, uint32_t slot, uint64_t size,
		uint32_t batch)
{
	struct replay_block b = { 0x1000, size, slot, batch };
	CHECK(stack_series_consumer.block_add(l, &b, REPLAY_ALLOCATED) == 0);
}

static void drop(struct stack_series *l, uint32_t slot, uint64_t size,
		 uint32_t batch)
{
	struct replay_block b = { 0x1000, size, slot, 0 };
	stack_series_consumer.block_drop(l, &b, batch, REPLAY_FREED);
}

int main(void)
{
	struct stack_series *l = stack_series_create();
	CHECK(l);
	if (!l)
		return check_report("test_stack_series");
	/* slot 0 grows by 100 each batch (marks 0..3 see 100..400) */
	for (uint32_t b = 0; b < 4; b++)
		add(l, 0, 100, b);
	/* slot 5 allocates and frees within every batch: nothing logged */
	for (uint32_t b = 0; b < 4; b++) {
		add(l, 5, 64, b);
		drop(l, 5, 64, b);
	}
	/* slot 2 holds 50 from batch 1 on, freed in batch 3 */
	add(l, 2, 50, 1);
	drop(l, 2, 50, 3);
	const struct stack_series_change *v;
	size_t n;
	CHECK(stack_series_close(l, 4, &v, &n) == 0);
	uint64_t want[3][4] = { { 100, 200, 300, 400 }, { 0 },
				{ 0, 50, 50, 0 } };
	uint64_t got[3][4] = { { 0 } };
	uint32_t last[3] = { 0 };
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i].slot == 0 || v[i].slot == 2);
		CHECK(v[i].mark < 4);
		if (v[i].slot > 2 || v[i].mark >= 4)
			continue;
		CHECK(v[i].mark >= last[v[i].slot]); /* in mark order */
		last[v[i].slot] = v[i].mark;
		for (uint32_t k = v[i].mark; k < 4; k++)
			got[v[i].slot][k] = v[i].value;
	}
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 4; k++)
			CHECK(got[s][k] == want[s][k]);
	CHECK(n == 4 + 2); /* 100..400 for slot 0; 50 then 0 for slot 2 */
	stack_series_destroy(l);
	stack_series_destroy(NULL);
	return check_report("test_stack_series");
}
