/* Allocates under a storm of signals (an interval timer every 50 us, its
 * handler allocation-free), N malloc/free pairs, counted exactly.
 *   signals N */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "sink.h"

static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
	(void)sig;
	ticks++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: system calls see EINTR */
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < n; i++) {
		void *p = malloc(16 + (size_t)(i % 512));
		sink(p);
		free(p);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	return ticks > 0 ? 0 : 3;
}
