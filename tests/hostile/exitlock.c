/* A SIGALRM handler installed by the raw system call that calls _exit(3)
 * when it finds its thread holding the recorder's lock (read at the
 * offset of hs_rec in libheapslope.so, given by the test): the exit must
 * not hang, and the trace must say why it stopped.  Natively the loop
 * ends and the program exits 0.
 *   exitlock OFFSET */
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "rawsig.h"
#include "sink.h"

static volatile int *lockw;
static int mytid;
static unsigned long off;
static int find(struct dl_phdr_info *i, size_t s, void *d)
{
	(void)s; (void)d;
	if (strstr(i->dlpi_name, "libheapslope")) lockw = (int *)(i->dlpi_addr + off);
	return 0;
}
static void on_tick(int sig)
{
	(void)sig;
	if (lockw && (*lockw & ~0x40000000) == mytid) _exit(3);
}
int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	off = strtoul(argv[1], NULL, 16);
	dl_iterate_phdr(find, NULL);
	mytid = gettid();
	if (raw_sigaction(SIGALRM, (void *)on_tick, SA_RESTART))
		return 77;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long n = 0; n < 2000000; n++) { void *p = malloc(777); sink(p); free(p); }
	printf("done\n");
	return 0;
}
