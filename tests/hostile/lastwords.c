/* A process a signal kills, with its events still buffered: it makes
 * 2000 blocks of 4321 bytes (and a thread making 3210-byte ones, with
 * "thread"), says what sigaction reports for the signal, then dies of it
 * as MODE says:
 *   lastwords term|abort|segv|doublefree|int|usr1|rt|reset|ign|thread|wait
 * reset: a handler installed, then the default action put back; ign: the
 * signal ignored, so the process lives on and exits 0; wait: blocks of
 * 4321 bytes made every millisecond until a signal from outside comes. */
#define VICTIM_THREADS
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"

static void handler(int sig)
{
	(void)sig;
}

static void *churn(void *arg)
{
	(void)arg;
	for (;;) {
		void *p = malloc(3210);
		sink(p);
		free(p);
	}
	return NULL;
}

static void view(int sig)
{
	struct sigaction o;
	sigaction(sig, NULL, &o);
	printf("signal %d: %s flags %#x\n", sig,
	       o.sa_handler == SIG_DFL	 ? "default"
	       : o.sa_handler == SIG_IGN ? "ignored"
					 : "handler",
	       (unsigned)o.sa_flags & ~0x04000000u /* SA_RESTORER */);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "term";
	int sig = !strcmp(mode, "abort") || !strcmp(mode, "doublefree")
			  ? SIGABRT
		  : !strcmp(mode, "segv") ? SIGSEGV
		  : !strcmp(mode, "int")  ? SIGINT
		  : !strcmp(mode, "usr1") ? SIGUSR1
		  : !strcmp(mode, "rt")	  ? SIGRTMIN + 3
					  : SIGTERM;
	if (!strcmp(mode, "wait")) {
		printf("waiting\n");
		fflush(stdout);
		for (;;) {
			sink(malloc(4321));
			usleep(1000);
		}
	}
	for (int i = 0; i < 2000; i++)
		sink(malloc(4321));
	printf("allocated 2000\n");
	if (!strcmp(mode, "reset")) {
		signal(sig, handler);
		view(sig);
		signal(sig, SIG_DFL);
	} else if (!strcmp(mode, "ign")) {
		signal(sig, SIG_IGN);
	} else if (!strcmp(mode, "thread")) {
		if (run_threads_for(churn, 1, 50))
			return 2;
	}
	view(sig);
	if (!strcmp(mode, "segv")) {
		volatile int *null = opaque(NULL);
		*null = 1;
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "doublefree")) {
		void *p = malloc(64);
		void *volatile again = p;
		sink(p);
		free(p);
		free(again); /* glibc aborts inside free */
	} else if (!strcmp(mode, "int")) {
		kill(getpid(), sig);
	} else {
		raise(sig);
	}
	printf("alive\n");
	return 0;
}
