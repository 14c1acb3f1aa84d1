/* What the interposer files share (preload.c, process.c): the functions
 * they stand in front of, as found behind the recorder, resolved once by
 * preload.c, before anything else runs. */
#ifndef HS_INTERPOSE_H
#define HS_INTERPOSE_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))
#define unlikely(x) __builtin_expect(!!(x), 0)

struct real_fns {
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
	int (*mprotect)(void *, size_t, int);
	void *(*shmat)(int, const void *, int);
	int (*shmdt)(const void *);
	void (*exit)(int) __attribute__((noreturn));
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	void (*_exit)(int) __attribute__((noreturn));
	int (*pthread_setname_np)(pthread_t, const char *);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	int (*pipe2)(int[2], int);
};
extern struct real_fns real;

/* Resolves them, unless that is under way (dlsym allocates: those calls
 * are served from a static arena); whether they are known now. */
int interpose_resolve(void);

static inline int ready(void)
{
	if (unlikely(!real.free))
		return interpose_resolve();
	return 1;
}

#endif
