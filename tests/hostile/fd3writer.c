/* Writes a line into descriptor 3, which the caller opened for it
 * (`fd3writer 3>FILE`), with N blocks of 777 bytes around it.
 *   fd3writer [N] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pairs.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	pairs(n, 777);
	static const char line[] = "written to descriptor 3\n";
	if (write(3, line, sizeof(line) - 1) != (ssize_t)sizeof(line) - 1) {
		fprintf(stderr, "fd3writer: write to descriptor 3: %s\n",
			strerror(errno));
		return 1;
	}
	printf("fd3writer: %ld blocks, one line on descriptor 3\n", n);
	return 0;
}
