/* A timer signal every 100 us while the main loop makes N malloc/free
 * pairs of 777 bytes; the handler makes one pair of 555 bytes per signal
 * (it is safe with an async-signal-safe allocator such as lfalloc; with
 * glibc it is undefined but runs single-threaded, both sizes staying in
 * the thread's cache), or none.  Prints the main loop's count; writes the
 * handler's (which varies run to run) into COUNTS.
 *   sigalloc MODE N COUNTS
 * MODE: alarm-alloc (SIGALRM, handler allocates), prof-alloc (SIGPROF,
 * handler allocates), prof-quiet (SIGPROF, handler allocation-free).
 * The timer is a POSIX timer on CLOCK_MONOTONIC: ITIMER_PROF would only
 * fire at the scheduler's tick, every few milliseconds. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pairs.h"

static volatile sig_atomic_t ticks, blocks;
static int alloc_in_handler;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
	if (alloc_in_handler) {
		void *p = malloc(555);
		sink(p);
		if (p)
			blocks++;
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int sig = strncmp(argv[1], "prof", 4) ? SIGALRM : SIGPROF;
	alloc_in_handler = !!strstr(argv[1], "-alloc");
	long n = atol(argv[2]);
	/* both sizes in glibc's thread cache before the first signal */
	free(malloc(555));
	free(malloc(777));
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = sig;
	timer_t timer;
	struct itimerspec every = { { 0, 100000 }, { 0, 100000 } };
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) ||
	    timer_settime(timer, 0, &every, NULL))
		return 1;
	pairs(n, 777);
	timer_delete(timer);
	signal(sig, SIG_IGN);
	printf("main loop: %ld blocks of 777 bytes\n", n);
	FILE *f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "ticks %d\nblocks %d\n", (int)ticks, (int)blocks);
	return fclose(f) ? 1 : 0;
}
