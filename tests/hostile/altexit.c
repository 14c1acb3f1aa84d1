/* A SIGSEGV handler on an 8 KiB alternate stack that calls _exit(3):
 * the recorder's end of the trace runs on that small stack.
 *   altexit */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"

static char stack[8192];
static void h(int s) { (void)s; _exit(3); }
int main(int argc, char **argv)
{
	stack_t ss = { .ss_sp = stack, .ss_size = sizeof stack };
	sigaltstack(&ss, NULL);
	struct sigaction sa; memset(&sa, 0, sizeof sa);
	sa.sa_handler = h; sa.sa_flags = SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < 1000; i++) {
		void *q = malloc(100);
		sink(q);
		free(q);
	}
	volatile int *p = (int *)(argc > 5 ? argv : NULL);
	return *p;
}
