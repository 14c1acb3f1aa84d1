/* The recorder's locks and wake-ups, on raw futexes: every event takes
 * the lock once, so its uncontended path is two atomic instructions
 * inline, and after fork it is reset by a plain store.
 *
 * A held lock holds its owner's thread id: a thread can ask whether it
 * holds a lock itself, and so never waits for itself (code of the
 * program's that runs while the recorder holds the lock, a signal
 * handler or the allocator, must not take it again). */
#ifndef HS_LOCK_H
#define HS_LOCK_H

#include <stdint.h>
#include <time.h>

/* 0 free, else the owner's tid, with LOCK_WAITERS when others wait */
typedef struct {
	int v;
} hs_lock;
#define LOCK_WAITERS 0x40000000

/* A sequence number to wait for a change of (condition-variable style). */
typedef struct {
	uint32_t v;
} hs_wakeup;

void lock_slow(hs_lock *l, int self);
void lock_wake(hs_lock *l);

/* self: the calling thread's id (never 0) */
static inline void lock_take(hs_lock *l, int self)
{
	int c = 0;
	if (!__atomic_compare_exchange_n(&l->v, &c, self, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		lock_slow(l, self);
}

static inline int lock_try(hs_lock *l, int self)
{
	int c = 0;
	return __atomic_compare_exchange_n(&l->v, &c, self, 0,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline int lock_owned(const hs_lock *l, int self)
{
	return (__atomic_load_n(&l->v, __ATOMIC_RELAXED) & ~LOCK_WAITERS) ==
	       self;
}

static inline void lock_give(hs_lock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) & LOCK_WAITERS)
		lock_wake(l);
}

/* Releases l, sleeps until e is signalled (or timeout_ns, if not 0, has
 * passed), takes l again.  Callers re-check their condition. */
void wakeup_wait(hs_wakeup *w, hs_lock *l, int self, uint64_t timeout_ns);
void wakeup_signal(hs_wakeup *w, int all);

#endif
