#include "lock.h"

#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

static long futex(void *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

void lock_slow(hs_lock *l, int self)
{
	for (int spin = 0; spin < 100; spin++) {
		int c = 0;
		if (__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&l->v, &c, self, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
	for (;;) {
		int v = __atomic_load_n(&l->v, __ATOMIC_RELAXED);
		if (v == 0) {
			/* others may still wait: the next give wakes one */
			if (__atomic_compare_exchange_n(
				    &l->v, &v, self | LOCK_WAITERS, 0,
				    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return;
			continue;
		}
		if (!(v & LOCK_WAITERS) &&
		    !__atomic_compare_exchange_n(&l->v, &v, v | LOCK_WAITERS, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			continue;
		futex(&l->v, FUTEX_WAIT_PRIVATE, v | LOCK_WAITERS, NULL);
	}
}

void lock_wake(hs_lock *l)
{
	futex(&l->v, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void wakeup_signal(hs_wakeup *w, int all)
{
	__atomic_fetch_add(&w->v, 1, __ATOMIC_RELEASE);
	futex(&w->v, FUTEX_WAKE_PRIVATE, all ? INT_MAX : 1, NULL);
}

/* ---- the biased lock ---- */

#define BIAS_RUN 128
static int barriers; /* membarrier works here */
__thread int hs_rlock_slot __attribute__((tls_model("initial-exec")));
__thread int hs_rlock_leaves __attribute__((tls_model("initial-exec")));

int rlock_setup(void)
{
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	barriers = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
		   syscall(SYS_membarrier,
			   MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	return barriers;
}

void rlock_reset(hs_rlock *b)
{
	/* the forking thread keeps its slot; the others' threads are not
	 * in the child: every other slot given out is free again */
	int slots = b->slots, own = hs_rlock_slot;
	memset(b, 0, offsetof(hs_rlock, free));
	b->slots = slots;
	for (int s = slots; s >= 1; s--)
		if (s != own)
			b->free[b->nfree++] = s;
}

void rlock_leave(hs_rlock *b, int self)
{
	int s = hs_rlock_slot;
	/* ending inside the lock (a handler's pthread_exit): the slot stays
	 * its, as the lock does */
	if (s <= 0 || rlock_owned(b, self))
		return;
	/* a handler run meanwhile would find l taken by its own thread: no
	 * signal until it is given back (destructors run with the program's
	 * handlers live) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	lock_take(&b->l, self);
	hs_rlock_slot = -1;
	RLOCK_LEAVE_HELD();
	/* its own bias, if any: it is not in (it took l), so no revoke */
	if (b->holder == s)
		b->holder = 0;
	if (b->nfree < RLOCK_SLOTS)
		b->free[b->nfree++] = s;
	lock_give(&b->l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* By the raw call: nanosleep is a cancellation point, and a thread
 * cancelled here would end holding l. */
static void nap(long ns)
{
	struct timespec ts = { 0, ns };
	syscall(SYS_nanosleep, &ts, NULL);
}

void hs_nap(void)
{
	nap(100000);
}

/* l held: the holder, if another thread, out; the bias kept or ended,
 * or made.  deadline: 0, or when to give up (l given back): -1. */
static int take_rest(hs_rlock *b, int self, uint64_t deadline)
{
	int h = b->holder, s = hs_rlock_slot;
	if (h && h != s) {
		__atomic_store_n(&b->revoke, 1, __ATOMIC_RELAXED);
		b->revoked = 1;
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
			    0, 0)) {
			/* cannot fail once registered, but for a filter
			 * the program installed since: no more holders;
			 * this one's store of its flag, if any, reaches us
			 * well within this wait */
			barriers = 0;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			hs_nap();
		}
		for (int spin = 0;
		     __atomic_load_n(&b->in[h], __ATOMIC_ACQUIRE); spin++) {
			if (spin < 1000) {
				__builtin_ia32_pause();
				continue;
			}
			if (deadline && mono_ns() >= deadline) {
				rlock_give_slow(b);
				return -1;
			}
			nap(20000);
		}
		if (self != b->periodic || !barriers)
			b->holder = 0;
	}
	if (self == b->periodic)
		return 0;
	if (b->last == self) {
		b->run++;
	} else {
		b->last = self;
		b->run = 1;
	}
	if (!b->holder && b->run >= BIAS_RUN && barriers && s >= 0) {
		/* a slot, at the first time it is due one, to a thread that
		 * will give it back: a given back one, or a new one; threads
		 * that never hold the bias take none */
		if (!s && hs_rlock_leaves) {
			if (b->nfree)
				s = b->free[--b->nfree];
			else
				s = b->slots + 1 < RLOCK_SLOTS ? ++b->slots
							    : -1;
			hs_rlock_slot = s;
		}
		if (s > 0)
			b->holder = s; /* from its next take on */
	}
	return 0;
}

void rlock_slow(hs_rlock *b, int self)
{
	lock_take(&b->l, self);
	(void)take_rest(b, self, 0);
}

int rlock_take_within(hs_rlock *b, int self, uint64_t ns)
{
	if (rlock_fast(b))
		return 0;
	uint64_t deadline = mono_ns() + ns;
	while (!lock_try(&b->l, self)) {
		if (mono_ns() >= deadline)
			return -1;
		hs_nap();
	}
	return take_rest(b, self, deadline);
}

void rlock_give_slow(hs_rlock *b)
{
	if (b->revoked) {
		b->revoked = 0;
		__atomic_store_n(&b->revoke, 0, __ATOMIC_RELEASE);
	}
	lock_give(&b->l);
}

void rwakeup_wait(hs_wakeup *w, hs_rlock *b, int self, uint64_t timeout_ns)
{
	uint32_t seq = __atomic_load_n(&w->v, __ATOMIC_RELAXED);
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull),
			       (long)(timeout_ns % 1000000000ull) };
	rlock_give(b);
	futex(&w->v, FUTEX_WAIT_PRIVATE, (int)seq, timeout_ns ? &ts : NULL);
	rlock_take(b, self);
}
