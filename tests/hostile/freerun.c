/* N blocks allocated, then all freed: a long run of frees, the records
 * that fill a buffer in the smallest steps (the writer-stalled test).
 *   freerun N */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	if (n < 1)
		n = 1;
	void **p = malloc((size_t)n * sizeof(*p));
	if (!p)
		return 1;
	for (long i = 0; i < n; i++)
		p[i] = malloc(16 + (size_t)(i & 63));
	for (long i = 0; i < n; i++)
		free(p[i]);
	free(p);
	printf("freerun: %ld blocks\n", n);
	return 0;
}
