/* Unit test of the per-stack sums: on random event sequences the
 * incremental slope and R² of every stack must equal a brute-force
 * regression over its live bytes at every mark. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/regress.h"
#include "analyze/stacks.h"

#include "check.h"

enum { STACKS = 12, BATCHES_MAX = 60, BLOCKS_MAX = 4000 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct blk {
	uint32_t stack;
	uint64_t size;
};

static int close_enough(double a, double b, double scale)
{
	return fabs(a - b) <= 1e-9 * (scale > 1 ? scale : 1);
}

static void one_run(int run)
{
	uint32_t batches = (uint32_t)(next() % BATCHES_MAX);
	uint32_t user_warmup = (uint32_t)(next() % 8);
	/* two accountings: warm-up decided afterwards (from 0), and warm-up
	 * known in advance */
	struct stacks *late = stacks_create(0, 0);
	struct stacks *early = stacks_create(user_warmup, 1);
	static struct blk blocks[BLOCKS_MAX];
	static double y[STACKS][BATCHES_MAX];
	uint64_t live[STACKS] = { 0 };
	uint32_t ref_late[STACKS], ref_early[STACKS];
	size_t nblocks = 0;
	if (!late || !early)
		exit(1);
	for (uint64_t id = 1; id <= STACKS; id++) {
		/* pairs of stacks share a site (the same innermost ip) */
		CHECK(stacks_node(late, id, 0, 0x400000 + id / 2) == 0);
		CHECK(stacks_node(early, id, 0, 0x400000 + id / 2) == 0);
		ref_late[id - 1] = stacks_ref(late, id);
		ref_early[id - 1] = stacks_ref(early, id);
	}
	/* some stacks are quiet for long stretches: that is what the closed
	 * forms are for */
	uint64_t quiet = next();
	for (uint32_t b = 0; b <= batches; b++) {
		int events = (int)(next() % 40);
		for (int e = 0; e < events; e++) {
			uint32_t s = (uint32_t)(next() % STACKS);
			if ((quiet >> s & 1) && next() % 8)
				continue;
			if (nblocks && (next() % 3 == 0 || nblocks == BLOCKS_MAX)) {
				size_t i = next() % nblocks;
				struct blk k = blocks[i];
				blocks[i] = blocks[--nblocks];
				stacks_sub(late, ref_late[k.stack], k.size, b);
				stacks_sub(early, ref_early[k.stack], k.size, b);
				live[k.stack] -= k.size;
			} else {
				uint64_t size = next() % 5000;
				blocks[nblocks++] = (struct blk){ s, size };
				stacks_add(late, ref_late[s], size, b, 1);
				stacks_add(early, ref_early[s], size, b, 1);
				live[s] += size;
			}
		}
		if (b < batches) /* mark b: batch b ends */
			for (int s = 0; s < STACKS; s++)
				y[s][b] = (double)live[s];
	}
	stacks_close(late, batches);
	stacks_close(early, batches);

	struct stack_growth *g = NULL;
	size_t n = 0;
	for (uint32_t w = 0; w <= STACKS_FIRST_MAX; w++) {
		CHECK(stacks_rank(late, w, batches, 0, &g, &n) == 0);
		CHECK(n == STACKS);
		for (size_t i = 0; i < n; i++) {
			int s = (int)g[i].id - 1;
			struct regress want;
			size_t m = batches > w ? batches - w : 0;
			regress_series(y[s] + w, m, w, &want);
			double scale = 5000.0 * BLOCKS_MAX;
			if (!close_enough(g[i].bytes_per_batch, want.slope,
					  scale) ||
			    !close_enough(g[i].r2, want.r2, 1e3)) {
				fprintf(stderr, "run %d stack %d warmup %u: "
					"slope %.9g want %.9g, r2 %.9g want "
					"%.9g\n", run, s, w,
					g[i].bytes_per_batch, want.slope,
					g[i].r2, want.r2);
				failures++;
			}
			CHECK(g[i].leaked_bytes == live[s]);
			CHECK(g[i].live_bytes_at_end ==
			      (batches ? (uint64_t)y[s][batches - 1] : 0));
			if (i)
				CHECK(g[i - 1].bytes_per_batch >=
				      g[i].bytes_per_batch);
		}
		stacks_growth_free(g, n);
	}
	CHECK(stacks_rank(early, user_warmup, batches, 0, &g, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		int s = (int)g[i].id - 1;
		struct regress want;
		size_t m = batches > user_warmup ? batches - user_warmup : 0;
		regress_series(y[s] + user_warmup, m, user_warmup, &want);
		CHECK(close_enough(g[i].bytes_per_batch, want.slope,
				   5000.0 * BLOCKS_MAX));
		CHECK(close_enough(g[i].r2, want.r2, 1e3));
	}
	stacks_growth_free(g, n);
	/* sites: the slope of a site is the sum of its stacks' slopes */
	CHECK(stacks_rank(early, user_warmup, batches, 1, &g, &n) == 0);
	CHECK(n == STACKS / 2 + 1);
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		uint64_t leaked = 0;
		for (size_t j = 0; j < g[i].npaths; j++) {
			sum += g[i].paths[j].bytes_per_batch;
			leaked += g[i].paths[j].leaked_bytes;
			CHECK(g[i].paths[j].site_ip == g[i].site_ip);
		}
		CHECK(close_enough(g[i].bytes_per_batch, sum,
				   5000.0 * BLOCKS_MAX));
		CHECK(g[i].leaked_bytes == leaked);
	}
	stacks_growth_free(g, n);
	stacks_destroy(late);
	stacks_destroy(early);
}

static void test_ips(void)
{
	struct stacks *s = stacks_create(0, 0);
	uint64_t ips[8];
	CHECK(stacks_node(s, 1, 0, 0x10) == 0);
	CHECK(stacks_node(s, 2, 1, 0x20) == 0);
	CHECK(stacks_node(s, 3, 2, 0x30) == 0);
	CHECK(stacks_ips(s, 3, ips, 8) == 3);
	CHECK(ips[0] == 0x30 && ips[1] == 0x20 && ips[2] == 0x10);
	CHECK(stacks_ips(s, 3, ips, 2) == 2);
	CHECK(stacks_ips(s, 0, ips, 8) == 0);
	/* ids far out of sequence are corruption, not a huge allocation */
	CHECK(stacks_node(s, 1ull << 40, 0, 0x40) == -1);
	CHECK(stacks_node(s, 0, 0, 0x40) == -1);
	stacks_destroy(s);
}

int main(void)
{
	test_ips();
	for (int run = 0; run < 300; run++)
		one_run(run);
	return check_report("stacks");
}
