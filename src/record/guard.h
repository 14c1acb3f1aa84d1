/* Per-thread marks shared by the recorder's modules, so that a call of
 * the allocation API made underneath recorder code is told apart:
 * internal: the recorder's own code is running and may allocate (dlsym,
 *           pthread_create, libunwind): nested calls from those objects
 *           are its own, never recorded (a signal handler's are);
 * real:     the real allocator runs under a hook: what it calls of the
 *           API is its own (glibc's reallocarray calls realloc), or a
 *           signal handler's, told apart by the caller's address;
 * getattr:  inside pthread_getattr_np, which holds the thread's own
 *           descriptor lock while it allocates: the unwinder must not
 *           call it again for the stack bounds (it would wait forever). */
#ifndef HS_GUARD_H
#define HS_GUARD_H

struct hs_guard {
	int internal;
	int real;
	int getattr;
};
extern __thread struct hs_guard hs_guard
	__attribute__((tls_model("initial-exec")));

static inline void internal_begin(void)
{
	hs_guard.internal++;
}

static inline void internal_end(void)
{
	hs_guard.internal--;
}

#endif
