/* A thread sends the process SIGUSR1 every 50 us; the handler allocates
 * through libc (strdup) and frees.  The main thread, the only one that
 * takes the signal, allocates N blocks of 777 bytes with it blocked, then
 * lets it in and exits while the signals still come: handlers run inside
 * the recorder's end of the trace.
 *   exitsignals N */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pairs.h"

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	char *p = strdup("a handler's copy, made through libc");
	sink(p);
	free(p);
	handled = handled + 1;
}

static void *sender(void *arg)
{
	(void)arg;
	for (;;) {
		kill(getpid(), SIGUSR1);
		usleep(50);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* blocked here and in the sender, which inherits the mask */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th;
	if (pthread_create(&th, NULL, sender, NULL))
		return 1;
	pairs(n, 777);
	printf("exitsignals: %ld blocks of 777 bytes\n", n);
	fflush(stdout);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	while (handled < 3)
		usleep(100);
	exit(0);
}
