/* av_inline_main.c's callees, inlined into main at link time. */
#include <stdlib.h>
#include <string.h>

void *make(size_t n);

static void *fill(size_t n)
{
	char *p = malloc(n); /* fill's allocation */
	if (p)
		memset(p, 1, n);
	return p;
}

void *make(size_t n)
{
	return fill(n + 1); /* make's call */
}
