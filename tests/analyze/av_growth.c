/* Growth shapes for the verdict, with batch marks.
 *   av_growth retention N   each batch keeps one 64 KiB block (touched) in
 *                           a history freed before exit: +65,536 B live
 *                           per batch, nothing leaked -> retention
 *   av_growth leak N        the same blocks, never freed -> leak
 *   av_growth steady N      each batch allocates and frees the same
 *                           working set; 8 blocks kept from the start
 *                           -> stable
 *   av_growth timed MS      no marks at all: churn for MS milliseconds of
 *                           wall time, keeping one 4 KiB block every
 *                           10 ms (freed at exit)
 * Every batch also churns 300 small blocks, allocated and freed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapslope.h"

#define NOINLINE __attribute__((noinline))
#define HISTORY_BLOCK (64 * 1024)

struct entry {
	struct entry *next;
};

static struct entry *history;

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static NOINLINE void die(const char *what)
{
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	_exit(3);
}

static NOINLINE void churn(unsigned batch)
{
	void *v[300];
	for (unsigned i = 0; i < 300; i++) {
		v[i] = malloc(16 + (i * 37 + batch) % 2000);
		if (!v[i])
			die("out of memory");
		sink(v[i]);
	}
	for (unsigned i = 0; i < 300; i++)
		free(v[(i * 7) % 300]);
}

static NOINLINE void remember_batch(size_t size)
{
	struct entry *e = malloc(size);
	if (!e)
		die("out of memory");
	memset(e, 0x5a, size);
	e->next = history;
	history = e;
}

static NOINLINE void forget_history(void)
{
	while (history) {
		struct entry *next = history->next;
		free(history);
		history = next;
	}
}

static NOINLINE void working_set(unsigned batch)
{
	void *v[16];
	for (unsigned i = 0; i < 16; i++) {
		v[i] = malloc(4096);
		if (!v[i])
			die("out of memory");
		memset(v[i], (int)(batch + i), 4096);
	}
	for (unsigned i = 0; i < 16; i++)
		free(v[i]);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		die("usage: av_growth retention|leak|steady|timed N");
	const char *mode = argv[1];
	unsigned long n = strtoul(argv[2], NULL, 10);
	if (!strcmp(mode, "timed")) {
		uint64_t start = now_ms(), last = start;
		unsigned i = 0;
		while (now_ms() - start < n) {
			churn(i++);
			if (now_ms() - last >= 10) {
				remember_batch(4096);
				last += 10;
			}
			struct timespec d = { 0, 1000000 };
			nanosleep(&d, NULL);
		}
		forget_history();
		return 0;
	}
	int retention = !strcmp(mode, "retention");
	int leak = !strcmp(mode, "leak");
	if (!retention && !leak && strcmp(mode, "steady") != 0)
		die("usage: av_growth retention|leak|steady|timed N");
	void *fixed[8];
	for (int i = 0; i < 8; i++) {
		fixed[i] = malloc(1000);
		if (!fixed[i])
			die("out of memory");
	}
	for (unsigned b = 0; b < n; b++) {
		churn(b);
		working_set(b);
		if (retention || leak)
			remember_batch(HISTORY_BLOCK);
		HEAPSLOPE_MARK_BATCH();
	}
	if (retention)
		forget_history();
	else
		sink(history);
	for (int i = 0; i < 8; i++)
		free(fixed[i]);
	return 0;
}
