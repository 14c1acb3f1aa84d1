/* Ignores SIGUSR1 through a helper that always sets SA_SIGINFO (with
 * sa_handler SIG_IGN), then sends it to itself: still ignored.
 *   siginfoign */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO;
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR1, &sa, NULL);
	kill(getpid(), SIGUSR1);
	printf("still alive\n");
	return 0;
}
