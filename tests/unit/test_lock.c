/* The recorder's biased lock (lock.h): mutual exclusion among threads
 * that take it in runs (so that one of them becomes its holder and takes
 * it without atomic instructions) and threads that revoke that, the
 * writer's periodic takes that keep the bias, a take given up at its
 * deadline while the holder is in, ownership, and a forked child's
 * reset while a thread of the parent was in. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* a delay, now and then, where preemption may stop a former holder: after
 * its look at holder, before its store to its flag */
static void window(void);
#define RLOCK_WINDOW() window()
#include "../../src/record/lock.h"
#include "check.h"

static hs_rlock lk;
static int barriers; /* rlock_setup's answer: holders can be made */
static int delays;   /* window() sleeps */
static __thread unsigned window_seed;

static void sleep_us(long us);

static void window(void)
{
	if (!__atomic_load_n(&delays, __ATOMIC_RELAXED))
		return;
	if (!window_seed)
		window_seed = (unsigned)(uintptr_t)&window_seed | 1;
	if (rand_r(&window_seed) % 8 == 0)
		sleep_us(20 + rand_r(&window_seed) % 80);
}

static int tid(void)
{
	return (int)syscall(SYS_gettid);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* ---- exclusion ---- */

#define WORKERS 4
#define ROUNDS 400

static volatile int inside;         /* threads in the critical section */
static volatile uint64_t count;     /* plain increments under the lock */
static int overlaps;                /* a thread found another inside */
static uint64_t taken[WORKERS + 1]; /* takes per thread */
static uint64_t fast[WORKERS + 1];  /* takes while the thread held the bias */
static int stop_periodic;

/* Under the lock: a read-modify-write with time between, which two
 * threads inside at once would lose increments of. */
static void critical(int who)
{
	if (inside)
		__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
	inside = 1;
	uint64_t c = count;
	for (int i = 0; i < 8; i++)
		__builtin_ia32_pause();
	count = c + 1;
	int slot = hs_rlock_slot;
	if (slot > 0 && __atomic_load_n(&lk.holder, __ATOMIC_RELAXED) == slot &&
	    __atomic_load_n(&lk.in[slot], __ATOMIC_RELAXED))
		fast[who]++;
	taken[who]++;
	inside = 0;
}

static void *worker(void *arg)
{
	int who = (int)(intptr_t)arg, self = tid();
	unsigned seed = (unsigned)who * 7919u + 1;
	hs_rlock_leaves = 1; /* as a thread with a stack cache */
	for (int r = 0; r < ROUNDS; r++) {
		/* runs of 1 to 600 takes: long ones make a holder, short
		 * ones of the other threads revoke it */
		int run = 1 + (int)(rand_r(&seed) % 600);
		for (int k = 0; k < run; k++) {
			rlock_take(&lk, self);
			CHECK(rlock_owned(&lk, self));
			critical(who);
			rlock_give(&lk);
		}
		if (rand_r(&seed) % 4 == 0)
			sleep_us(rand_r(&seed) % 50);
		else
			sched_yield();
	}
	return NULL;
}

/* The writer's part: a take every 200 us, which keeps the bias */
static void *periodic(void *arg)
{
	(void)arg;
	int self = tid();
	__atomic_store_n(&lk.periodic, self, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&stop_periodic, __ATOMIC_RELAXED)) {
		rlock_take(&lk, self);
		critical(WORKERS);
		rlock_give(&lk);
		sleep_us(200);
	}
	return NULL;
}

static void exclusion(const char *what)
{
	pthread_t t[WORKERS], p;
	rlock_reset(&lk);
	memset(taken, 0, sizeof(taken));
	memset(fast, 0, sizeof(fast));
	count = 0;
	overlaps = 0;
	stop_periodic = 0;
	CHECK(pthread_create(&p, NULL, periodic, NULL) == 0);
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) ==
		      0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop_periodic, 1, __ATOMIC_RELAXED);
	pthread_join(p, NULL);
	uint64_t total = 0, nfast = 0;
	for (int i = 0; i <= WORKERS; i++) {
		total += taken[i];
		nfast += fast[i];
	}
	CHECK(overlaps == 0);
	CHECK(count == total);
	CHECK(taken[WORKERS] > 0);
	if (barriers)
		CHECK(nfast > 1000); /* the bias formed, and was used */
	else
		CHECK(nfast == 0);
	printf("%s: %llu takes, %llu by a holder, %d overlaps\n", what,
	       (unsigned long long)total, (unsigned long long)nfast,
	       overlaps);
}

/* Takes and gives the lock n times in a row: more than BIAS_RUN makes
 * the thread its holder, where membarrier is there. */
static void take_run(int self, int n)
{
	hs_rlock_leaves = 1; /* as a thread with a stack cache */
	for (int i = 0; i < n; i++) {
		rlock_take(&lk, self);
		rlock_give(&lk);
	}
}

/* ---- a take given up at its deadline ---- */

static volatile int held, let_go;

/* Becomes the holder, takes the lock and stays in until let go. */
static void *stay_in(void *arg)
{
	(void)arg;
	int self = tid();
	take_run(self, 300);
	rlock_take(&lk, self);
	held = 1;
	while (!let_go)
		sleep_us(1000);
	held = 0;
	rlock_give(&lk);
	return NULL;
}

static void deadline(void)
{
	pthread_t t;
	int self = tid();
	rlock_reset(&lk);
	held = let_go = 0;
	CHECK(pthread_create(&t, NULL, stay_in, NULL) == 0);
	while (!held)
		sleep_us(1000);
	if (barriers)
		CHECK(lk.holder > 0 && lk.holder != hs_rlock_slot &&
		      lk.in[lk.holder]);
	CHECK(!rlock_owned(&lk, self));
	uint64_t t0 = now_ns();
	CHECK(rlock_take_within(&lk, self, 50 * 1000000ull) == -1);
	uint64_t waited = now_ns() - t0;
	CHECK(waited >= 50 * 1000000ull && waited < 1000 * 1000000ull);
	/* given up: the plain lock free again, the holder's take undone */
	CHECK(lk.l.v == 0 && lk.revoke == 0 && held);
	let_go = 1;
	CHECK(rlock_take_within(&lk, self, 5000 * 1000000ull) == 0);
	CHECK(!held && rlock_owned(&lk, self));
	rlock_give(&lk);
	CHECK(!rlock_owned(&lk, self));
	pthread_join(t, NULL);
}

/* ---- threads that end give their slots back ---- */

static int got_slot, got_bias, slot_after, kept_inside;

/* Takes the lock in a run, then ends as the recorder's threads do
 * (rlock_leave), once from inside the lock (which keeps the slot). */
static void *short_lived(void *arg)
{
	(void)arg;
	int self = tid();
	take_run(self, 300);
	got_slot = hs_rlock_slot;
	got_bias = lk.holder == hs_rlock_slot;
	rlock_take(&lk, self);
	rlock_leave(&lk, self); /* inside: nothing given back */
	kept_inside = hs_rlock_slot == got_slot;
	rlock_give(&lk);
	rlock_leave(&lk, self);
	slot_after = hs_rlock_slot;
	return NULL;
}

/* Takes the lock in a run without anything to give a slot back when it
 * ends (a thread that only frees: no stack cache). */
static void *keeps_nothing(void *arg)
{
	(void)arg;
	int self = tid();
	for (int i = 0; i < 300; i++) {
		rlock_take(&lk, self);
		rlock_give(&lk);
	}
	got_slot = hs_rlock_slot;
	got_bias = lk.holder != 0;
	return NULL;
}

static void turnover(void)
{
	rlock_reset(&lk);
	int before = lk.slots, missed = 0, unbiased = 0, kept = 0;
	/* more threads over time than there are slots */
	for (int i = 0; i < RLOCK_SLOTS + 500; i++) {
		pthread_t t;
		got_slot = got_bias = kept_inside = 0;
		slot_after = 1;
		CHECK(pthread_create(&t, NULL, short_lived, NULL) == 0);
		pthread_join(t, NULL);
		missed += got_slot <= 0;
		unbiased += barriers && !got_bias;
		kept += kept_inside && slot_after == -1;
	}
	CHECK(missed == 0);
	CHECK(unbiased == 0);
	CHECK(kept == RLOCK_SLOTS + 500);
	CHECK(lk.slots <= before + 1 && lk.holder == 0 && lk.l.v == 0);
	printf("turnover: %d threads, %d slot(s) given out, %d without "
	       "a slot, %d without the bias\n", RLOCK_SLOTS + 500,
	       lk.slots - before, missed, unbiased);
	/* one that could not give it back is given none, nor the bias */
	pthread_t t;
	int nfree = lk.nfree;
	got_slot = got_bias = 1;
	CHECK(pthread_create(&t, NULL, keeps_nothing, NULL) == 0);
	pthread_join(t, NULL);
	CHECK(got_slot == 0 && !got_bias && lk.nfree == nfree);
}

/* ---- a signal while an ending thread gives its slot back ---- */

static volatile int leave_signal, handler_took, handler_ran;

/* rlock_leave holds l here (the build's RLOCK_LEAVE_HELD): a signal for
 * this thread, whose handler takes the lock, as a program's that
 * allocates would through the recorder */
void rlock_leave_held(void)
{
	if (leave_signal)
		pthread_kill(pthread_self(), SIGUSR1);
}

static void take_in_handler(int sig)
{
	(void)sig;
	handler_ran = 1;
	/* at most a second: a handler run inside rlock_leave would wait
	 * for its own thread's l */
	if (rlock_take_within(&lk, tid(), 1000 * 1000000ull) == 0) {
		handler_took = 1;
		rlock_give(&lk);
	}
}

static void *leaves_signalled(void *arg)
{
	(void)arg;
	take_run(tid(), 300);
	leave_signal = 1;
	rlock_leave(&lk, tid());
	leave_signal = 0;
	return NULL;
}

static void signal_in_leave(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = take_in_handler;
	CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
	rlock_reset(&lk);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, leaves_signalled, NULL) == 0);
	pthread_join(t, NULL);
	CHECK(handler_ran && handler_took);
	CHECK(lk.l.v == 0);
	sigaction(SIGUSR1, &old, NULL);
}

/* ---- fork while a thread is in ---- */

static void forked(void)
{
	pthread_t t;
	rlock_reset(&lk);
	held = let_go = 0;
	CHECK(pthread_create(&t, NULL, stay_in, NULL) == 0);
	while (!held)
		sleep_us(1000);
	pid_t pid = fork();
	if (pid == 0) {
		/* as the recorder's fork_child: the thread in is gone */
		alarm(10);
		rlock_reset(&lk);
		(void)rlock_setup();
		int self = tid();
		take_run(self, 1000);
		_exit(lk.holder == (barriers ? hs_rlock_slot : 0) ? 0 : 3);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	let_go = 1;
	pthread_join(t, NULL);
}

int main(void)
{
	alarm(90); /* a broken lock hangs: fail, not wait for meson */
	barriers = rlock_setup();
	printf("membarrier: %s\n", barriers ? "yes" : "no (no holders)");
	exclusion("exclusion");
	/* former holders stopped between their look at holder and their
	 * store, while another thread became the holder and went in */
	delays = 1;
	exclusion("exclusion, with delays");
	delays = 0;
	deadline();
	turnover();
	signal_in_leave();
	forked();
	return check_report("test_lock");
}
