#include "lock.h"

#include <linux/futex.h>
#include <limits.h>
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

void wakeup_wait(hs_wakeup *w, hs_lock *l, int self, uint64_t timeout_ns)
{
	uint32_t seq = __atomic_load_n(&w->v, __ATOMIC_RELAXED);
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull),
			       (long)(timeout_ns % 1000000000ull) };
	lock_give(l);
	futex(&w->v, FUTEX_WAIT_PRIVATE, (int)seq, timeout_ns ? &ts : NULL);
	lock_take(l, self);
}

void wakeup_signal(hs_wakeup *w, int all)
{
	__atomic_fetch_add(&w->v, 1, __ATOMIC_RELEASE);
	futex(&w->v, FUTEX_WAKE_PRIVATE, all ? INT_MAX : 1, NULL);
}
