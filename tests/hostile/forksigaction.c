/* One thread installs handlers in a loop while the main thread forks
 * 40 children that install one: no child may hang on a lock its
 * parent's other thread held at fork().
 *   forksigaction */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void h(int s) { (void)s; }
static void *spin(void *a)
{
	(void)a;
	for (;;) { signal(SIGUSR1, h); signal(SIGUSR2, h); }
	return NULL;
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, spin, NULL);
	int hung = 0;
	for (int i = 0; i < 40; i++) {
		pid_t p = fork();
		if (p == 0) { alarm(2); signal(SIGINT, h); _exit(0); }
		int st;
		waitpid(p, &st, 0);
		if (!WIFEXITED(st)) hung++;
	}
	printf("children killed by alarm (hung): %d of 40\n", hung);
	return 0;
}
