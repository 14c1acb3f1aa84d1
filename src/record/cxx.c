/* The C++ operators new and delete, every variant of the Itanium ABI for a
 * 64-bit size_t.  An allocator preloaded under the recorder (jemalloc,
 * tcmalloc, mimalloc) defines them itself, so a C++ program's new would
 * never reach our malloc: each is recorded here, then handed to the
 * operator the program would have called without us.  When that is
 * libstdc++'s, it calls malloc and free, which find the thread busy and
 * record nothing: each new and delete is one event, whatever is below.
 *
 * operator new may throw.  The real one is called from a frame whose
 * personality routine records the failure and ends the busy state as the
 * exception leaves it, so nothing of the recorder's is held by then.  The
 * recorder is C: that routine stands in for a cleanup, without linking
 * to any unwinder. */
#include "cxx.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdlib.h>

#include "elfsym.h"

#define EXPORT __attribute__((visibility("default")))
#define INLINE static inline __attribute__((always_inline))

__thread struct cxx_flight *cxx_flight HS_TLS;

/* Of the Itanium ABI's unwinding interface, what a personality routine
 * that installs nothing needs (<unwind.h> is the unwinder's business). */
#define UA_CLEANUP_PHASE 2
#define URC_CONTINUE_UNWIND 8

/* size_t mangles as 'm' only where it is unsigned long */
#if __SIZEOF_SIZE_T__ == __SIZEOF_LONG__

enum op {
	NEW, NEW_ARRAY, NEW_NOTHROW, NEW_ARRAY_NOTHROW,
	NEW_ALIGNED, NEW_ARRAY_ALIGNED, NEW_ALIGNED_NOTHROW,
	NEW_ARRAY_ALIGNED_NOTHROW,
	DELETE, DELETE_ARRAY, DELETE_SIZED, DELETE_ARRAY_SIZED,
	DELETE_NOTHROW, DELETE_ARRAY_NOTHROW, DELETE_ALIGNED,
	DELETE_ARRAY_ALIGNED, DELETE_SIZED_ALIGNED, DELETE_ARRAY_SIZED_ALIGNED,
	DELETE_ALIGNED_NOTHROW, DELETE_ARRAY_ALIGNED_NOTHROW,
	OP_COUNT
};

static const char *const names[OP_COUNT] = {
	[NEW] = "_Znwm",
	[NEW_ARRAY] = "_Znam",
	[NEW_NOTHROW] = "_ZnwmRKSt9nothrow_t",
	[NEW_ARRAY_NOTHROW] = "_ZnamRKSt9nothrow_t",
	[NEW_ALIGNED] = "_ZnwmSt11align_val_t",
	[NEW_ARRAY_ALIGNED] = "_ZnamSt11align_val_t",
	[NEW_ALIGNED_NOTHROW] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
	[NEW_ARRAY_ALIGNED_NOTHROW] = "_ZnamSt11align_val_tRKSt9nothrow_t",
	[DELETE] = "_ZdlPv",
	[DELETE_ARRAY] = "_ZdaPv",
	[DELETE_SIZED] = "_ZdlPvm",
	[DELETE_ARRAY_SIZED] = "_ZdaPvm",
	[DELETE_NOTHROW] = "_ZdlPvRKSt9nothrow_t",
	[DELETE_ARRAY_NOTHROW] = "_ZdaPvRKSt9nothrow_t",
	[DELETE_ALIGNED] = "_ZdlPvSt11align_val_t",
	[DELETE_ARRAY_ALIGNED] = "_ZdaPvSt11align_val_t",
	[DELETE_SIZED_ALIGNED] = "_ZdlPvmSt11align_val_t",
	[DELETE_ARRAY_SIZED_ALIGNED] = "_ZdaPvmSt11align_val_t",
	[DELETE_ALIGNED_NOTHROW] = "_ZdlPvSt11align_val_tRKSt9nothrow_t",
	[DELETE_ARRAY_ALIGNED_NOTHROW] = "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

/* How the arguments after the size (new) or pointer (delete) go on. */
enum shape { PLAIN, NOTHROW, ALIGNED, ALIGNED_NOTHROW, SIZED, SIZED_ALIGNED };

static void *reals[OP_COUNT];
static int absent[OP_COUNT]; /* found nowhere: fallback_new and free */

/* The operators after us in the global scope, looked up once, at start
 * (cxx_init): a failed dlsym replaces the message of the program's last
 * failed call of the loader, and a lookup made on a program's first call
 * of an operator (any time, when the program may be about to read that
 * message with dlerror) must call nothing of the loader's. */
static void *globals[OP_COUNT];
static int globals_done;

/* A failed call of the loader's leaves a message made with the
 * recorder's allocations: freed now (the second dlerror frees what the
 * first gave), not by the program's next call of the loader, which would
 * free a block the program never had. */
static void drop_dlerror(void)
{
	(void)dlerror();
	(void)dlerror();
}

void cxx_init(void)
{
	if (__atomic_load_n(&globals_done, __ATOMIC_ACQUIRE))
		return;
	int missing = 0;
	internal_begin(); /* the loader's messages: our allocations */
	for (int i = 0; i < OP_COUNT; i++) {
		void *f = dlsym(RTLD_NEXT, names[i]);
		__atomic_store_n(&globals[i], f, __ATOMIC_RELAXED);
		missing |= !f;
	}
	if (missing)
		drop_dlerror();
	internal_end();
	elfsym_note_startup();
	__atomic_store_n(&globals_done, 1, __ATOMIC_RELEASE);
}

/* Not found after us in the global scope, the C++ runtime came with a
 * library dlopen'ed RTLD_LOCAL (a Python extension), whose references
 * still bind to us first.  What they would have bound to is in their
 * group: the caller's object, then what it needs, breadth first; failing
 * that, the first loaded object's that has it.  Read from the objects'
 * own symbol tables, not through a dlopen of the caller's: called from a
 * constructor of a group the loader is still setting up (PyTorch's
 * import), that dlopen ran the constructors of the rest of the group
 * there and then. */
static void *find_op(enum op id, const void *caller)
{
	cxx_init(); /* a constructor that ran before ours calls */
	void *f = __atomic_load_n(&globals[id], __ATOMIC_RELAXED);
	return f ? f : elfsym_find(names[id], caller, (const void *)find_op);
}

/* The real operators new that pass through to malloc (libstdc++'s under
 * glibc): their frame on top of a stack is the allocator's, not the
 * program's, and in a C++ program it doubles the leaves of the stack
 * tree (587,000 of `import torch`'s 2.8 M nodes).  cxx_wraps drops it, as
 * the operators the recorder records itself never show it. */
struct cxx_wrappers cxx_wrappers = { UINTPTR_MAX, 0, { { 0, 0 } } };

/* Each operator has its slot, so threads resolving operators at once
 * need no lock (a fork could inherit one held); the same operator noted
 * twice writes the same range. */
_Static_assert(NEW_ARRAY_ALIGNED_NOTHROW + 1 == CXX_WRAPPERS,
	       "a slot for each operator new");

static void note_wrapper(enum op id, const void *f)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (id >= CXX_WRAPPERS ||
	    !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    !sym->st_size)
		return;
	struct cxx_wrappers *w = &cxx_wrappers;
	uintptr_t lo = (uintptr_t)f, hi = lo + sym->st_size;
	__atomic_store_n(&w->range[id].lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&w->range[id].hi, hi, __ATOMIC_RELEASE);
	uintptr_t v = __atomic_load_n(&w->lo, __ATOMIC_RELAXED);
	while (lo < v && !__atomic_compare_exchange_n(&w->lo, &v, lo, 1,
						      __ATOMIC_RELEASE,
						      __ATOMIC_RELAXED))
		;
	v = __atomic_load_n(&w->hi, __ATOMIC_RELAXED);
	while (hi > v && !__atomic_compare_exchange_n(&w->hi, &v, hi, 1,
						      __ATOMIC_RELEASE,
						      __ATOMIC_RELAXED))
		;
}

/* The operator the caller would have called without us, kept for good:
 * its library is pinned, as glibc does for libstdc++ anyway. */
static void *resolve_op(enum op id, const void *caller)
{
	void *f = __atomic_load_n(&reals[id], __ATOMIC_ACQUIRE);
	if (__builtin_expect(f != NULL, 1))
		return f;
	/* found nowhere before: not searched for on every call (the caller's
	 * group was loaded whole before it ran; nothing loaded later is in
	 * it) */
	if (__atomic_load_n(&absent[id], __ATOMIC_RELAXED))
		return NULL;
	/* the loader's lookups set errno: not the program's; what they
	 * allocate is the recorder's, not recorded (the thread busy, the
	 * callers the loader and libc: preload.c's own objects) */
	int e = errno;
	struct tstate *t = &hs_thread;
	busy_enter(t);
	internal_begin();
	f = find_op(id, caller);
	/* its library pinned: one loaded at start-up, or libstdc++ (the
	 * loader pins what binds its unique symbols) is already; another, an
	 * allocator dlopen'ed RTLD_LOCAL, by a dlopen (the one case left
	 * where a dlopen of the recorder's could run constructors early, as
	 * find_op says).  Not pinned, it is not kept: looked up again. */
	int kept = 1;
	Dl_info info;
	if (f && !elfsym_permanent(f) &&
	    (!dladdr(f, &info) || !info.dli_fname || !info.dli_fname[0] ||
	     !dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) {
		kept = 0;
		drop_dlerror();
	}
	if (f && kept && !hs_settings.record_operators)
		note_wrapper(id, f);
	internal_end();
	busy_leave(t);
	if (f && kept)
		__atomic_store_n(&reals[id], f, __ATOMIC_RELEASE);
	if (!f)
		__atomic_store_n(&absent[id], 1, __ATOMIC_RELAXED);
	errno = e;
	return f;
}

/* No operator anywhere to call: unreachable short of a broken program.
 * The same memory as libstdc++'s, without the exception. */
static void *fallback_new(enum shape s, size_t n, size_t al)
{
	if (s == ALIGNED || s == ALIGNED_NOTHROW)
		return aligned_alloc(al, (n + al - 1) & ~(al - 1));
	return malloc(n ? n : 1);
}

INLINE void *call_new(const void *f, enum shape s, size_t n, size_t al,
		      const void *nt)
{
	if (!f)
		return fallback_new(s, n, al);
	switch (s) {
	case NOTHROW:
		return ((void *(*)(size_t, const void *))f)(n, nt);
	case ALIGNED:
		return ((void *(*)(size_t, size_t))f)(n, al);
	case ALIGNED_NOTHROW:
		return ((void *(*)(size_t, size_t, const void *))f)(n, al, nt);
	default:
		return ((void *(*)(size_t))f)(n);
	}
}

/* The one frame an exception from the real operator new of a recorded
 * call leaves through: hs_cxx_personality is its personality routine.
 * Never inlined, never a tail call. */
__attribute__((noinline)) static void *call_new_framed(const void *f,
						       enum shape s, size_t n,
						       size_t al,
						       const void *nt)
{
	__asm__(".cfi_personality 0x1b, hs_cxx_personality");
	void *p = call_new(f, s, n, al, nt);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* Under glibc, libstdc++'s operators call malloc and free, which record
 * the events: the operators only pass through.  Other allocators define
 * their own operators, which never reach malloc: recorded here. */
static inline int cxx_records(void)
{
	return hs_settings.record_operators;
}

/* An event with the stack taken before the call: the realloc entry point
 * records an allocation (old NULL) or a failure (p NULL) with it. */
static void record(unsigned fn, const void *p, size_t size,
		   const struct cxx_flight *fl)
{
	int e = errno;
	rec_lock();
	rec_realloc_end(fn, NULL, p, size, fl->depth, fl->ips, NULL);
	errno = e;
}

/* Called by the unwinder for the frame of call_new_framed, in both
 * phases: an exception is leaving the real operator new, which failed.
 * Inner frames have run their cleanups, still busy, as in a normal call.
 * The exception object, allocated meanwhile, is recorded too, or its free
 * would have no allocation: the noted block that holds it. */
int hs_cxx_personality(int version, int actions, uint64_t cls, const void *ue,
		       void *ctx); /* named by the .cfi_personality above */
__attribute__((visibility("hidden"), used)) int
hs_cxx_personality(int version, int actions, uint64_t cls, const void *ue,
		   void *ctx)
{
	(void)version, (void)cls, (void)ctx;
	struct cxx_flight *fl = cxx_flight;
	if (!fl || !(actions & UA_CLEANUP_PHASE))
		return URC_CONTINUE_UNWIND;
	cxx_flight = NULL;
	internal_end();
	record(fl->fn, NULL, fl->size, fl);
	unsigned n = fl->noted < CXX_NOTED ? fl->noted : CXX_NOTED;
	for (unsigned i = 1; i <= n; i++) {
		const struct cxx_block *b =
			&fl->blocks[(fl->noted - i) % CXX_NOTED];
		if ((uintptr_t)ue - (uintptr_t)b->p < b->size) {
			record(b->fn, b->p, b->size, fl);
			break;
		}
	}
	int e = errno;
	busy_leave(&hs_thread);
	errno = e;
	return URC_CONTINUE_UNWIND;
}

/* Before recording starts an operator new is counted once: by our malloc
 * when it reaches it (libstdc++'s does), else here (a preloaded
 * allocator's own operator does not). */
static void *new_before_start(const void *f, enum shape s, size_t n,
			      size_t al, const void *nt)
{
	unsigned mine = hs_before_mine;
	void *p = call_new(f, s, n, al, nt);
	if (hs_before_mine == mine)
		note_before_start(p, n);
	return p;
}

/* C++17 aligned new is aligned allocation as C11 has it, (alignment,
 * size) -> block or failure, and libstdc++ implements it with
 * aligned_alloc: recorded as aligned_alloc.  One function that every
 * variant jumps to, so that the fast unwinder learns one way through our
 * frames for all of them. */
__attribute__((noinline)) static void *
cxx_new(enum op id, enum shape s, size_t n, size_t al, const void *nt,
	const void *caller)
{
	struct tstate *t = &hs_thread;
	if (!cxx_records() || !recorder_wants(t)) {
		if (before_start())
			return new_before_start(resolve_op(id, caller), s, n,
						al, nt);
		return call_new(resolve_op(id, caller), s, n, al, nt);
	}
	busy_enter(t);
	const void *f = resolve_op(id, caller);
	struct cxx_flight fl; /* blocks[] is written before it is read */
	fl.fn = s == ALIGNED || s == ALIGNED_NOTHROW ? HS_FN_ALIGNED_ALLOC
						     : HS_FN_MALLOC;
	fl.size = n;
	fl.noted = 0;
	fl.ips = t->scratch; /* free: nothing is recorded meanwhile */
	fl.depth = rec_stack(t->scratch);
	cxx_flight = &fl;
	/* what the real operator allocates is its own (noted, not recorded) */
	internal_begin();
	void *p = call_new_framed(f, s, n, al, nt);
	internal_end();
	cxx_flight = NULL;
	record(fl.fn, p, n, &fl);
	int e = errno;
	busy_leave(t);
	errno = e;
	return p;
}

INLINE void call_delete(const void *f, enum shape s, void *p, size_t n,
			size_t al, const void *nt)
{
	if (!f) {
		free(p);
		return;
	}
	switch (s) {
	case NOTHROW:
		((void (*)(void *, const void *))f)(p, nt);
		break;
	case ALIGNED:
		((void (*)(void *, size_t))f)(p, al);
		break;
	case ALIGNED_NOTHROW:
		((void (*)(void *, size_t, const void *))f)(p, al, nt);
		break;
	case SIZED:
		((void (*)(void *, size_t))f)(p, n);
		break;
	case SIZED_ALIGNED:
		((void (*)(void *, size_t, size_t))f)(p, n, al);
		break;
	default:
		((void (*)(void *))f)(p);
	}
}

/* As free: recorded first, so that no other thread's reuse of the
 * address can come before it in the trace. */
INLINE void cxx_delete(enum op id, enum shape s, void *p, size_t n,
		       size_t al, const void *nt, const void *caller)
{
	struct tstate *t = &hs_thread;
	if (!cxx_records() || !recorder_wants(t)) {
		call_delete(resolve_op(id, caller), s, p, n, al, nt);
		return;
	}
	int e = errno;
	busy_enter(t);
	if (p)
		rec_free(HS_FN_FREE, p);
	errno = e;
	internal_begin();
	call_delete(resolve_op(id, caller), s, p, n, al, nt);
	internal_end();
	e = errno;
	busy_leave(t);
	errno = e;
}

/* The operators, by their mangled names: no C header declares them. */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnwmSt11align_val_t(size_t n, size_t al);
void *_ZnamSt11align_val_t(size_t n, size_t al);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t n);
void _ZdaPvm(void *p, size_t n);
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdlPvSt11align_val_t(void *p, size_t al);
void _ZdaPvSt11align_val_t(void *p, size_t al);
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al);
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);

#define CALLER __builtin_return_address(0)

EXPORT void *_Znwm(size_t n)
{
	return cxx_new(NEW, PLAIN, n, 0, NULL, CALLER);
}

EXPORT void *_Znam(size_t n)
{
	return cxx_new(NEW_ARRAY, PLAIN, n, 0, NULL, CALLER);
}

EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	return cxx_new(NEW_NOTHROW, NOTHROW, n, 0, nt, CALLER);
}

EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	return cxx_new(NEW_ARRAY_NOTHROW, NOTHROW, n, 0, nt, CALLER);
}

EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
	return cxx_new(NEW_ALIGNED, ALIGNED, n, al, NULL, CALLER);
}

EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al)
{
	return cxx_new(NEW_ARRAY_ALIGNED, ALIGNED, n, al, NULL, CALLER);
}

EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al,
						 const void *nt)
{
	return cxx_new(NEW_ALIGNED_NOTHROW, ALIGNED_NOTHROW, n, al, nt,
		       CALLER);
}

EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al,
						 const void *nt)
{
	return cxx_new(NEW_ARRAY_ALIGNED_NOTHROW, ALIGNED_NOTHROW, n, al, nt,
		       CALLER);
}

EXPORT void _ZdlPv(void *p)
{
	cxx_delete(DELETE, PLAIN, p, 0, 0, NULL, CALLER);
}

EXPORT void _ZdaPv(void *p)
{
	cxx_delete(DELETE_ARRAY, PLAIN, p, 0, 0, NULL, CALLER);
}

EXPORT void _ZdlPvm(void *p, size_t n)
{
	cxx_delete(DELETE_SIZED, SIZED, p, n, 0, NULL, CALLER);
}

EXPORT void _ZdaPvm(void *p, size_t n)
{
	cxx_delete(DELETE_ARRAY_SIZED, SIZED, p, n, 0, NULL, CALLER);
}

EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	cxx_delete(DELETE_NOTHROW, NOTHROW, p, 0, 0, nt, CALLER);
}

EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	cxx_delete(DELETE_ARRAY_NOTHROW, NOTHROW, p, 0, 0, nt, CALLER);
}

EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al)
{
	cxx_delete(DELETE_ALIGNED, ALIGNED, p, 0, al, NULL, CALLER);
}

EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al)
{
	cxx_delete(DELETE_ARRAY_ALIGNED, ALIGNED, p, 0, al, NULL, CALLER);
}

EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	cxx_delete(DELETE_SIZED_ALIGNED, SIZED_ALIGNED, p, n, al, NULL,
		   CALLER);
}

EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	cxx_delete(DELETE_ARRAY_SIZED_ALIGNED, SIZED_ALIGNED, p, n, al, NULL,
		   CALLER);
}

EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al,
						 const void *nt)
{
	cxx_delete(DELETE_ALIGNED_NOTHROW, ALIGNED_NOTHROW, p, 0, al, nt,
		   CALLER);
}

EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al,
						 const void *nt)
{
	cxx_delete(DELETE_ARRAY_ALIGNED_NOTHROW, ALIGNED_NOTHROW, p, 0, al,
		   nt, CALLER);
}

#else
void cxx_init(void)
{
}
#endif
