/* dlopen/dlclose in T threads at once, R rounds each; every round lets the
 * library allocate 3 blocks, then frees them.  Module records are written
 * while other threads allocate and load.
 *   dlstress LIBRARY T R */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const char *lib;
static int rounds;

static void *work(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		void *blocks[3];
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			return (void *)1;
		int (*fn)(int, void **) =
			(int (*)(int, void **))dlsym(h, "victimlib_alloc");
		if (!fn || fn(3, blocks))
			return (void *)1;
		for (int i = 0; i < 3; i++)
			free(blocks[i]);
		if (dlclose(h))
			return (void *)1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	lib = argv[1];
	int t = atoi(argv[2]);
	rounds = atoi(argv[3]);
	pthread_t th[32];
	if (t > 32)
		return 2;
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, work, NULL))
			return 1;
	int bad = 0;
	for (int i = 0; i < t; i++) {
		void *rc;
		pthread_join(th[i], &rc);
		bad |= rc != NULL;
	}
	printf("%s\n", bad ? "failed" : "ok");
	return bad;
}
