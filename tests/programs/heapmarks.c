/* Batches over a heap with many free chunks, for the mallinfo2 budget.
 * usage: heapmarks BATCHES HOLES SLEEP_US
 * HOLES free chunks stay in glibc's bins between live blocks (mallinfo2
 * walks each of them), then every batch sleeps SLEEP_US microseconds and
 * marks. */
#include <stdlib.h>
#include <time.h>

#include "heapslope.h"

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long batches = atol(argv[1]), holes = atol(argv[2]);
	long sleep_us = atol(argv[3]);
	void **p = malloc(2 * (size_t)holes * sizeof(*p) + 1);
	if (!p)
		return 1;
	/* too big for tcache and fastbins, and never next to another free
	 * chunk: each one stays a chunk of its own in the bins */
	for (long i = 0; i < 2 * holes; i++)
		p[i] = malloc(1000 + (size_t)(i % 7) * 16);
	for (long i = 0; i < 2 * holes; i += 2)
		free(p[i]);
	struct timespec ts = { sleep_us / 1000000, sleep_us % 1000000 * 1000 };
	for (long b = 0; b < batches; b++) {
		if (sleep_us)
			nanosleep(&ts, NULL);
		HEAPSLOPE_MARK_BATCH();
	}
	for (long i = 1; i < 2 * holes; i += 2)
		free(p[i]);
	free(p);
	return 0;
}
