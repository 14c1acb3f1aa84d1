/* A crash reporter: the SIGABRT handler writes a report and exits 7;
 * then glibc finds a double free inside free() and calls abort(), while
 * the recorder's hook is running.  The handler must run (abort() cannot
 * wait for it: it raises SIGABRT again and would crash).
 *   abortfree */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"

static void report(int sig)
{
	(void)sig;
	(void)!write(1, "crash report written\n", 21);
	_exit(7);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = report;
	sigaction(SIGABRT, &sa, NULL);
	void *p = malloc(64);
	void *volatile again = p; /* the compiler must not see the double */
	sink(p);
	free(p);
	free(again);
	return 0;
}
