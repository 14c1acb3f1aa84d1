/* Returns from main while T threads are still allocating.
 *   exitrace T MS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

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
	for (int i = 0; i < t; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, spin, (void *)(size_t)(i * 1000)))
			return 1;
	}
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	return 0;
}
