/* The process's last thread leaves as a thread, not by exit():
 *   lastthread pexit    main calls pthread_exit while two threads still
 *                       allocate; the last to return ends the process
 *                       (glibc's exit(0): exit handlers run, stdout
 *                       flushed, status 0)
 *   lastthread rawexit  main, alone, leaves by the exit system call with
 *                       status 3 (no exit handlers, as strict-mode
 *                       seccomp programs must)
 * Natively the process then ends; the recorder's writer thread must not
 * keep it alive. */
#define VICTIM_THREADS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sink.h"

static int done;

static void *work(void *arg)
{
	long id = (long)arg;
	for (int round = 0; round < 2000; round++) {
		void *v[16];
		for (int i = 0; i < 16; i++)
			sink(v[i] = malloc(100 + (size_t)i * 8));
		for (int i = 0; i < 16; i++)
			free(v[i]);
	}
	sink(malloc(5555)); /* kept: live at the end */
	(void)id;
	__atomic_fetch_add(&done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* run by the exit(0) glibc calls in the last thread to return; the
 * output is buffered: that exit flushes it */
static void report(void)
{
	printf("threads done %d\n", __atomic_load_n(&done, __ATOMIC_SEQ_CST));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pexit";
	sink(malloc(4444));
	if (!strcmp(mode, "rawexit")) {
		static const char bye[] = "main leaves\n";
		(void)!write(1, bye, sizeof(bye) - 1);
		syscall(SYS_exit, 3);
	}
	atexit(report);
	for (long i = 0; i < 2; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, work, (void *)i))
			return 2;
		pthread_detach(t);
	}
	printf("main leaves\n");
	pthread_exit(NULL);
}
