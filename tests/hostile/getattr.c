/* A new thread and the main thread each ask for their own attributes
 * with pthread_getattr_np (glibc allocates inside it, holding the thread's
 * lock: Rust's and the JVM's start-up do the same), then allocate N blocks
 * of 777 bytes.
 *   getattr N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pairs.h"

static long n;

static void *work(void *arg)
{
	pthread_attr_t attr;
	void *stack;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) ||
	    pthread_attr_getstack(&attr, &stack, &size))
		return (void *)1;
	pthread_attr_destroy(&attr);
	pairs(n, 777);
	printf("%s: stack of %s size, %ld blocks\n", (const char *)arg,
	       size > 0 ? "non-zero" : "zero", n);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t th;
	if (pthread_create(&th, NULL, work, "thread"))
		return 1;
	void *ret;
	if (pthread_join(th, &ret) || ret)
		return 1;
	return work("main") ? 1 : 0;
}
