/* Threads stress: T threads, each doing N operations on its own slots,
 * mixing malloc, calloc, realloc and free by a fixed pseudo-random
 * sequence, then freeing what is left.  Prints the exact numbers of
 * calls it made (counted in static memory, so printing allocates only
 * stdio's buffer, after the threads are done).
 *   tstress T N */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink.h"

#define SLOTS 128
#define MAX_THREADS 64

struct worker {
	pthread_t th;
	unsigned id;
	size_t ops;
	uint64_t allocations, frees, reallocs;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	void *slot[SLOTS] = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ull * (w->id + 1);
	for (size_t i = 0; i < w->ops; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned k = (unsigned)(x % SLOTS);
		size_t size = 8 + (size_t)((x >> 20) % 500);
		unsigned op = (unsigned)((x >> 40) % 4);
		if (!slot[k]) {
			slot[k] = op & 1 ? calloc(1, size) : malloc(size);
			if (!slot[k])
				abort();
			w->allocations++;
		} else if (op == 0) {
			void *p = realloc(slot[k], size);
			if (!p)
				abort();
			slot[k] = p;
			w->reallocs++;
		} else {
			free(slot[k]);
			slot[k] = NULL;
			w->frees++;
		}
		sink(slot[k]);
	}
	for (unsigned k = 0; k < SLOTS; k++) {
		if (slot[k]) {
			free(slot[k]);
			w->frees++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	unsigned t = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 8;
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000;
	uint64_t a = 0, f = 0, r = 0;
	if (t > MAX_THREADS)
		return 2;
	for (unsigned i = 0; i < t; i++) {
		w[i].id = i;
		w[i].ops = n;
		if (pthread_create(&w[i].th, NULL, work, &w[i]))
			return 1;
	}
	for (unsigned i = 0; i < t; i++) {
		pthread_join(w[i].th, NULL);
		a += w[i].allocations;
		f += w[i].frees;
		r += w[i].reallocs;
	}
	printf("allocations=%llu frees=%llu reallocs=%llu\n",
	       (unsigned long long)a, (unsigned long long)f,
	       (unsigned long long)r);
	return 0;
}
