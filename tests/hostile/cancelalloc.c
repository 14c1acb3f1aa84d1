/* A thread with a cancel request pending (deferred type) makes 1,000
 * malloc/free pairs under a mutex (with `mark`, a batch mark each), then
 * reaches pthread_testcancel: it must be cancelled there, after all of
 * them, never inside malloc or a mark with the mutex held.
 *   cancelalloc [mark] */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink.h"

static volatile long done;
static volatile int ready;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *run(void *a)
{
	int mark = a != NULL;
	void (*mk)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "heapslope_mark_batch");
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	ready = 1;
	while (ready != 2) ;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	for (long i = 0; i < 1000; i++) {
		pthread_mutex_lock(&m); /* not a cancellation point */
		void *p = malloc(100 + i);
		sink(p);
		free(p);
		if (mark && mk) mk();
		pthread_mutex_unlock(&m);
		done++;
	}
	pthread_testcancel();
	return NULL;
}
int main(int argc, char **argv)
{
	pthread_t t;
	pthread_create(&t, NULL, run, argc > 1 && argv[1][0] == 'm' ? "m" : NULL);
	while (!ready) ;
	pthread_cancel(t);
	ready = 2;
	pthread_join(t, NULL);
	int r = pthread_mutex_trylock(&m);
	printf("done %ld of 1000 before cancellation; mutex %s\n", done, r ? "left LOCKED" : "free");
	return 0;
}
