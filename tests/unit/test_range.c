/* Unit test of range.c: --from / --until values, and the automatic cut
 * of the start-up and the teardown on made-up time windows. */
#include <stdio.h>
#include <string.h>

#include "analyze/range.h"
#include "analyze/series.h"

#include "check.h"

#define KiB 1024ull
#define N 20

static void test_parse(void)
{
	struct range_bound b;
	CHECK(range_parse("2.5", "--from", &b) == 0 && b.set && !b.is_batch &&
	      b.ns == 2500000000ull);
	CHECK(range_parse("0", "--from", &b) == 0 && b.ns == 0);
	CHECK(range_parse("batch:7", "--until", &b) == 0 && b.is_batch &&
	      b.batch == 7);
	CHECK(range_parse("end", "--until", &b) == 0 && b.end);
	const char *bad[] = { "-1", "", "x", "1s", "batch:", "batch:-1",
			      "batch:1x", "nan", "inf", "1e300", " 1",
			      "batch:99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(range_parse(bad[i], "--from", &b) == -1);
	CHECK(range_parse("end", "--from", &b) == -1);
}

/* Steady windows: the loop adds 100 KiB and makes 50 allocations. */
static void steady(struct batch *v, size_t n)
{
	memset(v, 0, n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		v[i].live_bytes = 50000 * KiB + i * 100 * KiB;
		v[i].allocations = 50;
	}
}

static void test_startup(void)
{
	struct batch v[N];
	steady(v, N);
	CHECK(range_startup_windows(v, N) == 1); /* window 0 rose from 0 */
	/* an import: 3 windows of churn, the live heap still rising */
	for (size_t i = 0; i < 3; i++)
		v[i].allocations = 100000;
	v[0].live_bytes = 10000 * KiB;
	v[1].live_bytes = 30000 * KiB;
	v[2].live_bytes = 50200 * KiB; /* then steady: +100 KiB */
	CHECK(range_startup_windows(v, N) == 3);
	/* churn alone counts too: 4 x 50 + 1024 allocations is the edge */
	v[5].allocations = 4 * 50 + 1024;
	CHECK(range_startup_windows(v, N) == 3);
	v[5].allocations++;
	CHECK(range_startup_windows(v, N) == 6);
	/* never past the first half */
	v[5].allocations = 50;
	v[12].allocations = 100000;
	CHECK(range_startup_windows(v, N) == 3);
	/* too few windows: no cut */
	CHECK(range_startup_windows(v, RANGE_MIN_WINDOWS - 1) == 0);
	/* a spike a collection makes and undoes within a window is no
	 * start-up; a step that stays is */
	steady(v, N);
	v[7].live_bytes += 2000 * KiB;
	CHECK(range_startup_windows(v, N) == 1);
	for (size_t i = 7; i < N; i++)
		v[i].live_bytes = 50000 * KiB + i * 100 * KiB + 2000 * KiB;
	CHECK(range_startup_windows(v, N) == 8);
	/* bursts of churn the second half has too are the run's own */
	steady(v, N);
	v[6].allocations = v[15].allocations = 5000;
	CHECK(range_startup_windows(v, N) == 1);
	v[15].allocations = 50;
	CHECK(range_startup_windows(v, N) == 7);
}

static void test_teardown(void)
{
	struct batch v[N];
	steady(v, N);
	CHECK(range_teardown_window(v, N) == N);
	/* falls from window 16 on, for good: cut after the peak at 15 */
	for (size_t i = 16; i < N; i++)
		v[i].live_bytes = v[15].live_bytes - (i - 15) * 2000 * KiB;
	CHECK(range_teardown_window(v, N) == 16);
	/* a fall that comes back is no teardown */
	v[N - 1].live_bytes = v[15].live_bytes + KiB;
	CHECK(range_teardown_window(v, N) == N);
	/* a fall that starts before the last quarter is not cut */
	steady(v, N);
	for (size_t i = 12; i < N; i++)
		v[i].live_bytes = v[11].live_bytes - (i - 11) * 2000 * KiB;
	CHECK(range_teardown_window(v, N) == N);
	/* the margin: 4 x the median change (100 KiB) + 256 KiB */
	steady(v, N);
	v[N - 1].live_bytes = v[N - 2].live_bytes - 656 * KiB;
	CHECK(range_teardown_window(v, N) == N);
	v[N - 1].live_bytes -= 1;
	CHECK(range_teardown_window(v, N) == N - 1);
}

int main(void)
{
	test_parse();
	test_startup();
	test_teardown();
	return check_report("range");
}
