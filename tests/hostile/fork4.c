/* T threads fork at the same moment (a barrier), then make 100 pairs of
 * 555 bytes each while the others may still be forking; each child makes
 * K malloc/free pairs of 777 bytes and exits.
 *   fork4 T K */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pairs.h"

static pthread_barrier_t barrier;
static long k;

static void *forker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&barrier);
	pid_t pid = fork();
	if (pid == 0) {
		pairs(k, 777);
		exit(0);
	}
	pairs(100, 555);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return (void *)1;
	return st == 0 ? NULL : (void *)1;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 4;
	k = argc > 2 ? atol(argv[2]) : 1000;
	pthread_t th[64];
	if (t > 64)
		return 2;
	fflush(stdout);
	pthread_barrier_init(&barrier, NULL, (unsigned)t);
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, forker, NULL))
			return 1;
	int bad = 0;
	for (int i = 0; i < t; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		bad += ret != NULL;
	}
	printf("fork4: %d children forked at once, %d failed\n", t, bad);
	return bad ? 1 : 0;
}
