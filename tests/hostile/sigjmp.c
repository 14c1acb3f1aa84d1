/* A timer handler (every 100 us) that allocates 555 bytes and then, at
 * pseudo-random ticks, siglongjmps back into the main loop, which makes
 * N malloc/free pairs of 777 bytes counting those it finished.  Then the
 * timer stops and M pairs of 999 bytes follow, undisturbed: the recorder
 * must still see every one of them.  Needs an allocator that is safe to
 * jump out of (lfalloc).  Prints N and M; writes the tick, jump and
 * handler block counts (they vary run to run) into COUNTS.
 *   sigjmp MODE N M COUNTS
 * MODE: sigaction (the handler installed through libc) or raw (by the
 * rt_sigaction system call with a restorer of its own, unseen by libc) */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "pairs.h"
#include "rawsig.h"

static sigjmp_buf env;
static volatile sig_atomic_t armed;
static volatile long done, ticks, jumps, blocks;
static uint64_t rng = 88172645463325252ull;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
	void *p = malloc(555);
	sink(p);
	if (p)
		blocks++;
	free(p);
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	if (armed && rng % 3 == 0) {
		jumps++;
		siglongjmp(env, 1);
	}
}

static int install_raw(void)
{
#if defined(__x86_64__)
	return raw_sigaction(SIGALRM, (void *)on_tick, SA_RESTART);
#else
	return -1;
#endif
}

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	long n = atol(argv[2]), m = atol(argv[3]);
	if (!strcmp(argv[1], "raw")) {
		if (install_raw())
			return 77;
	} else {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_tick;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
	}
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_REAL, &it, NULL);
	sigsetjmp(env, 1); /* the handler comes back here */
	armed = 1;
	while (done < n) {
		void *p = malloc(777);
		sink(p);
		free(p);
		done++;
	}
	armed = 0;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	pairs(m, 999);
	printf("main loop: %ld blocks of 777 bytes, then %ld of 999\n", n, m);
	FILE *f = fopen(argv[4], "w");
	if (!f)
		return 1;
	fprintf(f, "ticks %ld\njumps %ld\nblocks %ld\n", ticks, jumps, blocks);
	return fclose(f) ? 1 : 0;
}
