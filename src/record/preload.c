/* The interposers of the allocation API: every allocation, free and
 * anonymous map of the program comes here first.  Each one calls the
 * real function, keeps its result and errno exactly, and tells the
 * recorder what happened.  Those of the process's life (exec, _exit, the
 * marker API) are in process.c. */
/* mmap and mmap64 are both defined here, under their own names */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "cxx.h"
#include "interpose.h"
#include "recorder.h"
#include "unwind.h"

struct real_fns real;

/* dlsym may allocate before the real allocator is known: serve those few
 * requests from a static arena whose blocks are never freed. */
static _Alignas(64) uint8_t boot_arena[65536];
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
	size_t need = (n + 16 + 15) & ~(size_t)15;
	if (boot_used + need > sizeof(boot_arena))
		return NULL;
	uint8_t *p = boot_arena + boot_used;
	boot_used += need;
	*(size_t *)p = n;
	return p + 16;
}

static int is_boot(const void *p)
{
	return (const uint8_t *)p >= boot_arena &&
	       (const uint8_t *)p < boot_arena + sizeof(boot_arena);
}

#define RESOLVE(name) *(void **)&real.name = dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	RESOLVE(malloc);
	RESOLVE(free);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(mmap);
	RESOLVE(munmap);
	RESOLVE(mremap);
	RESOLVE(mprotect);
	RESOLVE(shmat);
	RESOLVE(shmdt);
	RESOLVE(exit);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(execveat);
	RESOLVE(_exit);
	RESOLVE(pthread_setname_np);
	RESOLVE(pthread_getattr_np);
	RESOLVE(pipe2);
	resolving = 0;
}

/* The objects whose calls of the API, made while recorder code or the
 * real allocator runs, are their own (never recorded): where the real
 * allocation functions are (the allocator, and libc for what it lacks),
 * ours (a real function that tail-calls another of the API, as glibc's
 * reallocarray jumps to realloc, leaves our call's return address as the
 * caller), and the libraries the recorder's own code calls into (libc,
 * the loader, libunwind, zstd, the C++ runtime, for the operators).  A
 * call from anywhere else is a signal handler's that could not wait. */
#define OWN_OBJECTS 12
static struct {
	uintptr_t lo, hi;
} own_obj[OWN_OBJECTS];
static int n_own_obj;

static void add_own(const struct dl_phdr_info *info)
{
	uintptr_t lo, hi;
	unwind_module_range(info, &lo, &hi);
	for (int i = 0; i < n_own_obj; i++)
		if (own_obj[i].lo == lo)
			return;
	if (n_own_obj < OWN_OBJECTS)
		own_obj[n_own_obj++] = (typeof(own_obj[0])){ lo, hi };
}

/* data: an address; adds the object that holds it */
static int own_holding(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t a = (uintptr_t)data, lo, hi;
	(void)size;
	unwind_module_range(info, &lo, &hi);
	if (a < lo || a >= hi)
		return 0;
	add_own(info);
	return 1;
}

static int own_library(struct dl_phdr_info *info, size_t size, void *data)
{
	static const char *const names[] = { "libc.so", "ld-linux",
					     "libunwind", "libzstd",
					     "libgcc_s", "libstdc++" };
	(void)size, (void)data;
	const char *base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			add_own(info);
	return 0;
}

static void note_own_objects(void)
{
	void *fns[] = { (void *)note_own_objects, real.malloc, real.free,
			real.calloc, real.realloc, real.reallocarray,
			real.posix_memalign, real.aligned_alloc,
			real.memalign };
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (fns[i])
			dl_iterate_phdr(own_holding, fns[i]);
	dl_iterate_phdr(own_library, NULL);
}

static int own_caller(const void *ra)
{
	for (int i = 0; i < n_own_obj; i++)
		if ((uintptr_t)ra - own_obj[i].lo <
		    own_obj[i].hi - own_obj[i].lo)
			return 1;
	return 0;
}

int interpose_resolve(void)
{
	if (resolving)
		return 0;
	resolve();
	return real.free != NULL;
}

/* The interposer's caller (realloc_common is told it). */
#define CALLER __builtin_return_address(0)

/* Runs the real call with the thread marked busy, then records (or, for
 * a nested call, hands it to rec_nested). */
#define HOOK_BEGIN()                                                         \
	struct tstate *t = &hs_thread;                                       \
	enum hook_mode mode = hook_mode(t);                                  \
	if (unlikely(mode == HOOK_INNER))                                    \
		mode = own_caller(CALLER) ? HOOK_PASS : HOOK_NESTED;         \
	if (mode != HOOK_PASS)                                               \
	busy_enter(t)
#define HOOK_END()                                                           \
	do {                                                                 \
		if (mode != HOOK_PASS) {                                     \
			int e_ = errno;                                      \
			busy_leave(t);                                       \
			errno = e_;                                          \
		}                                                            \
	} while (0)
/* The real function.  What it calls of the API itself (glibc's
 * reallocarray calls realloc) is its own business, never recorded; a
 * call made meanwhile from elsewhere is a signal handler's that could
 * not wait (hook_mode's HOOK_INNER, settled in HOOK_BEGIN by the
 * caller's address, as for the recorder's own calls). */
#define REAL(call) (hs_guard.real++, real_ = (call), hs_guard.real--, real_)

static inline __attribute__((always_inline)) void
record_result(enum hook_mode mode, unsigned fn, const void *p,
			  size_t size, const void *caller)
{
	int e = errno;
	unsigned kind = p ? HS_REC_ALLOC : HS_REC_FAIL;
	if (mode == HOOK_NESTED)
		rec_nested(kind, fn, NULL, p, size, caller);
	else if (p)
		rec_alloc(fn, p, size);
	else
		rec_fail(fn, size);
	errno = e;
}

EXPORT void *malloc(size_t n)
{
	if (unlikely(!ready()))
		return boot_alloc(n);
	HOOK_BEGIN();
	void *real_, *p = REAL(real.malloc(n));
	if (mode != HOOK_PASS) {
		record_result(mode, HS_FN_MALLOC, p, n, CALLER);
	} else {
		cxx_note(HS_FN_MALLOC, p, n);
		note_before_start(p, n);
	}
	HOOK_END();
	return p;
}

EXPORT void free(void *p)
{
	if (!p || unlikely(is_boot(p)))
		return;
	if (unlikely(!ready()))
		return;
	HOOK_BEGIN();
	if (mode != HOOK_PASS) {
		int e = errno;
		if (mode == HOOK_NESTED)
			rec_nested(HS_REC_FREE, HS_FN_FREE, NULL, p, 0, NULL);
		else
			rec_free(HS_FN_FREE, p);
		errno = e;
	}
	hs_guard.real++;
	real.free(p);
	hs_guard.real--;
	HOOK_END();
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (unlikely(!ready())) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total))
			return NULL;
		return boot_alloc(total); /* static memory is zeroed */
	}
	HOOK_BEGIN();
	void *real_, *p = REAL(real.calloc(n, size));
	if (mode != HOOK_PASS) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total))
			total = SIZE_MAX;
		record_result(mode, HS_FN_CALLOC, p, total, CALLER);
	} else {
		note_before_start(p, n * size);
	}
	HOOK_END();
	return p;
}

#define REAL_REALLOC()                                                       \
	REAL(fn == HS_FN_REALLOC ? real.realloc(old, size)                   \
				 : real.reallocarray(old, n, size))

#undef CALLER
#define CALLER caller
static void *realloc_common(unsigned fn, void *old, size_t n, size_t size,
			    int overflow, const void *caller)
{
	HOOK_BEGIN();
	void *p, *real_;
	size_t total = overflow ? SIZE_MAX : fn == HS_FN_REALLOC ? size
								 : n * size;
	if (mode == HOOK_RECORD) {
		int depth;
		uintptr_t *ips = hs_thread.scratch;
		struct unwind_walk w;
		rec_realloc_begin(&depth, ips, &w);
		p = REAL_REALLOC();
		int e = errno;
		rec_realloc_end(fn, old, p, total, depth, ips, &w);
		errno = e;
	} else if (mode == HOOK_NESTED) {
		/* the outer call may be a realloc using scratch */
		uintptr_t ips[HS_DEPTH_MAX];
		int depth;
		int locked = rec_nested_realloc_begin(&depth, ips);
		p = REAL_REALLOC();
		int e = errno;
		rec_nested_realloc_end(locked, fn, old, p, total, depth, ips);
		errno = e;
	} else {
		p = REAL_REALLOC();
		if (!old)
			note_before_start(p, total);
	}
	HOOK_END();
	return p;
}
#undef CALLER
#define CALLER __builtin_return_address(0)

static void *boot_realloc(void *old, size_t size)
{
	void *p = malloc(size);
	if (p) {
		size_t was = *(size_t *)((uint8_t *)old - 16);
		memcpy(p, old, was < size ? was : size);
	}
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	if (unlikely(!ready()))
		return old ? NULL : boot_alloc(size);
	if (unlikely(old && is_boot(old)))
		return boot_realloc(old, size);
	return realloc_common(HS_FN_REALLOC, old, 1, size, 0,
			      __builtin_return_address(0));
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	int overflow = __builtin_mul_overflow(n, size, &total);
	if (unlikely(!ready()))
		return old || overflow ? NULL : boot_alloc(total);
	if (unlikely(old && is_boot(old)))
		return overflow ? NULL : boot_realloc(old, total);
	return realloc_common(HS_FN_REALLOCARRAY, old, n, size, overflow,
			      __builtin_return_address(0));
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (unlikely(!ready()))
		return ENOMEM;
	HOOK_BEGIN();
	int real_, rc = REAL(real.posix_memalign(out, align, n));
	if (mode != HOOK_PASS)
		record_result(mode, HS_FN_POSIX_MEMALIGN, rc == 0 ? *out : NULL,
			      n, CALLER);
	else if (rc == 0) {
		cxx_note(HS_FN_POSIX_MEMALIGN, *out, n);
		note_before_start(*out, n);
	}
	HOOK_END();
	return rc;
}

#define SIMPLE_ALIGNED(name, fn, params, args, size)                        \
	EXPORT void *name params                                             \
	{                                                                    \
		if (unlikely(!ready()))                                      \
			return NULL;                                         \
		HOOK_BEGIN();                                                \
		void *real_, *p = REAL(real.name args);                      \
		if (mode != HOOK_PASS) {                                     \
			record_result(mode, fn, p, size, CALLER);            \
		} else {                                                     \
			cxx_note(fn, p, size);                               \
			note_before_start(p, size);                          \
		}                                                            \
		HOOK_END();                                                  \
		return p;                                                    \
	}

SIMPLE_ALIGNED(aligned_alloc, HS_FN_ALIGNED_ALLOC, (size_t a, size_t n),
	       (a, n), n)
SIMPLE_ALIGNED(memalign, HS_FN_MEMALIGN, (size_t a, size_t n), (a, n), n)
SIMPLE_ALIGNED(valloc, HS_FN_VALLOC, (size_t n), (n), n)
SIMPLE_ALIGNED(pvalloc, HS_FN_PVALLOC, (size_t n), (n), n)

/* ---- the program's own mappings ---- */

/* A mapping call the program made: recorded unless --no-mmap.  Those the
 * allocator makes (inside its calls, or from its own object: jemalloc's
 * background thread) belong to its heap; those made while the thread runs
 * recorder code are a handler's that could not wait: counted, since the
 * stack and the lock they need are in use. */
static inline int map_recorded(enum hook_mode mode, const void *caller)
{
	if (!hs_settings.record_mmap)
		return 0;
	if (mode == HOOK_NESTED) {
		rec_unrecorded();
		return 0;
	}
	return mode == HOOK_RECORD && !own_caller(caller);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	if (unlikely(!ready()))
		return MAP_FAILED;
	HOOK_BEGIN();
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && map_recorded(mode, CALLER)) {
		int e = errno;
		struct map_call m = { (uintptr_t)p, len, (uint64_t)prot,
				      (uint64_t)flags, (uint64_t)off, fd, -1 };
		rec_map(&m);
		errno = e;
	}
	HOOK_END();
	return p;
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off) __attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	if (unlikely(!ready()))
		return -1;
	HOOK_BEGIN();
	/* before the call: once it returns, another thread may map there */
	if (map_recorded(mode, CALLER)) {
		int e = errno;
		rec_unmap(addr, len);
		errno = e;
	}
	int rc = real.munmap(addr, len);
	HOOK_END();
	return rc;
}

EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
	void *new_addr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (unlikely(!ready()))
		return MAP_FAILED;
	HOOK_BEGIN();
	void *p;
	if (map_recorded(mode, CALLER)) {
		int depth;
		uintptr_t *ips = hs_thread.scratch;
		/* the lock is held across the call: no other thread maps at
		 * the old place before the record says it is free */
		struct unwind_walk w;
		rec_realloc_begin(&depth, ips, &w);
		p = real.mremap(old, old_len, len, flags, new_addr);
		int e = errno;
		rec_mremap_end(old, old_len, p == MAP_FAILED ? NULL : p, len,
			       flags, depth, ips, &w);
		errno = e;
	} else {
		p = real.mremap(old, old_len, len, flags, new_addr);
	}
	HOOK_END();
	return p;
}

EXPORT void *shmat(int shmid, const void *addr, int shmflg)
{
	if (unlikely(!ready()))
		return (void *)-1;
	HOOK_BEGIN();
	void *p = real.shmat(shmid, addr, shmflg);
	if (p != (void *)-1 && map_recorded(mode, CALLER)) {
		int e = errno;
		struct shmid_ds ds;
		if (shmctl(shmid, IPC_STAT, &ds) == 0) {
			int prot = shmflg & SHM_RDONLY
					   ? PROT_READ
					   : PROT_READ | PROT_WRITE;
			struct map_call m = { (uintptr_t)p, ds.shm_segsz,
					      (uint64_t)prot, (uint64_t)shmflg,
					      (uint64_t)shmid, -1, shmid };
			rec_map(&m);
		} else {
			rec_unrecorded();
		}
		errno = e;
	}
	HOOK_END();
	return p;
}

EXPORT int shmdt(const void *addr)
{
	if (unlikely(!ready()))
		return -1;
	HOOK_BEGIN();
	if (map_recorded(mode, CALLER)) {
		int e = errno;
		rec_shmdt(addr);
		errno = e;
	}
	int rc = real.shmdt(addr);
	HOOK_END();
	return rc;
}

/* A reservation committed (V8's heap), or given up: after the call, since
 * it changes no address's owner. */
EXPORT int mprotect(void *addr, size_t len, int prot)
{
	if (unlikely(!ready()))
		return -1;
	HOOK_BEGIN();
	int rc = real.mprotect(addr, len, prot);
	if (rc == 0 && map_recorded(mode, CALLER)) {
		int e = errno;
		rec_protect(addr, len, prot);
		errno = e;
	}
	HOOK_END();
	return rc;
}

/* ---- the start of exit ---- */

EXPORT void exit(int status)
{
	if (ready()) {
		struct tstate *t = &hs_thread;
		if (hook_mode(t) == HOOK_RECORD) {
			busy_enter(t);
			rec_exiting();
			busy_leave(t);
		}
	}
	if (real.exit)
		real.exit(status);
	_exit(status);
}

__attribute__((constructor)) static void preload_init(int argc, char **argv)
{
	/* the loader's messages of failed lookups are the recorder's own
	 * allocations, not the program's before its start */
	internal_begin();
	resolve();
	note_own_objects();
	cxx_init();
	internal_end();
	recorder_init(argc, argv);
}

__attribute__((destructor)) static void preload_fini(void)
{
	recorder_end(HS_END_EXIT);
}
