/* The interposers of the process's life: exec and _exit end an image
 * without exit(), thread names, namespace changes the recorder's thread
 * would make the kernel refuse, the marker API (heapslope.h), and two
 * calls the recorder's own code makes (pthread_getattr_np, pipe2). */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HEAPSLOPE_RECORDER
#include "../include/heapslope.h"
#include "../base/rmem.h"
#include "interpose.h"
#include "recorder.h"
#include "unwind.h"

/* Closes the trace as the image ends; if exec fails, recording resumes. */
#define EXEC_HOOK(call, path, envp)                                          \
	if (unlikely(!ready()))                                              \
		return -1;                                                   \
	_Alignas(8) char room_[4096];                                        \
	void *map_;                                                          \
	size_t map_size_ = 0;                                                \
	int e_ = errno;                                                      \
	char *const *use_ = recorder_exec_env(envp, room_, sizeof(room_),   \
					     &map_, &map_size_);             \
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
		recorder_end(HS_END__EXIT);
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

/* The kernel refuses these to a process of more than one thread: the
 * recorder's writer is stopped around them (recorder_writer_pause), so
 * that a program with one thread of its own gets what it gets natively
 * (`unshare --user`, sandboxes, container tools). */
#define SOLO_UNSHARE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
#define SOLO_SETNS (CLONE_NEWUSER | CLONE_NEWNS)

/* The system call nr (glibc's unshare and setns are no more), with the
 * writer paused: EINVAL, which may mean the writer's exit is not yet
 * complete in the kernel (one that had just started when paused), is
 * tried again for up to 20 ms; a program of several threads gets it then,
 * as natively. */
static int solo(int paused, long nr, int a, int b)
{
	int rc = (int)syscall(nr, a, b);
	for (int i = 0; paused && rc < 0 && errno == EINVAL && i < 20; i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		rc = (int)syscall(nr, a, b);
	}
	int e = errno;
	recorder_writer_resume(paused);
	errno = e;
	return rc;
}

EXPORT int unshare(int flags)
{
	int paused = flags & SOLO_UNSHARE ? recorder_writer_pause() : 0;
	return solo(paused, SYS_unshare, flags, 0);
}

/* nstype 0: whatever namespace fd is, maybe one of those */
EXPORT int setns(int fd, int nstype)
{
	int paused = !nstype || nstype & SOLO_SETNS ? recorder_writer_pause()
						    : 0;
	return solo(paused, SYS_setns, fd, nstype);
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

/* ---- regions (heapslope.h) ---- */

static void region(const char *name)
{
	struct tstate *t = &hs_thread;
	if (!recorder_wants(t))
		return;
	int e = errno;
	busy_enter(t);
	rec_region(name);
	busy_leave(t);
	errno = e;
}

EXPORT void heapslope_region_begin(const char *name)
{
	region(name ? name : "(unnamed)");
}

EXPORT void heapslope_region_end(void)
{
	region(NULL);
}
