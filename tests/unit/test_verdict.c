/* Unit test of verdict.c: each threshold of its bands (heapslope-analyze(1))
 * with a value just inside and just outside, so that moving any of them
 * fails here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/stacks.h"
#include "analyze/verdict.h"

#include "check.h"

/* Three batches after the warm-up: a slope s rises 2 s over the window. */
#define POINTS 3

/* Just below x. */
static double under(double x)
{
	return nextafter(x, -INFINITY);
}

/* One growing stack whose bytes are `share` leaked at the end. */
static struct stack_growth leaking[1];

static struct verdict_input input(double L, int has_rss, double R)
{
	leaking[0] = (struct stack_growth){ .bytes_per_batch = 1000,
					    .live_bytes_at_end = 1000,
					    .leaked_bytes = 1000 };
	return (struct verdict_input){
		.points = POINTS,
		.live_slope = L, .live_r2 = 1,
		.has_rss = has_rss, .rss_slope = R, .rss_r2 = 1,
		.stacks = leaking, .nstacks = 1,
		.complete = 1,
	};
}

static enum verdict decide(const struct verdict_input *in)
{
	struct verdict_why why;
	verdict_decide(in, &why);
	return why.verdict;
}

/* The live heap grows when it rises 16 KiB over the window. */
static void test_live_bytes(void)
{
	struct verdict_input in = input(8192, 0, 0);
	CHECK(decide(&in) == VERDICT_LEAK);
	in.live_slope = under(8192);
	CHECK(decide(&in) == VERDICT_STABLE);
	/* a shrinking heap does not grow */
	in.live_slope = -1e9;
	CHECK(decide(&in) == VERDICT_STABLE);
}

/* R grows when it rises 256 KiB over the window. */
static void test_rss_bytes(void)
{
	struct verdict_input in = input(0, 1, 131072);
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	in.rss_slope = under(131072);
	CHECK(decide(&in) == VERDICT_STABLE);
}

/* ... and by at least 1% of the series' mean, either sign, unless the
 * rise is a steady line (R² >= 0.9): then it grows whatever the mean. */
static void test_share_of_mean(void)
{
	struct verdict_input in = input(10000, 0, 0); /* rises 20000 B */
	in.live_r2 = under(0.9);
	in.live_mean = 1999999;
	CHECK(decide(&in) == VERDICT_LEAK);
	in.live_mean = 2000001;
	CHECK(decide(&in) == VERDICT_STABLE);
	in.live_mean = -2000001;
	CHECK(decide(&in) == VERDICT_STABLE);
	in.live_r2 = 0.9;
	CHECK(decide(&in) == VERDICT_LEAK);
	in = input(0, 1, 200000); /* R rises 400000 B */
	in.rss_r2 = under(0.9);
	in.rss_mean = 39999999;
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	in.rss_mean = 40000001;
	CHECK(decide(&in) == VERDICT_STABLE);
	/* a DataLoader's RSS without its mappings: 69 KiB a step over 36
	 * steps of a 300 MB process, R² 0.999 */
	in = input(1455, 1, 70613);
	in.points = 36;
	in.live_mean = 90e6;
	in.rss_mean = 300e6;
	in.rss_r2 = 0.999;
	CHECK(decide(&in) != VERDICT_STABLE);
}

/* ... with R² at least 0.5. */
static void test_r2(void)
{
	struct verdict_input in = input(8192, 0, 0);
	in.live_r2 = 0.5;
	CHECK(decide(&in) == VERDICT_LEAK);
	in.live_r2 = under(0.5);
	CHECK(decide(&in) == VERDICT_STABLE);
	in = input(0, 1, 131072);
	in.rss_r2 = 0.5;
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	in.rss_r2 = under(0.5);
	CHECK(decide(&in) == VERDICT_STABLE);
}

/* Fewer than 3 batches after the warm-up say nothing. */
static void test_points(void)
{
	struct verdict_input in = input(1e9, 1, 1e6);
	struct verdict_why why;
	CHECK(decide(&in) == VERDICT_LEAK);
	in.points = 2;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_STABLE);
	CHECK(strstr(why.text, "too few") != NULL);
}

/* Both grow: L/R >= 0.5 leak or retention, [0.2, 0.5) mixed, below 0.2
 * fragmentation. */
static void test_ratio(void)
{
	struct verdict_input in = input(500000, 1, 1000000);
	CHECK(decide(&in) == VERDICT_LEAK);
	in.live_slope = under(500000);
	CHECK(decide(&in) == VERDICT_MIXED);
	in.live_slope = 200000;
	CHECK(decide(&in) == VERDICT_MIXED);
	in.live_slope = under(200000);
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	/* R that does not grow leaves the live heap's answer */
	in = input(500000, 1, under(131072));
	CHECK(decide(&in) == VERDICT_LEAK);
}

/* Leak when at least half the growing stacks' slope is still live at the
 * end; retention below. */
static void test_leaked_share(void)
{
	struct verdict_input in = input(8192, 0, 0);
	struct verdict_why why;
	leaking[0].leaked_bytes = 500;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_LEAK && why.leaked_share == 0.5);
	leaking[0].leaked_bytes = 499;
	CHECK(decide(&in) == VERDICT_RETENTION);
	/* stacks weigh by their slope; those that do not grow, not at all */
	struct stack_growth grow[3] = {
		{ .bytes_per_batch = 300, .live_bytes_at_end = 10,
		  .leaked_bytes = 20 }, /* more leaked than live: weight 1 */
		{ .bytes_per_batch = 300, .live_bytes_at_end = 10 },
		{ .bytes_per_batch = 0, .live_bytes_at_end = 10,
		  .leaked_bytes = 10 },
	};
	in.stacks = grow;
	in.nstacks = 3;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_LEAK && why.leaked_share == 0.5);
	grow[1].bytes_per_batch = 301;
	CHECK(decide(&in) == VERDICT_RETENTION);
	/* an incomplete trace says so */
	grow[1].bytes_per_batch = 300;
	in.complete = 0;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_LEAK && strstr(why.text, "incomplete"));
	/* retention whose blocks only the teardown frees says so: still
	 * live when exit began, for half the slope or more */
	in.complete = 1;
	grow[0].leaked_bytes = 0;
	grow[0].live_at_exit = 10;
	in.has_exiting = 1;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_RETENTION && why.exit_share == 0.5 &&
	      strstr(why.text, "freed only as the process exits"));
	grow[0].live_at_exit = 9;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_RETENTION &&
	      strstr(why.text, "freed by exit") &&
	      !strstr(why.text, "only as"));
	grow[0].live_at_exit = 10;
	in.has_exiting = 0; /* no exiting record: nothing to say */
	verdict_decide(&in, &why);
	CHECK(!strstr(why.text, "only as"));
}

/* Without RSS samples the allocator's footprint is R; with both, RSS. */
static void test_footprint(void)
{
	struct verdict_input in = input(0, 0, 0);
	struct verdict_why why;
	in.has_heap = 1;
	in.heap_slope = 131072;
	in.heap_r2 = 1;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_FRAGMENTATION && why.r_is_heap);
	in.heap_slope = under(131072);
	CHECK(decide(&in) == VERDICT_STABLE);
	in.heap_slope = 1e9;
	in.has_rss = 1; /* RSS known, and flat */
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_STABLE && !why.r_is_heap);
}

/* M grows like the live heap: 16 KiB over the window; it is `mapped`
 * when at least as fast as L and at least half of R. */
static void test_mapped(void)
{
	struct verdict_input in = input(0, 1, 0);
	struct verdict_why why;
	in.has_maps = 1;
	in.mapped_r2 = 1;
	in.mapped_slope = 8192;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_MAPPED && why.mapped_grows);
	in.mapped_slope = under(8192);
	CHECK(decide(&in) == VERDICT_STABLE);
	/* ... R² >= 0.5 */
	in.mapped_slope = 8192;
	in.mapped_r2 = under(0.5);
	CHECK(decide(&in) == VERDICT_STABLE);
	in.mapped_r2 = 1;
	/* without mapping records there is no M */
	in.has_maps = 0;
	CHECK(decide(&in) == VERDICT_STABLE);
	in.has_maps = 1;
	/* M >= 0.5 R */
	in.rss_slope = 1000000;
	in.mapped_slope = 500000;
	CHECK(decide(&in) == VERDICT_MAPPED);
	in.mapped_slope = under(500000);
	in.has_retained = 1; /* T explains nothing: M's part is big */
	CHECK(decide(&in) == VERDICT_MIXED);
	/* M >= L: the larger names the verdict */
	in = input(100000, 1, 150000);
	in.has_maps = 1;
	in.mapped_r2 = 1;
	in.mapped_slope = 100000;
	CHECK(decide(&in) == VERDICT_MAPPED);
	in.mapped_slope = under(100000);
	CHECK(decide(&in) == VERDICT_LEAK);
}

/* R grows and neither L nor M explains it: with glibc's retained memory
 * T known, fragmentation only when T >= 0.5 R, else other. */
static void test_retained(void)
{
	struct verdict_input in = input(0, 1, 1000000);
	in.has_retained = 1;
	in.retained_slope = 500000;
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	in.retained_slope = under(500000);
	CHECK(decide(&in) == VERDICT_OTHER);
	/* T explains R and the live heap a part: mixed */
	in = input(200000, 1, 1000000);
	in.has_retained = 1;
	in.retained_slope = 800000;
	CHECK(decide(&in) == VERDICT_MIXED);
	in.live_slope = under(200000);
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	/* T unknown (another allocator): fragmentation as before */
	in = input(0, 1, 1000000);
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
}

/* A fragmentation whose pinned pages lie mostly below blocks of growing
 * stacks, while the live heap grows, says the program's kept blocks hold
 * them; not when the live heap is flat, or the pins are others'. */
static void test_pinned_by_growing(void)
{
	struct verdict_input in = input(20000, 1, 1000000);
	struct verdict_why why;
	in.has_retained = 1;
	in.retained_slope = 900000;
	in.has_pins = 1;
	in.pinned_by_growing = 0.5;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_FRAGMENTATION &&
	      strstr(why.text, "below blocks of the growing stacks"));
	in.pinned_by_growing = 0.49;
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_FRAGMENTATION &&
	      !strstr(why.text, "growing stacks") &&
	      strstr(why.text, "the allocator keeps freed memory"));
	in.pinned_by_growing = 1;
	in.has_pins = 0;
	verdict_decide(&in, &why);
	CHECK(!strstr(why.text, "growing stacks"));
	in.has_pins = 1;
	in.live_slope = 0; /* nothing kept grows */
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_FRAGMENTATION &&
	      !strstr(why.text, "growing stacks"));
}

/* RSS rises into memory already held (xz -6): touching when RSS starts
 * below live + mapped and rises by no more than that. */
static void test_touching(void)
{
	const double MiB = 1024.0 * 1024;
	struct verdict_input in = input(0, 1, 10 * MiB);
	struct verdict_why why;
	in.has_retained = 1;
	in.held_first = in.held_last = 100 * MiB;
	in.rss_first = 10 * MiB;
	in.rss_last = 110 * MiB; /* rose by 100 MiB: all that is held */
	verdict_decide(&in, &why);
	CHECK(why.verdict == VERDICT_TOUCHING);
	CHECK(strstr(why.text, "not fragmentation") != NULL);
	in.rss_last = nextafter(in.rss_last, INFINITY);
	CHECK(decide(&in) == VERDICT_OTHER);
	in.rss_last = 90 * MiB;
	in.rss_first = 100 * MiB; /* did not start below what is held */
	CHECK(decide(&in) == VERDICT_OTHER);
	in.rss_first = under(100 * MiB);
	CHECK(decide(&in) == VERDICT_TOUCHING);
	/* T explaining R comes first */
	in.retained_slope = 5 * MiB;
	CHECK(decide(&in) == VERDICT_FRAGMENTATION);
	/* a growing live heap is not touching */
	in = input(1 * MiB, 1, 10 * MiB);
	in.held_first = in.held_last = 100 * MiB;
	in.rss_first = 10 * MiB;
	in.rss_last = 50 * MiB;
	in.has_retained = 1;
	CHECK(decide(&in) == VERDICT_OTHER);
}

int main(void)
{
	test_live_bytes();
	test_rss_bytes();
	test_share_of_mean();
	test_r2();
	test_points();
	test_ratio();
	test_leaked_share();
	test_footprint();
	test_mapped();
	test_retained();
	test_pinned_by_growing();
	test_touching();
	return check_report("verdict");
}
