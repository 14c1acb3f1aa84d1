/* fork() from a thread with a cancellation request pending: fork is no
 * cancellation point, so the child runs (and the recorder's fork
 * handlers, which close and open files, must not act on the request).
 *   cancelfork */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sink.h"

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *forker(void *arg)
{
	(void)arg;
	/* until main has sent the request; no cancellation point */
	pthread_mutex_lock(&gate);
	pthread_mutex_unlock(&gate);
	pid_t c = fork();
	if (c == 0) {
		void *p = malloc(100);
		sink(p);
		free(p);
		_exit(5);
	}
	int st = 0;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	waitpid(c, &st, 0);
	printf("child exited %d status %d\n", WIFEXITED(st), WEXITSTATUS(st));
	return NULL;
}

int main(void)
{
	pthread_t t;
	void *r;
	pthread_mutex_lock(&gate);
	if (pthread_create(&t, NULL, forker, NULL))
		return 2;
	pthread_cancel(t);
	pthread_mutex_unlock(&gate);
	pthread_join(t, &r);
	printf("thread %s\n", r == PTHREAD_CANCELED ? "cancelled" : "returned");
	return 0;
}
