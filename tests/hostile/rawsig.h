/* A signal handler installed by the rt_sigaction system call, with a
 * restorer of its own: unseen by libc's sigaction and so by the
 * recorder's (which cannot hold such a handler back).  x86_64 only. */
#ifndef HOSTILE_RAWSIG_H
#define HOSTILE_RAWSIG_H

#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
/* what the kernel returns to after the handler: rt_sigreturn */
void rawsig_restorer(void);
__asm__(".text\n"
	".type rawsig_restorer,@function\n"
	"rawsig_restorer:\n"
	"\tmov $15, %eax\n"
	"\tsyscall\n"
	".size rawsig_restorer,.-rawsig_restorer\n");

struct rawsig_action {
	void *handler;
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* 0, or -1 (errno): handler for sig with flags (SA_RESTART, SA_SIGINFO) */
static inline int raw_sigaction(int sig, void *handler, unsigned long flags)
{
	struct rawsig_action a = { handler, 0x04000000 /* SA_RESTORER */
					    | flags,
				   rawsig_restorer, 0 };
	return (int)syscall(SYS_rt_sigaction, sig, &a, NULL, 8);
}
#endif

#endif
