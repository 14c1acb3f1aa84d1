/* Defines pthread_getattr_np (exported: the recorder's call for a
 * thread's stack bounds reaches it) and notes at each call whether
 * SIGALRM was blocked; the main thread and a new one allocate N blocks.
 *   getattrmask N COUNTS
 * Writes the calls and those made with SIGALRM deliverable to COUNTS. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "pairs.h"

static long calls, unmasked;
static long n;

int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	static int (*real)(pthread_t, pthread_attr_t *);
	sigset_t now;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_getattr_np");
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	if (!sigismember(&now, SIGALRM))
		__atomic_add_fetch(&unmasked, 1, __ATOMIC_RELAXED);
	return real ? real(th, attr) : -1;
}

static void *work(void *arg)
{
	pairs(n, 777);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th;
	if (argc != 3)
		return 2;
	n = atol(argv[1]);
	pairs(n, 777);
	if (pthread_create(&th, NULL, work, NULL) || pthread_join(th, NULL))
		return 1;
	printf("%ld blocks of 777 bytes in each of two threads\n", n);
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "calls %ld\nunmasked %ld\n", calls, unmasked);
	return fclose(f) ? 1 : 0;
}
