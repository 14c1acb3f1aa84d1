/* How recording stops: the recorder never exits or aborts its host.  A
 * sticky flag, one line on stderr, recording off; the trace keeps what
 * was recorded and ends with the reason. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* standard error's file as the image started; known 0: it was closed */
static struct {
	int known;
	dev_t dev;
	ino_t ino;
} err_file;

void hs_say_init(void)
{
	struct stat st;
	err_file.known = fstat(2, &st) == 0;
	err_file.dev = err_file.known ? st.st_dev : 0;
	err_file.ino = err_file.known ? st.st_ino : 0;
}

static int stderr_unchanged(void)
{
	return err_file.known && fd_is(2, err_file.dev, err_file.ino);
}

void hs_say(const char *fmt, ...)
{
	char msg[4400];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || !stderr_unchanged())
		return;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	int saved = errno; /* callers say why with it afterwards */
	struct hs_xfsz x;
	hs_xfsz_hold(&x); /* standard error may be a file at its limit */
	int err = hs_write(2, msg, (size_t)n) < 0 ? errno : 0;
	hs_xfsz_let_go(&x, err);
	errno = saved;
}

ssize_t hs_write(int fd, const void *p, size_t n)
{
	return syscall(SYS_write, fd, p, n);
}

/* The set of SIGXFSZ alone. */
static void xfsz_only(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGXFSZ);
}

void hs_xfsz_hold(struct hs_xfsz *x)
{
	sigset_t xfsz, pending;
	xfsz_only(&xfsz);
	pthread_sigmask(SIG_BLOCK, &xfsz, &x->old);
	x->pending = sigpending(&pending) == 0 &&
		     sigismember(&pending, SIGXFSZ) == 1;
}

void hs_xfsz_let_go(const struct hs_xfsz *x, int err)
{
	sigset_t xfsz;
	xfsz_only(&xfsz);
	if (err == EFBIG && !x->pending) {
		/* the raw call: sigtimedwait is a cancellation point */
		struct timespec zero = { 0, 0 };
		(void)syscall(SYS_rt_sigtimedwait, &xfsz, NULL, &zero,
			      (size_t)8 /* the kernel's sigset: 64 bits */);
	}
	/* SIGXFSZ alone: the signal wrapper may have blocked others
	 * meanwhile (a program signal deferred), which must stay so */
	if (!sigismember(&x->old, SIGXFSZ))
		pthread_sigmask(SIG_UNBLOCK, &xfsz, NULL);
}

void hs_fail(const char *what, int err)
{
	if (__atomic_exchange_n(&hs_rec.failed, 1, __ATOMIC_SEQ_CST))
		return;
	hs_live->on = 0;
	/* the trace's own last words (trace_write_stop) */
	snprintf(hs_rec.stop_reason, sizeof(hs_rec.stop_reason), "%s%s%s",
		 what, err ? ": " : "", err ? strerror(err) : "");
	hs_say("heapslope: recording stopped: %s (the program continues)",
	       hs_rec.stop_reason);
	buffer_unblock();
	writer_wake(1);
}
