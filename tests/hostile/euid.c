/* Prints its effective user id (0 when it runs set-user-ID root) and
 * makes N malloc/free pairs of 777 bytes.
 *   euid N */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pairs.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	pairs(n, 777);
	printf("euid %d, %ld blocks of 777 bytes\n", (int)geteuid(), n);
	return 0;
}
