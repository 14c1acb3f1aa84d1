/* Nanoseconds per stack capture, libunwind against fast, at total depths
 * 5, 15 and 40 (frames returned).  Not a test: prints a table.
 *
 *   same    the same stack as the previous capture
 *   inner   the outer part unchanged, the innermost frame alternates
 *           between two functions (the common case in a program)
 *   outer   two stacks alternate that share only the thread's first
 *           three frames: nothing else can be reused
 *
 * Times are the thread's CPU time (the machine may be shared), best of
 * five runs, minus the same loop without captures.  The unwinder must be
 * in a library of its own (its frames are skipped): the unit tests'
 * libhsunwindtest.so, e.g. from a meson build directory B:
 *   cc -O2 -D_GNU_SOURCE -Isrc tests/bench/bench_unwind.c -lpthread \
 *      -o B/bench_unwind -LB/tests/unit -lhsunwindtest \
 *      -Wl,-rpath,$PWD/B/tests/unit
 *   B/bench_unwind [ITERATIONS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "record/unwind.h"
#include "record/unwind_fast.h"

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

enum shape { SAME, INNER, OUTER };

static int iters = 200000;
static volatile int capturing = 1;
static volatile uintptr_t sink;
static int last_n;

/* the two innermost frames: they capture */
static NOINLINE void leaf_a(void)
{
	uintptr_t ips[HS_DEPTH_MAX];
	uint64_t key;
	if (capturing)
		last_n = unwind_capture(ips, 64, &key);
	sink += ips[0];
	BARRIER();
}

static NOINLINE void leaf_b(void)
{
	uintptr_t ips[HS_DEPTH_MAX];
	uint64_t key;
	if (capturing)
		last_n = unwind_capture(ips, 64, &key);
	sink += ips[1];
	BARRIER();
}

/* two chains of d frames each */
static NOINLINE void chain_a(int d, void (*leaf)(void))
{
	if (d > 0)
		chain_a(d - 1, leaf);
	else
		leaf();
	BARRIER();
}

static NOINLINE void chain_b(int d, void (*leaf)(void))
{
	if (d > 0)
		chain_b(d - 1, leaf);
	else
		leaf();
	BARRIER();
}

/* descends d frames, then loops over the captures */
static NOINLINE void same_or_inner(int d, enum shape s)
{
	if (d > 0) {
		same_or_inner(d - 1, s);
		BARRIER();
		return;
	}
	for (int i = 0; i < iters; i++)
		(s == INNER && (i & 1) ? leaf_b : leaf_a)();
}

static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* d: frames between the thread's function and the leaf */
static double run(enum shape s, int d)
{
	double t0 = cpu_ns();
	if (s == OUTER) {
		for (int i = 0; i < iters; i++)
			(i & 1 ? chain_b : chain_a)(d - 1, leaf_a);
	} else {
		same_or_inner(d - 1, s);
	}
	return (cpu_ns() - t0) / iters;
}

static double best(enum shape s, int d)
{
	double b = 1e30;
	for (int r = 0; r < 5; r++) {
		double ns = run(s, d);
		if (ns < b)
			b = ns;
	}
	return b;
}

static void *bench(void *arg)
{
	static const char *const methods[] = { "libunwind", "fast" };
	static const char *const shapes[] = { "same", "inner", "outer" };
	static const int depths[] = { 5, 15, 40 };
	(void)arg;
	/* the frames below the chains: the thread's start, bench, the leaf */
	unwind_init("libunwind");
	run(SAME, 1);
	int base = last_n - 1;
	printf("%-10s %-6s %6s %10s %10s\n", "method", "shape", "depth",
	       "ns/capture", "fallbacks");
	for (int di = 0; di < 3; di++) {
		int d = depths[di] - base;
		for (int s = 0; s < 3; s++) {
			capturing = 0;
			double empty = best((enum shape)s, d);
			capturing = 1;
			for (int m = 0; m < 2; m++) {
				struct unwind_fast_stats a, b;
				unwind_init(methods[m]);
				run((enum shape)s, d); /* warm the caches */
				unwind_fast_stats(&a);
				double ns = best((enum shape)s, d) - empty;
				unwind_fast_stats(&b);
				printf("%-10s %-6s %6d %10.1f %10llu\n",
				       methods[m], shapes[s], last_n, ns,
				       (unsigned long long)(b.fallbacks -
							    a.fallbacks));
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	if (argc > 1)
		iters = atoi(argv[1]);
	/* a thread: its stack starts with fewer frames than main's */
	if (pthread_create(&th, NULL, bench, NULL) != 0)
		return 1;
	pthread_join(th, NULL);
	return 0;
}
