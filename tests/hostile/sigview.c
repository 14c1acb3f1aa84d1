/* What sigaction() reports back, before and after one-shot handlers
 * (SA_RESETHAND, sysv_signal) fire, and with a mask: the program's own
 * view, as natively.
 *   sigview */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void h(int s) { (void)s; }
static void show(const char *w, int sig)
{
	struct sigaction o;
	sigaction(sig, NULL, &o);
	printf("%s: handler=%s flags=%#x usr2inmask=%d\n", w,
	       o.sa_handler == SIG_DFL ? "DFL" : o.sa_handler == SIG_IGN ? "IGN" : o.sa_handler == h ? "h" : "other",
	       (unsigned)o.sa_flags & ~0x04000000u, sigismember(&o.sa_mask, SIGUSR2));
}
int main(void)
{
	struct sigaction a; memset(&a, 0, sizeof a);
	a.sa_handler = h; a.sa_flags = SA_RESETHAND;
	sigaction(SIGUSR1, &a, NULL);
	show("resethand before", SIGUSR1);
	raise(SIGUSR1);
	show("resethand after", SIGUSR1);
	a.sa_flags = 0; sigaddset(&a.sa_mask, SIGUSR2); sigaddset(&a.sa_mask, SIGKILL);
	sigaction(SIGUSR1, &a, NULL);
	show("with mask", SIGUSR1);
	struct sigaction old;
	sigaction(SIGUSR1, &a, &old);
	printf("old handler=%s\n", old.sa_handler == h ? "h" : "?");
	sysv_signal(SIGHUP, h);
	show("sysv", SIGHUP);
	raise(SIGHUP);
	show("sysv after", SIGHUP);
	return 0;
}
