/* The recorder's locks and wake-ups, on raw futexes: every event takes
 * the lock once, so its uncontended path is two atomic instructions
 * inline (none for the thread the recorder's lock is biased to, below),
 * and after fork it is reset by plain stores.
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

/* Sleeps 100 us, in the recorder's waits that poll. */
void hs_nap(void);

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

/* The recorder's lock (hs_rec.lock), biased.  A thread that takes it
 * BIAS_RUN times in a row, no other thread's take between (the writer's
 * aside), becomes its holder: it then takes and gives it by plain stores
 * and loads, without the atomic instructions whose cost on an event is
 * the drain of its store buffer.  Any other thread takes l, raises
 * revoke, has every thread of the process pass a full memory barrier
 * (membarrier), which makes the holder's store to its in flag and load
 * of revoke ordered as an atomic instruction would (asymmetric Dekker),
 * and waits for that flag to be 0; a program thread's take also ends the
 * bias, which then forms again only after BIAS_RUN takes in a row.
 * Without membarrier (an old kernel, a filter) no thread is made the
 * holder.
 *
 * Each thread has an in flag of its own, found by its slot (a number the
 * lock gives it when it first becomes the holder, as long as there are
 * slots, if it will give it back: hs_rlock_leaves): a
 * former holder, delayed between its look at holder and its store to its
 * flag, stores into its own flag, never the present holder's.  A thread
 * that ends gives its slot back (rlock_leave), for a later thread: a
 * service that starts threads over and over keeps the bias. */
#define RLOCK_SLOTS 4096
typedef struct {
	hs_lock l;
	int holder;   /* slot; 0 none.  Changed with l held and revoke up */
	int revoke;   /* l's owner wants the holder out */
	int revoked;  /* l's owner raised revoke (under l) */
	int last, run; /* under l: who took it last (tid), times in a row */
	int periodic; /* a thread whose takes leave the bias (the writer) */
	int slots;    /* slots given out (under l); kept across fork */
	int nfree;    /* slots given back, free[0..nfree) (under l) */
	int in[RLOCK_SLOTS]; /* slot's thread is in without l; its own */
	int free[RLOCK_SLOTS];
} hs_rlock;

/* The calling thread's slot: 0 none yet, -1 none to be had. */
extern __thread int hs_rlock_slot __attribute__((tls_model("initial-exec")));
/* Set by the thread once something will call rlock_leave as it ends (its
 * stack cache's destructor): only such a thread is given a slot, so that
 * none is kept by a thread gone (one that only frees has no cache). */
extern __thread int hs_rlock_leaves __attribute__((tls_model("initial-exec")));

void rlock_slow(hs_rlock *b, int self);
void rlock_give_slow(hs_rlock *b);
/* rlock_take, given up after ns nanoseconds: -1 then */
int rlock_take_within(hs_rlock *b, int self, uint64_t ns);
int rlock_setup(void);              /* at start and in a forked child */
/* The calling thread (self) ends: its slot is given back, and its later
 * takes (other destructors') are plain ones.  Not with b held. */
void rlock_leave(hs_rlock *b, int self);
void rlock_reset(hs_rlock *b);      /* in a forked child */

/* Tests: a delay between the look at holder and the store to the flag,
 * as preemption may make */
#ifndef RLOCK_WINDOW
#define RLOCK_WINDOW() ((void)0)
#endif

/* Tests: a point where rlock_leave holds l, where a signal may come */
#ifndef RLOCK_LEAVE_HELD
#define RLOCK_LEAVE_HELD() ((void)0)
#else
void rlock_leave_held(void);
#endif

static inline int rlock_fast(hs_rlock *b)
{
	int s = hs_rlock_slot;
	if (s <= 0 || __atomic_load_n(&b->holder, __ATOMIC_RELAXED) != s)
		return 0;
	RLOCK_WINDOW();
	__atomic_store_n(&b->in[s], 1, __ATOMIC_RELAXED);
	/* ordered against a revoker's store of revoke by its membarrier */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&b->revoke, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&b->holder, __ATOMIC_RELAXED) == s)
		return 1;
	__atomic_store_n(&b->in[s], 0, __ATOMIC_RELEASE);
	return 0;
}

static inline void rlock_take(hs_rlock *b, int self)
{
	if (!rlock_fast(b))
		rlock_slow(b, self);
}

/* Whether the calling thread (self) holds it, either way. */
static inline int rlock_owned(const hs_rlock *b, int self)
{
	int s = hs_rlock_slot;
	return (s > 0 && __atomic_load_n(&b->in[s], __ATOMIC_RELAXED)) ||
	       lock_owned(&b->l, self);
}

static inline void rlock_give(hs_rlock *b)
{
	int s = hs_rlock_slot;
	if (s > 0 && __atomic_load_n(&b->in[s], __ATOMIC_RELAXED))
		__atomic_store_n(&b->in[s], 0, __ATOMIC_RELEASE);
	else
		rlock_give_slow(b);
}

/* Releases b, sleeps until w is signalled (or timeout_ns, if not 0, has
 * passed), takes b again.  Callers re-check their condition. */
void rwakeup_wait(hs_wakeup *w, hs_rlock *b, int self, uint64_t timeout_ns);
void wakeup_signal(hs_wakeup *w, int all);

#endif
