/* A program that, once started, forbids itself to open files: a seccomp
 * filter on open and openat that kills the process (kill) or fails the
 * call (eperm), as a sandboxed service does.  It opens nothing after, so
 * natively it runs to the end; the recorder must not open a file for it
 * either (glibc finds the initial thread's stack in /proc/self/maps).
 *   seccompopen kill|eperm N */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pairs.h"

static int forbid_opening(unsigned action)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	unsigned action = strcmp(argv[1], "kill") == 0
				  ? SECCOMP_RET_KILL_PROCESS
				  : SECCOMP_RET_ERRNO | EPERM;
	/* before the program's first allocation: the recorder has captured
	 * no stack of this thread yet */
	if (forbid_opening(action)) {
		perror("seccompopen: seccomp");
		return 3;
	}
	long n = atol(argv[2]);
	pairs(n, 555);
	printf("seccompopen: %ld blocks of 555 bytes\n", n);
	return 0;
}
