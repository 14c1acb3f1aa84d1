/* The interposers: every allocation-API entry point of the program comes
 * here first.  Each one calls the real function, keeps its result and
 * errno exactly, and tells the recorder what happened. */
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
#include <sys/syscall.h>
#include <unistd.h>

#define HEAPSLOPE_RECORDER
#include "../include/heapslope.h"
#include "../format/rmem.h"
#include "cxx.h"
#include "recorder.h"

#define EXPORT __attribute__((visibility("default")))
#define unlikely(x) __builtin_expect(!!(x), 0)

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	void (*_exit)(int) __attribute__((noreturn));
	int (*pthread_setname_np)(pthread_t, const char *);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	int (*pipe2)(int[2], int);
} real;

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

static inline int ready(void)
{
	if (unlikely(!real.free)) {
		if (resolving)
			return 0;
		resolve();
	}
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
	if (mode != HOOK_PASS)
		record_result(mode, HS_FN_MALLOC, p, n, CALLER);
	else
		cxx_note(HS_FN_MALLOC, p, n);
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
		rec_realloc_begin(&depth, ips);
		p = REAL_REALLOC();
		int e = errno;
		rec_realloc_end(fn, old, p, total, depth, ips);
		errno = e;
	} else if (mode == HOOK_NESTED) {
		/* the outer call may be a realloc using scratch */
		uintptr_t ips[HS_DEPTH_MAX];
		int depth = unwind_capture_plain(ips, hs_rec.depth);
		int locked = rec_nested_lock();
		p = REAL_REALLOC();
		int e = errno;
		rec_nested_realloc_end(locked, fn, old, p, total, depth, ips);
		errno = e;
	} else {
		p = REAL_REALLOC();
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
	else if (rc == 0)
		cxx_note(HS_FN_POSIX_MEMALIGN, *out, n);
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
		if (mode != HOOK_PASS)                                       \
			record_result(mode, fn, p, size, CALLER);            \
		else                                                         \
			cxx_note(fn, p, size);                               \
		HOOK_END();                                                  \
		return p;                                                    \
	}

SIMPLE_ALIGNED(aligned_alloc, HS_FN_ALIGNED_ALLOC, (size_t a, size_t n),
	       (a, n), n)
SIMPLE_ALIGNED(memalign, HS_FN_MEMALIGN, (size_t a, size_t n), (a, n), n)
SIMPLE_ALIGNED(valloc, HS_FN_VALLOC, (size_t n), (n), n)
SIMPLE_ALIGNED(pvalloc, HS_FN_PVALLOC, (size_t n), (n), n)

/* ---- anonymous memory maps, recorded with --mmap ---- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	if (unlikely(!ready()))
		return MAP_FAILED;
	/* the allocator's own maps (nested calls) belong to the heap */
	HOOK_BEGIN();
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	if (mode == HOOK_RECORD && hs_rec.record_mmap &&
	    (flags & MAP_ANONYMOUS))
		record_result(mode, HS_FN_MMAP, p == MAP_FAILED ? NULL : p,
			      len, CALLER);
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
	if (mode == HOOK_RECORD && hs_rec.record_mmap) {
		int e = errno;
		rec_munmap(addr, len);
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
	if (mode == HOOK_RECORD && hs_rec.record_mmap) {
		int depth;
		uintptr_t *ips = hs_thread.scratch;
		rec_realloc_begin(&depth, ips);
		p = real.mremap(old, old_len, len, flags, new_addr);
		int e = errno;
		rec_mremap_end(old, old_len, p == MAP_FAILED ? NULL : p,
			       len ? len : 1, depth, ips);
		errno = e;
	} else {
		p = real.mremap(old, old_len, len, flags, new_addr);
	}
	HOOK_END();
	return p;
}

/* ---- process lifetime: exec and _exit end an image without exit() ---- */

/* The environment for the new image: the program's, with
 * HEAPSLOPE_EXECED naming this process (so that the image knows it was
 * exec'd here, and what the image before it left is not taken for that);
 * under --no-follow, without the recorder in LD_PRELOAD.  Made in `room`
 * when it fits (4 KiB of the caller's stack: threads may have small
 * ones), else in memory mapped for it (*map, *map_size; exec replaces
 * it, or the caller unmaps it).  If no room can be had, the program's
 * own environment goes on unchanged. */
static size_t env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

static char *const *exec_env(char *const envp[], char *room, size_t cap,
			     void **map, size_t *map_size)
{
	static const char execed[] = "HEAPSLOPE_EXECED=",
			  preload[] = "LD_PRELOAD=";
	Dl_info self;
	*map = NULL;
	if (!envp)
		return envp;
	const char *lib = !hs_rec.follow && dladdr((void *)recorder_init,
						   &self)
				  ? self.dli_fname
				  : NULL;
	size_t n = env_count(envp), text = 64;
	for (size_t i = 0; lib && i < n; i++)
		if (!strncmp(envp[i], preload, sizeof(preload) - 1))
			text += strlen(envp[i]) + 1;
	size_t need = (n + 2) * sizeof(char *) + text;
	char *buf = room;
	if (need > cap) {
		buf = rmem_map(need);
		if (!buf)
			return envp;
		*map = buf;
		*map_size = need;
	}
	char **out = (char **)buf;
	char *o = buf + (n + 2) * sizeof(char *);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = envp[i];
		if (!strncmp(v, execed, sizeof(execed) - 1))
			continue;
		if (lib && !strncmp(v, preload, sizeof(preload) - 1)) {
			/* the list without our library, as the loader splits
			 * it: on spaces and colons (never longer than it was) */
			size_t l = sizeof(preload) - 1, ll = strlen(lib);
			memcpy(o, preload, l);
			for (const char *s = v + l; *s;) {
				size_t w = strcspn(s, ": ");
				if (w && !(w == ll && !memcmp(s, lib, w))) {
					if (l > sizeof(preload) - 1)
						o[l++] = ' ';
					memcpy(o + l, s, w);
					l += w;
				}
				s += w + (s[w] != 0);
			}
			o[l++] = 0;
			v = o;
			o += l;
		}
		out[k++] = (char *)v;
	}
	snprintf(o, 64, "%s%d", execed, (int)getpid());
	out[k++] = o;
	out[k] = NULL;
	return out;
}

/* Closes the trace as the image ends; if exec fails, recording resumes. */
#define EXEC_HOOK(call, path, envp)                                          \
	if (unlikely(!ready()))                                              \
		return -1;                                                   \
	_Alignas(8) char room_[4096];                                        \
	void *map_;                                                          \
	size_t map_size_ = 0;                                                \
	int e_ = errno;                                                      \
	char *const *use_ = exec_env(envp, room_, sizeof(room_), &map_,      \
				     &map_size_);                            \
	recorder_before_exec(path);                                          \
	errno = e_;                                                          \
	int rc_ = call;                                                      \
	e_ = errno;                                                          \
	rmem_unmap(map_, map_size_);                                         \
	recorder_exec_failed();                                              \
	errno = e_;                                                          \
	return rc_

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_HOOK(real.execve(path, argv, use_), path, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_HOOK(real.execvpe(file, argv, use_), file, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_HOOK(real.fexecve(fd, argv, use_), "(fd)", envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[],
		    char *const envp[], int flags)
{
	EXEC_HOOK(real.execveat(dirfd, path, argv, use_, flags), path, envp);
}

/* execl, execlp, execle: collect the arguments, then as execv*. */
#define COLLECT_ARGS(first, last_named, argv, want_envp, envp_out)           \
	size_t argc_ = 1;                                                    \
	va_list ap_;                                                         \
	va_start(ap_, last_named);                                           \
	while (va_arg(ap_, char *))                                          \
		argc_++;                                                     \
	va_end(ap_);                                                         \
	char **argv = __builtin_alloca((argc_ + 1) * sizeof(char *));        \
	argv[0] = (char *)(first);                                           \
	va_start(ap_, last_named);                                           \
	for (size_t i_ = 1; i_ <= argc_; i_++)                               \
		argv[i_] = va_arg(ap_, char *);                              \
	if (want_envp)                                                       \
		*(char ***)(envp_out) = va_arg(ap_, char **);                \
	va_end(ap_)

EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv, 0, NULL);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv, 0, NULL);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	COLLECT_ARGS(arg, arg, argv, 1, &envp);
	return execve(path, argv, envp);
}

EXPORT void _exit(int status)
{
	if (ready()) {
		recorder_finish(HS_END__EXIT);
		real._exit(status);
	}
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status) __attribute__((alias("_exit")));

EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	if (unlikely(!ready()))
		return ENOSYS;
	int rc = real.pthread_setname_np(th, name);
	struct tstate *t = &hs_thread;
	if (rc == 0 && pthread_equal(th, pthread_self()) &&
	    recorder_wants(t)) {
		busy_enter(t);
		rec_thread_name(name);
		busy_leave(t);
	}
	return rc;
}

/* glibc holds the thread's descriptor lock while this allocates: the
 * unwinder must not call it again underneath (guard.h). */
EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	if (unlikely(!ready()) || !real.pthread_getattr_np)
		return ENOSYS;
	hs_guard.getattr++;
	int rc = real.pthread_getattr_np(th, attr);
	hs_guard.getattr--;
	return rc;
}

/* libunwind keeps a pipe to probe memory with (it writes a byte from the
 * address into it and reads it back), and opens it again whenever a read
 * fails.  On the program's lowest free descriptors it would take the
 * numbers the program is about to open, and after the program closed
 * them and opened files there, write into those.  Pipes the recorder's
 * own code opens go to high descriptors instead, out of the way. */
EXPORT int pipe2(int fds[2], int flags)
{
	if (unlikely(!ready()) || !real.pipe2) {
		errno = ENOSYS;
		return -1;
	}
	int rc = real.pipe2(fds, flags);
	if (rc || !hs_guard.internal)
		return rc;
	for (int i = 0; i < 2; i++)
		fds[i] = fd_high(fds[i], HS_FD_HIGH + 10);
	unwind_note_pipe(fds);
	return 0;
}

/* ---- the marker API (heapslope.h) ---- */

static void mark(unsigned kind, const char *label)
{
	struct tstate *t = &hs_thread;
	if (!recorder_wants(t))
		return;
	int e = errno;
	busy_enter(t);
	rec_mark(kind, label);
	busy_leave(t);
	errno = e;
}

EXPORT void heapslope_mark_batch(void)
{
	mark(HS_MARK_BATCH, NULL);
}

EXPORT void heapslope_mark(const char *label)
{
	mark(HS_MARK_LABEL, label);
}

__attribute__((constructor)) static void preload_init(int argc, char **argv)
{
	resolve();
	note_own_objects();
	recorder_init(argc, argv);
}

__attribute__((destructor)) static void preload_fini(void)
{
	recorder_finish(HS_END_EXIT);
}
