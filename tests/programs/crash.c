/* Dies by a signal after some output: crash segv | abort | kill9 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "segv";
	void *p = malloc(1000);
	sink(p);
	printf("about to die by %s\n", how);
	fprintf(stderr, "stderr: dying\n");
	fflush(stdout);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "kill9"))
		raise(SIGKILL);
	raise(SIGSEGV);
	return 0;
}
