/* Helpers of the victims.  sink: keeps the compiler from removing an
 * allocation whose result is unused:
 * victims must make exactly the calls they are written to make. */
#ifndef VICTIM_SINK_H
#define VICTIM_SINK_H

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* A value the compiler cannot see through: realloc(NULL, n) must stay a
 * realloc, not be folded into malloc(n). */
static inline void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

#ifdef VICTIM_THREADS
#include <pthread.h>
#include <time.h>

/* Starts t threads running fn(i * 1000), then sleeps
 * ms milliseconds while they run: 0, or 1 if a thread could not start. */
static inline int run_threads_for(void *(*fn)(void *), int t, long ms)
{
	for (int i = 0; i < t; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, fn, (void *)(size_t)(i * 1000)))
			return 1;
	}
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	return 0;
}
#endif

#endif
