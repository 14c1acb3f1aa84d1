/* The program's signal handlers never run inside recorder code.
 *
 * A handler that interrupts a hook would find the recorder lock held by
 * its own thread, the unwinder's state half changed, or the thread busy
 * (so that what it allocates goes unrecorded); if it then left by
 * siglongjmp, the lock stayed held and the thread busy for good.  So the
 * handlers the program installs (sigaction, signal, sigset, sysv_signal)
 * are installed behind one wrapper: when it finds the thread busy, it
 * blocks the signal in the interrupted context and keeps its siginfo;
 * leaving recorder code, the thread queues the signal to itself again
 * with that siginfo and unblocks it, and the handler runs there, a few
 * microseconds late, as if the signal had come then.  With glibc malloc
 * this also keeps a handler that allocates out of an interrupted malloc.
 *
 * Faults (SIGSEGV, SIGBUS, ... raised by an instruction) cannot wait:
 * their handlers run at once, as do handlers installed by the raw system
 * call.  What those allocate is recorded by rec_nested; if one leaves by
 * longjmp, the interposed longjmp family notices and the recorder lets
 * go of what the interrupted code held (recorder_abandoned).
 *
 * A signal whose default action ends the process would end it with the
 * events of up to the last half second still buffered.  So while the
 * program leaves such a signal to its default action, the kernel's
 * action is the recorder's last_words, which ends the trace as exit
 * would, then puts the default action back and sends the signal again:
 * the process dies of it as it would have.  The program's view (what
 * sigaction reports) stays the default action. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "recorder.h"

#define EXPORT __attribute__((visibility("default")))
#define NSIGS 65 /* the kernel's signals are 1..64 */

static struct {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	void (*longjmp)(jmp_buf, int) __attribute__((noreturn));
	void (*_longjmp)(jmp_buf, int) __attribute__((noreturn));
	void (*siglongjmp)(sigjmp_buf, int) __attribute__((noreturn));
	void (*longjmp_chk)(jmp_buf, int) __attribute__((noreturn));
} real;

/* The program's view of each signal's action, for the signals whose
 * kernel action is the wrapper; its lock is in the page a forked child
 * gets as zeros (recorder.h), so that a child made while another thread
 * was in sigaction finds it free. */
static struct sigaction user[NSIGS];
#define TABLE_LOCK (&hs_live->table_lock)
/* last_words is the kernel's action for the program's default ones */
static int armed;

static void resolve(void)
{
	if (__atomic_load_n(&real.sigaction, __ATOMIC_ACQUIRE))
		return;
	*(void **)&real.longjmp = dlsym(RTLD_NEXT, "longjmp");
	*(void **)&real._longjmp = dlsym(RTLD_NEXT, "_longjmp");
	*(void **)&real.siglongjmp = dlsym(RTLD_NEXT, "siglongjmp");
	*(void **)&real.longjmp_chk = dlsym(RTLD_NEXT, "__longjmp_chk");
	void *f = dlsym(RTLD_NEXT, "sigaction");
	__atomic_store_n((void **)&real.sigaction, f, __ATOMIC_RELEASE);
}

/* Raised by the instruction that faulted: it would fault again. */
static int synchronous(int sig, const siginfo_t *si)
{
	switch (sig) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGTRAP:
	case SIGSYS:
		return si->si_code > 0;
	default:
		return 0;
	}
}

/* Whether the signal may wait until the thread leaves recorder code.  A
 * fault cannot; nor can abort()'s SIGABRT (abort raises it again, still
 * blocked, and ends in a crash), nor a signal the process raised itself
 * from inside the allocator or our own calls (raise() returns only after
 * the handler ran). */
static int deferrable(struct tstate *t, int sig, const siginfo_t *si)
{
	if (!t->busy || t->ndeferred >= DEFER_MAX || synchronous(sig, si) ||
	    sig == SIGABRT)
		return 0;
	if ((hs_guard.real || hs_guard.internal) &&
	    (si->si_code == SI_TKILL || si->si_code == SI_USER) &&
	    si->si_pid == getpid())
		return 0;
	return 1;
}

/* A slot of the thread's deferred signals, or -1 if all are taken.  Taken
 * before it is filled, in one instruction: a signal that comes while it
 * is filled (none is blocked in the wrapper) takes the next one, instead
 * of overwriting this one and leaving a stale slot counted. */
static int defer_slot(struct tstate *t)
{
	int i = __atomic_fetch_add(&t->ndeferred, 1, __ATOMIC_RELAXED);
	if (i < DEFER_MAX)
		return i;
	__atomic_fetch_sub(&t->ndeferred, 1, __ATOMIC_RELAXED);
	return -1;
}

/* Signals whose default action ends the process (core or not), for
 * last_words; glibc's own (32, 33) and the ones that stop or are ignored
 * by default are not.  The real-time ones from SIGRTMIN on end it too. */
static int ends_process(int sig)
{
	switch (sig) {
	case SIGHUP: case SIGINT: case SIGQUIT: case SIGILL: case SIGTRAP:
	case SIGABRT: case SIGBUS: case SIGFPE: case SIGUSR1: case SIGSEGV:
	case SIGUSR2: case SIGPIPE: case SIGALRM: case SIGTERM:
	case SIGSTKFLT: case SIGXCPU: case SIGXFSZ: case SIGVTALRM:
	case SIGPROF: case SIGIO: case SIGPWR: case SIGSYS:
		return 1;
	default:
		return sig >= SIGRTMIN && sig < NSIGS;
	}
}

static void last_words(int sig, siginfo_t *si, void *ucv);

/* What the kernel is given for the program's action a: last_words in
 * place of a default action that ends the process (in k), else a. */
static const struct sigaction *kernel_action(int sig,
					     const struct sigaction *a,
					     struct sigaction *k)
{
	if (!armed || !a || a->sa_handler != SIG_DFL || !ends_process(sig))
		return a;
	memset(k, 0, sizeof(*k));
	k->sa_sigaction = last_words;
	k->sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&k->sa_mask); /* nothing comes between, but faults */
	return k;
}

/* The thread's signal, blocked until it leaves recorder code (which
 * replays it), if it may wait: 1 then. */
static int defer(struct tstate *t, int sig, const siginfo_t *si, void *ucv)
{
	int slot = deferrable(t, sig, si) ? defer_slot(t) : -1;
	if (slot < 0)
		return 0;
	/* filled before the thread leaves recorder code, which replays it:
	 * nothing else reads it meanwhile */
	ucontext_t *uc = ucv;
	struct deferred *d = &t->deferred[slot];
	d->sig = sig;
	d->pid = getpid();
	memcpy(&d->info, si, sizeof(*si));
	sigaddset(&uc->uc_sigmask, sig);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

/* The kernel's action for a signal the program leaves to its default
 * action, which ends the process: the trace ended first.  Held back like
 * the program's handlers only while the thread holds the recorder's lock
 * mid-record: no code of the program's runs here, and the recorder code
 * it interrupts never goes on (a thread waiting for the writer would
 * otherwise wait on, where natively it died). */
static void last_words(int sig, siginfo_t *si, void *ucv)
{
	int e = errno;
	/* but in the middle of writing a record: then, when it can, it
	 * waits the few microseconds to the lock's release */
	if (recorder_mid_update() && defer(&hs_thread, sig, si, ucv)) {
		errno = e;
		return;
	}
	recorder_end_signal(sig);
	/* the default action, and the signal again: pending until the
	 * handler returns (all are blocked here), it then ends the process;
	 * a fault's instruction is never run again */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real.sigaction(sig, &dfl, NULL);
	pid_t pid = getpid(), tid = (pid_t)gettid();
	if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, si))
		syscall(SYS_tgkill, pid, tid, sig); /* its own siginfo then */
	errno = e;
}

void signals_arm(void)
{
	resolve();
	/* a pid namespace's init: the kernel ignores the default action of
	 * the signals sent to it from inside, which a handler would get */
	if (!real.sigaction || getpid() == 1)
		return;
	int self = hs_tid();
	lock_take(TABLE_LOCK, self);
	armed = 1;
	for (int sig = 1; sig < NSIGS; sig++) {
		struct sigaction cur, k;
		if (!ends_process(sig) || real.sigaction(sig, NULL, &cur) ||
		    cur.sa_handler != SIG_DFL)
			continue;
		user[sig] = cur; /* the program's view: as it is */
		real.sigaction(sig, kernel_action(sig, &cur, &k), NULL);
	}
	lock_give(TABLE_LOCK);
}

/* A one-shot handler (SA_RESETHAND) is made so here, not by the kernel,
 * which would leave our SA_SIGINFO in the flags the program reads back:
 * the first delivery claims it and puts the default action in place,
 * with the program's flags; a delivery that lost the race meets the
 * default action, as it would have. */
static int claim_one_shot(int sig, const struct sigaction *a)
{
	void *fn = (void *)a->sa_handler;
	if (!__atomic_compare_exchange_n((void **)&user[sig].sa_handler, &fn,
					 (void *)SIG_DFL, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return 0;
	struct sigaction dfl = *a, k;
	dfl.sa_handler = SIG_DFL;
	real.sigaction(sig, kernel_action(sig, &dfl, &k), NULL);
	return 1;
}

/* The handler installed for every handled signal. */
static void wrapper(int sig, siginfo_t *si, void *ucv)
{
	if (defer(&hs_thread, sig, si, ucv))
		return;
	struct sigaction a = user[sig];
	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN)
		return; /* replaced meanwhile */
	if (a.sa_flags & SA_RESETHAND && !claim_one_shot(sig, &a)) {
		/* another delivery took it: the default action, for this one */
		syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)gettid(), sig,
			si);
		return;
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, ucv);
	else
		a.sa_handler(sig);
}

void signals_replay(struct tstate *t)
{
	sigset_t all, mask;
	int e = errno;
	sigfillset(&all);
	/* nothing may come between taking the list and unblocking */
	pthread_sigmask(SIG_BLOCK, &all, &mask);
	int n = t->ndeferred;
	t->ndeferred = 0;
	/* fresh: in a process made by clone, the cached tid is the
	 * parent's */
	pid_t pid = getpid(), tid = (pid_t)gettid();
	for (int i = 0; i < n; i++) {
		struct deferred *d = &t->deferred[i];
		/* queued while blocked, with its own siginfo (allowed to
		 * oneself whatever its si_code) */
		if (d->pid == pid)
			syscall(SYS_rt_tgsigqueueinfo, pid, tid, d->sig,
				&d->info);
		sigdelset(&mask, d->sig);
	}
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	errno = e;
}

void signals_forget(struct tstate *t)
{
	/* what arrived in the parent before the fork was the parent's; what
	 * arrived here since is this child's and is let through as usual */
	sigset_t bits;
	sigemptyset(&bits);
	int keep = 0;
	pid_t pid = getpid();
	for (int i = 0; i < t->ndeferred; i++) {
		if (t->deferred[i].pid == pid)
			t->deferred[keep++] = t->deferred[i];
		else
			sigaddset(&bits, t->deferred[i].sig);
	}
	for (int i = 0; i < keep; i++)
		sigdelset(&bits, t->deferred[i].sig);
	t->ndeferred = keep;
	pthread_sigmask(SIG_UNBLOCK, &bits, NULL);
}

/* sa_handler and sa_sigaction share their place: SIG_DFL and SIG_IGN
 * are what the kernel compares, whatever the flags say */
static int wrappable(int sig, const struct sigaction *act)
{
	return sig > 0 && sig < NSIGS && sig != SIGKILL && sig != SIGSTOP &&
	       act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

EXPORT int sigaction(int sig, const struct sigaction *act,
		     struct sigaction *old)
{
	struct tstate *t = &hs_thread;
	resolve();
	if (!real.sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= NSIGS)
		return real.sigaction(sig, act, old);
	busy_enter(t);
	int self = hs_tid(), locked = !lock_owned(TABLE_LOCK, self);
	if (locked)
		lock_take(TABLE_LOCK, self);
	struct sigaction prev = user[sig], k, kold;
	const struct sigaction *use = kernel_action(sig, act, &k);
	if (wrappable(sig, act)) {
		k = *act;
		k.sa_sigaction = wrapper;
		k.sa_flags = (k.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
		use = &k;
	}
	if (use != act)
		user[sig] = *act;
	int rc = real.sigaction(sig, use, &kold);
	int e = errno;
	if (rc)
		user[sig] = prev;
	if (rc == 0 && old) {
		*old = kold;
		if ((void *)kold.sa_sigaction == (void *)wrapper ||
		    (void *)kold.sa_sigaction == (void *)last_words)
			*old = prev;
	}
	if (locked)
		lock_give(TABLE_LOCK);
	busy_leave(t);
	errno = e;
	return rc;
}

/* signal()'s family: h for sig with these flags, sig itself blocked in
 * its handler or not; the old handler, or SIG_ERR */
static sighandler_t install(int sig, sighandler_t h, int flags, int self)
{
	struct sigaction act, old;
	if (h == SIG_ERR || sig <= 0 || sig >= NSIGS) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (self)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* signal() as glibc's: BSD semantics */
EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return install(sig, h, SA_RESTART, 1);
}

/* bsd_signal and __longjmp_chk: exported by glibc, declared by no
 * header of it */
sighandler_t bsd_signal(int sig, sighandler_t h);
void __longjmp_chk(jmp_buf env, int val) __attribute__((noreturn));

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

/* System V semantics: one-shot, not blocked in its handler */
EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return install(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return sysv_signal(sig, h);
}

/* sigset() as glibc's, with SIG_HOLD */
EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	sigset_t set, old;
	struct sigaction act, oact;
	sigemptyset(&set);
	if (sig <= 0 || sig >= NSIGS || sigaddset(&set, sig) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (h == SIG_HOLD) {
		if (sigaction(sig, NULL, &oact) < 0 ||
		    pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
			return SIG_ERR;
		return sigismember(&old, sig) ? SIG_HOLD : oact.sa_handler;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &oact) < 0 ||
	    pthread_sigmask(SIG_UNBLOCK, &set, &old) != 0)
		return SIG_ERR;
	return sigismember(&old, sig) ? SIG_HOLD : oact.sa_handler;
}

/* ---- leaving recorder code by longjmp ---- */

/* glibc keeps the stack pointer of a jmp_buf mangled with the thread's
 * pointer guard (x86_64: xor, then rotate left by 17). */
static uintptr_t target_sp(const struct __jmp_buf_tag *env)
{
#if defined(__x86_64__)
	uintptr_t guard, v = (uintptr_t)env->__jmpbuf[6];
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	v = v >> 17 | v << 47;
	return v ^ guard;
#else
	(void)env;
	return UINTPTR_MAX; /* anywhere out: assume it leaves */
#endif
}

/* Whether a jump to sp leaves the busy entry whose frame is at `frame`:
 * on its own stack, a jump outwards does; from a handler on the
 * alternate stack, any jump off that stack does. */
static int leaves(uintptr_t sp, uintptr_t frame)
{
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
		uintptr_t lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
		int sp_on = sp >= lo && sp < hi;
		int frame_on = frame >= lo && frame < hi;
		if (!sp_on)
			return 1;
		if (!frame_on)
			return 0; /* within the handler */
	}
	return sp > frame;
}

/* A longjmp while the thread is busy comes from a handler that ran there
 * at once (a fault's, or one installed by the raw system call): the
 * recorder code it interrupted never goes on. */
static void before_jump(const struct __jmp_buf_tag *env)
{
	struct tstate *t = &hs_thread;
	if (__builtin_expect(!t->busy, 1) ||
	    !leaves(target_sp(env), t->busy_sp))
		return;
	recorder_abandoned();
	t->busy = 0;
	if (t->ndeferred)
		signals_replay(t);
}

#define JUMP(name, field, type)                                              \
	EXPORT __attribute__((noreturn)) void name(type env, int val)        \
	{                                                                    \
		resolve();                                                   \
		before_jump(env);                                            \
		real.field(env, val);                                        \
		__builtin_unreachable();                                     \
	}

JUMP(longjmp, longjmp, jmp_buf)
JUMP(_longjmp, _longjmp, jmp_buf)
JUMP(siglongjmp, siglongjmp, sigjmp_buf)
JUMP(__longjmp_chk, longjmp_chk, jmp_buf)
