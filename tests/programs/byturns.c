/* Threads that allocate by turns: the turn passes every 200 us and every
 * thread spins while it waits, so with more threads than CPUs a thread is
 * now and then preempted anywhere in the recorder's take of its lock,
 * while another makes the 128 events in a row that give it the lock.
 *   byturns SECONDS THREADS
 * Prints the malloc+free pairs the threads made. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink.h"

#define MAXT 8
static volatile int turn, stop;
static uint64_t made[MAXT];

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	while (!stop) {
		while (turn != me && !stop)
			;
		while (turn == me && !stop) {
			void *p = malloc(16 + (size_t)me * 16);
			sink(p);
			free(p);
			made[me]++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 2;
	int n = argc > 2 ? atoi(argv[2]) : 4;
	if (n < 1 || n > MAXT)
		return 2;
	pthread_t t[MAXT];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
			return 2;
	struct timespec d = { 0, 200000 }, now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs;
	for (unsigned k = 0;; k++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		turn = (int)(k % (unsigned)n);
		nanosleep(&d, NULL);
	}
	stop = 1;
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		total += made[i];
	}
	printf("pairs=%llu\n", (unsigned long long)total);
	return 0;
}
