/* exec: allocates K blocks, then replaces itself with PROGRAM ARGS.
 *   execer K PROGRAM ARGS... */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sink.h"

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int k = atoi(argv[1]);
	for (int i = 0; i < k; i++)
		sink(malloc(300 + (size_t)i));
	execv(argv[2], argv + 2);
	perror("execv");
	return 127;
}
