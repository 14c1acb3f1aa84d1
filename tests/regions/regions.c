/* Regions on two threads with exactly known growth (tests/regions).
 * Each batch, both threads open their regions, wait for each other (so
 * that regions are open on both at once), allocate, and close them:
 *   main:   step > leaky   2 KiB kept for good      (a leak)
 *           step > cache   1 KiB kept in a cache freed before exit
 *           step           256 B malloc'd and freed
 *   worker: worker > leaky 2 KiB kept for good      (a leak)
 *           worker > stable 3 blocks of 1000 B made, the last batch's
 *                           freed: live stays 3000 B
 *   outside any region: 512 B kept for good (main, after its regions)
 * The region name "leaky" grows 4 KiB a batch, "cache" 1 KiB, "stable"
 * nothing.  One region end with none open, at the start.
 *
 *   regions [BATCHES] [--no-regions] [--names N]
 * --no-regions makes the same allocations without calling the region
 * API: the trace must count the same events.  --names N first opens and
 * closes N regions of distinct names, n0, n1, ... */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapslope.h"
#include "../programs/sink.h"

#define LEAK 2048
#define CACHE 1024
#define OUTSIDE 512
#define STABLE 1000
#define STABLE_BLOCKS 3

static int batches = 20, regions = 1;
static pthread_barrier_t start, opened, done;

static void begin(const char *name)
{
	if (regions)
		HEAPSLOPE_REGION_BEGIN(name);
}

static void end(void)
{
	if (regions)
		HEAPSLOPE_REGION_END();
}

static void *worker(void *arg)
{
	void *stable[STABLE_BLOCKS] = { 0 };
	(void)arg;
	for (int b = 0; b < batches; b++) {
		pthread_barrier_wait(&start);
		begin("worker");
		pthread_barrier_wait(&opened);
		begin("leaky");
		sink(malloc(LEAK));
		end();
		begin("stable");
		for (int i = 0; i < STABLE_BLOCKS; i++) {
			free(stable[i]);
			stable[i] = malloc(STABLE);
			sink(stable[i]);
		}
		end();
		end();
		pthread_barrier_wait(&done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	int names = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-regions"))
			regions = 0;
		else if (!strcmp(argv[i], "--names") && i + 1 < argc)
			names = atoi(argv[++i]);
		else
			batches = atoi(argv[i]);
	}
	for (int i = 0; i < names; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%d", i);
		begin(name);
		end();
	}
	void **cache = calloc((size_t)batches, sizeof(*cache));
	end(); /* none open: ignored */
	pthread_barrier_init(&start, NULL, 2);
	pthread_barrier_init(&opened, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	if (!cache || pthread_create(&th, NULL, worker, NULL))
		return 1;
	for (int b = 0; b < batches; b++) {
		pthread_barrier_wait(&start);
		begin("step");
		pthread_barrier_wait(&opened);
		begin("leaky");
		sink(malloc(LEAK));
		end();
		begin("cache");
		cache[b] = malloc(CACHE);
		sink(cache[b]);
		end();
		void *scratch = malloc(256);
		sink(scratch);
		free(scratch);
		end();
		sink(malloc(OUTSIDE));
		pthread_barrier_wait(&done);
		HEAPSLOPE_MARK_BATCH();
	}
	pthread_join(th, NULL);
	for (int b = 0; b < batches; b++)
		free(cache[b]);
	free(cache);
	return 0;
}
