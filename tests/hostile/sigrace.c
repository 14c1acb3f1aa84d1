/* Two signals racing into the recorder, made to meet by sigrace_shim.so
 * (preloaded; it says how): a SIGRTMIN with a value arrives while the
 * recorder is busy, and a SIGALRM arrives while the recorder sets the
 * SIGRTMIN aside.  Neither may take the other's place: every SIGRTMIN
 * arrives once with its value, every SIGALRM with the siginfo tgkill gave
 * it.  Exits 1 if a siginfo was wrong or a queued signal lost; the counts
 * on stderr. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t alarms, queued, bad;

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig != SIGALRM || si->si_code != SI_TKILL ||
	    si->si_pid != getpid())
		bad++;
	alarms++;
	free(malloc(32));
}

static void on_queued(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig != SIGRTMIN || si->si_code != SI_QUEUE ||
	    si->si_value.sival_int != 42 || si->si_pid != getpid())
		bad++;
	queued++;
}

int main(void)
{
	void (*arm)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "sigrace_arm");
	int (*sent)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sigrace_sent");
	int (*fired)(void) = (int (*)(void))dlsym(RTLD_DEFAULT,
						  "sigrace_fired");
	if (!arm || !sent || !fired) {
		fprintf(stderr, "sigrace: sigrace_shim.so is not preloaded\n");
		return 2;
	}
	struct sigaction sa = { 0 };
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_sigaction = on_queued;
	sigaction(SIGRTMIN, &sa, NULL);
	void *p[256] = { 0 };
	arm(1);
	for (long i = 0; i < 200000; i++) {
		int k = i & 255;
		free(p[k]);
		p[k] = malloc((size_t)(i * 7) % 500 + 1);
	}
	arm(0);
	for (int k = 0; k < 256; k++)
		free(p[k]);
	int ok = !bad && queued == sent() && alarms <= fired();
	printf("every signal once, with its own siginfo: %s\n",
	       ok ? "yes" : "no");
	fprintf(stderr, "sigrace: SIGRTMIN sent %d, handled %d; SIGALRM sent "
		"%d, handled %d; wrong siginfo %d\n", sent(), (int)queued,
		fired(), (int)alarms, (int)bad);
	return !ok;
}
