/* A daemon's start: closes every descriptor (the recorder's trace
 * included), opens /dev/null on 0 and 1 and its data file, which takes
 * descriptor 2, then allocates for a while (the recorder stops meanwhile:
 * its trace is gone) and writes its data.  The recorder's line about the
 * stop must not land in the data file.
 *   errdata FILE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pairs.h"

int main(int argc, char **argv)
{
	if (argc != 2 || close_range(0, ~0U, 0))
		return 2;
	if (open("/dev/null", O_RDONLY) != 0 ||
	    open("/dev/null", O_WRONLY) != 1 ||
	    open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
		return 1;
	for (int i = 0; i < 50; i++) {
		pairs(1000, 64);
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return dprintf(2, "DATA\n") == 5 ? 0 : 1;
}
