/* A SIGALRM handler installed by the raw system call (the recorder
 * cannot hold it back): when it interrupts lfalloc, the real allocator,
 * running under the recorder's hook, it allocates and frees 555 bytes,
 * and with `jump` siglongjmps back out once.  The main loop does
 * malloc/free (or realloc) until then; afterwards 1,000 pairs of 999
 * bytes.  Prints the handler's counts.
 *   jmpalloc malloc|realloc jump|nojump */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "rawsig.h"
#include "sink.h"

static sigjmp_buf env;
static volatile int armed, jumped, dojump;
static volatile long inside, hblocks;
static uintptr_t lo = UINTPTR_MAX, hi;
static int find(struct dl_phdr_info *i, size_t s, void *d)
{
	(void)s; (void)d;
	if (!strstr(i->dlpi_name, "lfalloc")) return 0;
	for (int k = 0; k < i->dlpi_phnum; k++) if (i->dlpi_phdr[k].p_type == PT_LOAD) {
		uintptr_t a = i->dlpi_addr + i->dlpi_phdr[k].p_vaddr;
		if (a < lo) lo = a;
		if (a + i->dlpi_phdr[k].p_memsz > hi) hi = a + i->dlpi_phdr[k].p_memsz;
	}
	return 1;
}
static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	(void)sig; (void)si;
	ucontext_t *uc = ucv;
	uintptr_t ip = uc->uc_mcontext.gregs[REG_RIP];
	if (!armed || ip < lo || ip >= hi) return;
	inside++;
	void *p = malloc(555);
	sink(p);
	if (p) hblocks++;
	free(p);
	if (dojump && !jumped) { jumped = 1; siglongjmp(env, 1); }
}
int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int re = !strcmp(argv[1], "realloc");
	dojump = !strcmp(argv[2], "jump");
	dl_iterate_phdr(find, NULL);
	if (!hi) { fprintf(stderr, "no lfalloc\n"); return 2; }
	if (raw_sigaction(SIGALRM, (void *)on_tick, SA_RESTART | SA_SIGINFO))
		return 77;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	sigsetjmp(env, 1);
	armed = 1;
	long n = 0;
	void *q = NULL;
	while (n < 3000000 && (dojump ? !jumped : inside < 200)) {
		if (re) { q = realloc(q, (n & 1) ? 100 : 3000); }
		else { void *p = malloc(777); sink(p); free(p); }
		n++;
	}
	armed = 0;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	free(q);
	for (int i = 0; i < 1000; i++) { void *p = malloc(999); sink(p); free(p); }
	printf("handler blocks %ld jumped %d\n", hblocks, jumped);
	return 0;
}
