/* The fast unwinder knows the initial thread's stack without reading
 * /proc/self/maps after the recorder's start: a program may forbid
 * opening files (a seccomp filter, here one that fails open and openat)
 * or run where there is no /proc.  Without the bounds every capture
 * would fall back to libunwind, many times slower.  Each case runs in a
 * child of its own, whose initial thread has captured nothing yet:
 *   after   the unwinder starts, then the program forbids opening;
 *   before  the program forbids opening before the unwinder starts (the
 *           bounds come from the stack's end at entry);
 *   thread  as before, in a thread the program made (glibc knows its
 *           stack without /proc).
 * In each, a capture 300 frames deep takes the fast path and returns
 * what libunwind returns. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/unwind.h"
#include "record/unwind_fast.h"

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
/* unoptimized: its loop stays one call site */
#ifdef __clang__
#define O0 __attribute__((noinline, optnone))
#else
#define O0 __attribute__((noinline, optimize("O0")))
#endif

static void forbid_opening(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
		perror("seccomp");
		exit(2);
	}
	/* the filter holds: the maps cannot be read */
	FILE *f = fopen("/proc/self/maps", "r");
	if (f || errno != EPERM) {
		fprintf(stderr, "opening the maps was not refused\n");
		exit(2);
	}
}

static void start(const char *method)
{
	if (unwind_init(method)) {
		fprintf(stderr, "unwind_init(%s) failed\n", method);
		exit(1);
	}
}

static NOINLINE int grab(uintptr_t *ips)
{
	uint64_t key;
	int n = unwind_capture(ips, HS_DEPTH_MAX, &key);
	BARRIER();
	return n;
}

/* Captures fast, then libunwind, from one call site; 0 when both agree
 * and the fast one did not fall back. */
static O0 int compare(void)
{
	static const char *const order[2] = { "fast", "libunwind" };
	uintptr_t ips[2][HS_DEPTH_MAX];
	int n[2];
	struct unwind_fast_stats before, after[2];
	unwind_fast_stats(&before);
	for (int i = 0; i < 2; i++) {
		start(order[i]);
		n[i] = grab(ips[i]);
		unwind_fast_stats(&after[i]);
	}
	uint64_t fb = after[0].fallbacks - before.fallbacks;
	uint64_t taken = after[0].captures - before.captures;
	if (taken != 1 || fb != 0) {
		fprintf(stderr, "fast: %llu captures, %llu fell back\n",
			(unsigned long long)taken, (unsigned long long)fb);
		return 1;
	}
	if (n[0] != n[1] || n[0] < 100 ||
	    memcmp(ips[0], ips[1], (size_t)n[0] * sizeof(uintptr_t))) {
		fprintf(stderr, "fast %d frames, libunwind %d: differ\n", n[0],
			n[1]);
		return 1;
	}
	return 0;
}

/* depth frames down, then compare */
static NOINLINE int deep(int depth)
{
	volatile char room[64];
	room[0] = (char)depth;
	int rc = depth > 0 ? deep(depth - 1) : compare();
	BARRIER();
	return rc + room[0] - (char)depth;
}

static void *thread_case(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)deep(300);
}

static int run_case(const char *name)
{
	if (strcmp(name, "after") == 0) {
		start("fast");
		forbid_opening();
		return deep(300);
	}
	forbid_opening();
	start("fast");
	if (strcmp(name, "before") == 0)
		return deep(300);
	pthread_t th;
	void *rc;
	if (pthread_create(&th, NULL, thread_case, NULL) ||
	    pthread_join(th, &rc))
		return 1;
	return (int)(intptr_t)rc;
}

int main(void)
{
	static const char *const names[] = { "after", "before", "thread" };
	int failures = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(run_case(names[i]));
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			printf("not ok %zu - %s\n", i + 1, names[i]);
			failures++;
		} else {
			printf("ok %zu - %s\n", i + 1, names[i]);
		}
	}
	return failures ? 1 : 0;
}
