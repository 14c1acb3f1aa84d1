/* A thread of a 32 KiB stack that uses most of it, then allocates: the
 * recorder's thread-local storage (which glibc takes out of every
 * thread's stack) and its frames must fit in what is left.
 *   smallstack USED */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"

static size_t used;

static void *deep(void *arg)
{
	(void)arg;
	volatile char buf[used];
	memset((char *)buf, 1, used);
	void *p = malloc(32);
	sink(p);
	free(p);
	return (void *)(long)buf[used / 2];
}

int main(int argc, char **argv)
{
	used = argc > 1 ? strtoul(argv[1], NULL, 0) : 17500;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 32768);
	pthread_t t;
	void *r;
	if (pthread_create(&t, &a, deep, NULL))
		return 2;
	pthread_join(t, &r);
	printf("used %zu of a 32 KiB stack, then malloc: ok\n", used);
	return 0;
}
