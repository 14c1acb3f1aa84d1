/* exec while T threads allocate.
 *   execthreads T MS PROGRAM ARGS... */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define VICTIM_THREADS
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
	if (run_threads_for(spin, t, ms))
		return 1;
	execv(argv[3], argv + 3);
	perror("execv");
	return 127;
}
