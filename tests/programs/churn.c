/* Many allocations of varied sizes in varied order, so that the trace is
 * large even compressed; prints a checksum and exits with STATUS.  With
 * PACE, sleeps 1 ms every PACE operations.
 *   churn N STATUS [PACE] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink.h"

#define SLOTS 8192

static void *level3(size_t n) { void *p = malloc(n); sink(p); return p; }
static void *level2(size_t n, int d) { return d ? level3(n) : malloc(n); }
static void *level1(size_t n, int d) { return d > 1 ? level2(n, d & 1) : calloc(1, n); }

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
	int status = argc > 2 ? atoi(argv[2]) : 0;
	size_t pace = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	static void *slot[SLOTS];
	uint64_t x = 88172645463325252ull, sum = 0;
	printf("churn %zu\n", n);
	fflush(stdout);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned k = (unsigned)(x % SLOTS);
		free(slot[k]);
		size_t size = 1 + (size_t)((x >> 16) % 3000);
		slot[k] = level1(size, (int)((x >> 32) % 4));
		if (!slot[k])
			return 1;
		((unsigned char *)slot[k])[0] = (unsigned char)i;
		sum += size;
		if (pace && i % pace == 0) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	for (unsigned k = 0; k < SLOTS; k++)
		free(slot[k]);
	printf("sum %llu\n", (unsigned long long)sum);
	fprintf(stderr, "churn done\n");
	return status;
}
