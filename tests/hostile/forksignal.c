/* The parent forks and at once tells the child "go" with SIGUSR1: a
 * signal that reaches the child while fork() is still running in it is
 * the child's, never dropped.  20 children, each waits 2 s at most.
 *   forksignal */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile sig_atomic_t go;
static void h(int s) { (void)s; go = 1; }
int main(void)
{
	struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = h;
	sigaction(SIGUSR1, &sa, NULL);
	int lost = 0;
	for (int i = 0; i < 20; i++) {
		pid_t c = fork();
		if (c == 0) {
			alarm(2);
			while (!go) pause();
			_exit(0);
		}
		kill(c, SIGUSR1);
		int st; waitpid(c, &st, 0);
		if (!WIFEXITED(st)) lost++;
	}
	printf("children that never got the signal: %d of 20\n", lost);
	return 0;
}
