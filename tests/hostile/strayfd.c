/* A stray write into a descriptor the program does not own: the
 * recorder's trace, found by its name among descriptors 700 to 719 (a
 * buggy program writing to a stale number, or bash, which undoes a
 * script's redirection onto a close-on-exec descriptor of 10 and up, the
 * script then writing there).  Before, its heap grows (blocks it frees
 * only after the write); after, it allocates for a while.  Natively there
 * is no such descriptor and nothing is written.  Prints how many it
 * wrote into. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pairs.h"

#define KEPT 4000

int main(void)
{
	static void *kept[KEPT];
	int hit = 0;
	/* a growing heap, freed only after the stray write */
	for (int i = 0; i < KEPT; i++) {
		kept[i] = malloc(1000);
		if (i % 200 == 199) {
			struct timespec ts = { 0, 25000000 };
			nanosleep(&ts, NULL);
		}
	}
	for (int fd = 700; fd < 720; fd++) {
		char link[64], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (n > 4 && !strcmp(target + n - 4, ".hst") &&
		    write(fd, "hello\n", 6) == 6)
			hit++;
	}
	/* a second: the recorder writes, and finds the bytes */
	for (int i = 0; i < 40; i++) {
		pairs(1000, 48);
		struct timespec ts = { 0, 25000000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < KEPT; i++)
		free(kept[i]);
	fprintf(stderr, "strayfd: wrote into %d\n", hit);
	return 0;
}
