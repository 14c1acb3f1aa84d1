/* dlopen a library, let it allocate N blocks of 50000+i bytes, free them,
 * dlclose it, then wait a little and allocate again from here.
 *   dlopener LIBRARY N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]);
	void **blocks = calloc((size_t)n, sizeof(void *));
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*fn)(int, void **) = (int (*)(int, void **))dlsym(h, "victimlib_alloc");
	if (!fn || fn(n, blocks))
		return 1;
	for (int i = 0; i < n; i++)
		free(blocks[i]);
	if (dlclose(h))
		return 1;
	/* the recorder notices the unload within its flush period */
	struct timespec ts = { 0, 300 * 1000000L };
	nanosleep(&ts, NULL);
	void *p = malloc(12345);
	sink(p);
	free(p);
	free(blocks);
	return 0;
}
