/* Allocates N blocks of 777 bytes, closes every descriptor from 3 up
 * with close_range (the recorder's included), then allocates M blocks of
 * 999 bytes, 1 ms of sleep every 1,000, and writes a file after the
 * close.  The program must run on unchanged.
 *   closerange N M FILE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pairs.h"

static void blocks(long n, size_t size)
{
	for (long i = 0; i < n; i += 1000) {
		pairs(n - i < 1000 ? n - i : 1000, size);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long n = atol(argv[1]), m = atol(argv[2]);
	blocks(n, 777);
	if (close_range(3, ~0U, 0))
		return 1;
	blocks(m, 999);
	FILE *f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "closerange: %ld blocks, descriptors closed, %ld blocks\n",
		n, m);
	printf("closerange: wrote %s on descriptor %d\n", argv[3], fileno(f));
	return fclose(f) ? 1 : 0;
}
