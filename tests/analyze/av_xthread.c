/* Cross-thread frees: 2 producers malloc N blocks in all and hand them
 * through a small queue to 2 consumers, which free them (every 4th after a
 * realloc to 300 B).  Nothing the program allocates is left at exit; with
 * N = 0 the same four threads run and allocate nothing: the baseline of
 * libc's own per-thread blocks.
 *   av_xthread N */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QSIZE 64
#define PRODUCERS 2
#define CONSUMERS 2

static void *queue[QSIZE];
static size_t head, tail, count;
static size_t total, consumed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void *producer(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	for (size_t i = 0; i < n; i++) {
		char *p = malloc(16 + (i * 7) % 240);
		if (!p)
			abort();
		p[0] = (char)i;
		pthread_mutex_lock(&lock);
		while (count == QSIZE)
			pthread_cond_wait(&not_full, &lock);
		queue[tail] = p;
		tail = (tail + 1) % QSIZE;
		count++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (count == 0 && consumed < total)
			pthread_cond_wait(&not_empty, &lock);
		if (count == 0) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		void *p = queue[head];
		head = (head + 1) % QSIZE;
		count--;
		int grow = consumed % 4 == 3;
		if (++consumed == total)
			pthread_cond_broadcast(&not_empty);
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		if (grow) {
			p = realloc(p, 300);
			if (!p)
				abort();
		}
		sink(p);
		free(p);
	}
}

int main(int argc, char **argv)
{
	pthread_t th[PRODUCERS + CONSUMERS];
	total = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	total -= total % PRODUCERS;
	for (int i = 0; i < CONSUMERS; i++)
		if (pthread_create(&th[i], NULL, consumer, NULL))
			abort();
	for (int i = 0; i < PRODUCERS; i++)
		if (pthread_create(&th[CONSUMERS + i], NULL, producer,
				   (void *)(uintptr_t)(total / PRODUCERS)))
			abort();
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
