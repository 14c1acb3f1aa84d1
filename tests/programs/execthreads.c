/* exec while T threads allocate.
 *   execthreads T MS PROGRAM ARGS... */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sink.h"

static void *spin(void *arg)
{
	void *keep[64] = { 0 };
	for (unsigned long i = (unsigned long)(size_t)arg;; i++) {
		unsigned k = (unsigned)(i % 64);
		free(keep[k]);
		keep[k] = malloc(16 + i % 2000);
		sink(keep[k]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int t = atoi(argv[1]);
	long ms = atol(argv[2]);
	for (int i = 0; i < t; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, spin, (void *)(size_t)(i * 1000)))
			return 1;
	}
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	execv(argv[3], argv + 3);
	perror("execv");
	return 127;
}
