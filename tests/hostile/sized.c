/* N blocks of SIZE bytes (777 by default), each freed at once: a victim
 * whose own allocations the tests count exactly.
 *   sized N [SIZE] */
#include <stdio.h>
#include <stdlib.h>

#include "pairs.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 777;
	pairs(n, size);
	printf("sized: %ld blocks of %zu bytes\n", n, size);
	return 0;
}
