#include "unwind_shadow.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../base/rmem.h"
#include "guard.h"
#include "unwind_rules.h"

__thread struct shadow *shadow __attribute__((tls_model("initial-exec")));

#ifdef UNWIND_FAST_SUPPORTED
static pthread_key_t shadow_key;
static int have_key;
static void shadow_gone(void *p);
#endif

int unwind_fast_init(void)
{
#ifdef UNWIND_FAST_SUPPORTED
	if (!have_key && pthread_key_create(&shadow_key, shadow_gone) == 0)
		have_key = 1;
	if (!have_key || rules_init())
		return -1;
	/* the starting thread's bounds now: for the initial thread glibc
	 * reads /proc/self/maps, which the program may later make
	 * unreadable (a chroot) or fatal to open (a seccomp filter) */
	struct shadow *sh = shadow;
	if (!sh)
		sh = shadow_create();
	if (sh > SHADOW_GONE && !sh->hi && !sh->bad)
		shadow_bounds(sh);
	return 0;
#else
	return -1;
#endif
}

void unwind_fast_forget(void)
{
	struct shadow *sh = shadow;
	if (sh <= SHADOW_GONE)
		return;
	/* a walk may have been cut off while it was kept or filed */
	sh->n = 0;
	sh->complete = 0;
	for (int i = 0; i < OWN_WAYS; i++)
		sh->own[i].n = 0;
	for (int i = 0; i < RECENT; i++)
		sh->recent[i].n = 0;
	memset(sh->recent_tags, 0, sizeof(sh->recent_tags));
}

void unwind_fast_stats(struct unwind_fast_stats *s)
{
	static const struct unwind_fast_stats none;
	*s = shadow > SHADOW_GONE ? shadow->st : none;
}

#ifdef UNWIND_FAST_SUPPORTED

/* The key is for its destructor only.  Created early, it gets one of
 * the first slots, whose values need no allocation (a later free of one
 * would be recorded without its allocation). */
static void shadow_gone(void *p)
{
	shadow = SHADOW_GONE; /* first: a signal handler may capture */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rmem_unmap(p, sizeof(struct shadow));
}

struct shadow *shadow_create(void)
{
	struct shadow *sh = have_key ? rmem_map(sizeof(*sh)) : NULL;
	if (!sh)
		return NULL;
	if (pthread_setspecific(shadow_key, sh)) {
		rmem_unmap(sh, sizeof(*sh));
		return NULL;
	}
	shadow = sh;
	return sh;
}

/* The program's entry stack pointer (ld.so's, GLIBC_2.2.5). */
extern void *__libc_stack_end;

/* Bounds of the initial thread's stack without /proc/self/maps (none in
 * a chroot, or a descriptor limit reached): from the stack's end at
 * entry down by its size limit, at most 64 MiB.  The kernel places no
 * mapping but a fixed one within the size limit at exec below the
 * stack's top, and at the recorder's start the limit is normally that
 * one.  Only while running on that stack, and only for the initial
 * thread: a walk reads everything between its frame and the top (a
 * fixed mapping in that range used as a stack could still fool it). */
static void initial_stack_bounds(struct shadow *sh)
{
	const uintptr_t cap = (uintptr_t)64 << 20;
	uintptr_t page = (uintptr_t)getpagesize();
	uintptr_t hi = ((uintptr_t)__libc_stack_end + page - 1) & ~(page - 1);
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	uintptr_t size = 8 << 20;
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0)
		size = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > cap
			       ? cap
			       : rl.rlim_cur;
	if (gettid() != getpid() || here >= hi || hi - here >= size)
		return;
	sh->lo = hi - size;
	sh->hi = hi;
	sh->bad = 0;
}

/* For the main thread glibc reads /proc/self/maps here (and allocates:
 * the recorder's own allocations).  Inside pthread_getattr_np, which
 * holds the thread's descriptor lock while it allocates, asking again
 * would wait forever: not now, this capture falls back, a later one
 * asks. */
void shadow_bounds(struct shadow *sh)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	sigset_t all, mask;
	if (hs_guard.getattr)
		return;
	sh->bad = 1;
	/* no handler may leave it by longjmp: glibc's sscanf of the maps
	 * would run its cleanup on a stream without a lock, and crash;
	 * the descriptor lock would stay held */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &mask);
	internal_begin();
	int rc = pthread_getattr_np(pthread_self(), &a);
	internal_end();
	if (rc == 0) {
		if (pthread_attr_getstack(&a, &addr, &size) == 0) {
			sh->lo = (uintptr_t)addr;
			sh->hi = (uintptr_t)addr + size;
			sh->bad = 0;
		}
		internal_begin();
		pthread_attr_destroy(&a);
		internal_end();
	}
	if (sh->bad)
		initial_stack_bounds(sh);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

#endif
