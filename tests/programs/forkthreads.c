/* fork while other threads allocate: T threads churn the heap while the
 * main thread forks F children; each child allocates and frees K blocks
 * and exits.
 *   forkthreads T F K */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sink.h"

static volatile int stop;

static void *spin(void *arg)
{
	void *keep[32] = { 0 };
	for (unsigned long i = (unsigned long)(size_t)arg; !stop; i++) {
		unsigned k = (unsigned)(i % 32);
		free(keep[k]);
		keep[k] = malloc(16 + i % 3000);
		sink(keep[k]);
	}
	for (int k = 0; k < 32; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int t = atoi(argv[1]), f = atoi(argv[2]), k = atoi(argv[3]);
	pthread_t th[64];
	if (t > 64)
		return 2;
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, spin, (void *)(size_t)(i * 77)))
			return 1;
	int bad = 0;
	for (int c = 0; c < f; c++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			for (int i = 0; i < k; i++) {
				void *p = malloc(40000 + (size_t)i);
				sink(p);
				free(p);
			}
			exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	stop = 1;
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return bad ? 1 : 0;
}
