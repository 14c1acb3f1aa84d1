/* Allocates and frees forever, with a batch mark every 100 rounds, until
 * killed (or SECONDS pass).  Prints its pid first.
 *   forever [SECONDS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "heapslope.h"
#include "sink.h"

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 30;
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	time_t stop = time(NULL) + seconds;
	static void *keep[4096];
	for (unsigned long i = 0; time(NULL) < stop; i++) {
		unsigned k = (unsigned)(i * 2654435761u) % 4096;
		free(keep[k]);
		keep[k] = malloc(16 + i % 1000);
		sink(keep[k]);
		if (i % 100 == 0) {
			HEAPSLOPE_MARK_BATCH();
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
