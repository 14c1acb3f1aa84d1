/* Children made without fork()'s atfork handlers: _Fork(), the raw
 * clone system call and clone() with only SIGCHLD.  Each child makes N
 * malloc/free pairs of 777 bytes and exits (the test's 1,000,000 is well
 * past what a recorder without its writer thread can buffer); the parent
 * waits and prints the status.
 *   rawfork N MODE...      MODE: _Fork, sysclone, clone */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pairs.h"

static long n;

static int churn(void *arg)
{
	(void)arg;
	pairs(n, 777);
	return 0;
}

static pid_t start(const char *mode)
{
	pid_t pid = -1;
	if (!strcmp(mode, "_Fork"))
		pid = _Fork();
	else if (!strcmp(mode, "sysclone"))
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	else if (!strcmp(mode, "clone")) {
		size_t size = 1 << 20;
		char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1,
				   0);
		if (stack == MAP_FAILED)
			return -1;
		/* the child returns from churn into an exit system call */
		pid = clone(churn, stack + size, SIGCHLD, NULL);
		munmap(stack, size); /* the child has its own copy */
		return pid;
	} else {
		return -1;
	}
	if (pid == 0)
		exit(churn(NULL));
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	n = atol(argv[1]);
	for (int i = 2; i < argc; i++) {
		fflush(stdout);
		pid_t pid = start(argv[i]);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid) {
			printf("%s: could not start or wait\n", argv[i]);
			return 1;
		}
		printf("%s child: wait status 0x%x after %ld blocks\n", argv[i],
		       st, n);
	}
	return 0;
}
