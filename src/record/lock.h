/* The recorder's lock and wake-ups, on raw futexes: every event takes the
 * lock once, so its uncontended path is two atomic instructions inline,
 * and after fork it is reset by a plain store. */
#ifndef HS_LOCK_H
#define HS_LOCK_H

#include <stdint.h>
#include <time.h>

/* 0 free, 1 held, 2 held with waiters */
typedef struct {
	int v;
} hs_lock;

/* A sequence number to wait for a change of (condition-variable style). */
typedef struct {
	uint32_t v;
} hs_event;

void lock_slow(hs_lock *l);
void lock_wake(hs_lock *l);

static inline void lock_take(hs_lock *l)
{
	int c = 0;
	if (!__atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		lock_slow(l);
}

static inline void lock_give(hs_lock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		lock_wake(l);
}

/* Releases l, sleeps until e is signalled (or timeout_ns, if not 0, has
 * passed), takes l again.  Callers re-check their condition. */
void event_wait(hs_event *e, hs_lock *l, uint64_t timeout_ns);
void event_signal(hs_event *e, int all);

#endif
