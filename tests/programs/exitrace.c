/* Returns from main while T threads are still allocating.
 *   exitrace T MS */
#include <stdlib.h>

#define VICTIM_THREADS
#include "sink.h"

static void *spin(void *arg)
{
	void *keep[64] = { 0 };
	for (unsigned long i = (unsigned long)(size_t)arg;; i++) {
		unsigned k = (unsigned)(i % 64);
		free(keep[k]);
		keep[k] = i % 3 ? malloc(16 + i % 2000) : calloc(1, 32 + i % 100);
		sink(keep[k]);
		if (i % 7 == 0)
			sink(keep[k] = realloc(keep[k], 1 + i % 5000));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 4;
	long ms = argc > 2 ? atol(argv[2]) : 200;
	return run_threads_for(spin, t, ms);
}
