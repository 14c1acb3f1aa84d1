/* A fragmentation victim for glibc malloc: RSS grows every batch many
 * times faster than the live heap.
 *
 *   fragment [--batches N] [--steady] [--stats FILE]
 *
 * Each batch takes a scratch buffer as large as its input, fills it, keeps
 * a small summary of it (PIN_BYTES, from pin_small_block) and frees the
 * scratch.  The input grows slowly, so each scratch buffer is a little
 * larger than any hole the earlier ones left, and is cut from the top of
 * the heap; the summary kept above it pins the hole, so glibc can neither
 * reuse it nor trim it.  Live heap: +PIN_BYTES per batch.  RSS: + one
 * scratch buffer (64-120 KiB) per batch.
 *
 * Why the summary is cut from a worst-case buffer then trimmed by realloc:
 * glibc serves a small request from the best-fitting free chunk, so a
 * plain malloc(PIN_BYTES) lands in an old hole, the new scratch buffer
 * goes back into the top chunk when freed and RSS stays flat.  A request
 * as large as the input fits no hole and is cut from the top, right above
 * the scratch; realloc shrinks it in place and returns the tail to the top.
 *
 * Scratch buffers stay below 120 KiB: under the mmap threshold (128 KiB),
 * so they live in the brk heap.  No chunk is ever mmapped, so glibc's
 * dynamic threshold (raised when an mmapped chunk is freed) never moves.
 *
 * --steady: the same work with a constant input size, and only the latest
 * summary kept (the previous one is freed first): RSS and live heap flat.
 *
 * --stats FILE: JSON {"batches", "mode", "series": [{"batch", "in_use",
 * "free", "arena", "keepcost", "rss", "live"}]}, mallinfo2 and RSS
 * (/proc/self/statm) read right after each batch mark, "live" the bytes
 * the program holds then.  Nothing is printed and nothing else allocates
 * during the batches: stdio would put its buffers into the holes. */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapslope.h"

#define NOINLINE __attribute__((noinline))

#define MAX_BATCHES 2000
#define DEFAULT_BATCHES 40
/* Above tcache's largest size (1032 B): a freed summary coalesces at once
 * with its free neighbours, which keeps --steady exactly periodic. */
#define PIN_BYTES 1536
#define SCRATCH_BASE (64 * 1024)
#define SCRATCH_ROOM (56 * 1024) /* the largest stays at 120 KiB */
#define SCRATCH_STEP 256

struct sample {
	size_t in_use, free, arena, keepcost, rss, live;
};

static struct sample series[MAX_BATCHES];
static char *pins[MAX_BATCHES];

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static NOINLINE void die(const char *what)
{
	(void)!write(2, "fragment: ", 10);
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	_exit(2);
}

/* A temporary buffer of the batch's input size, every page touched. */
static NOINLINE char *scratch_buffer(size_t size, unsigned batch)
{
	char *p = malloc(size);
	if (!p)
		die("out of memory");
	memset(p, (int)(batch & 0xff) | 1, size);
	sink(p);
	return p;
}

/* The batch's long-lived summary: written into a buffer sized for the
 * worst case (the whole input), then trimmed to its length. */
static NOINLINE char *pin_small_block(const char *scratch, size_t input)
{
	char *p = malloc(input);
	if (!p)
		die("out of memory");
	for (size_t i = 0; i < PIN_BYTES; i++)
		p[i] = scratch[i * (input / PIN_BYTES)];
	char *q = realloc(p, PIN_BYTES);
	if (!q)
		die("out of memory");
	sink(q);
	return q;
}

/* Resident bytes from /proc/self/statm, read without stdio. */
static size_t rss_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open /proc/self/statm");
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die("cannot read /proc/self/statm");
	buf[n] = 0;
	char *s = strchr(buf, ' ');
	if (!s)
		die("unexpected /proc/self/statm");
	return strtoull(s + 1, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

static void take_sample(struct sample *s, size_t live)
{
	struct mallinfo2 mi = mallinfo2();
	s->in_use = mi.uordblks;
	s->free = mi.fordblks;
	s->arena = mi.arena;
	s->keepcost = mi.keepcost;
	s->rss = rss_bytes();
	s->live = live;
}

static int write_stats(const char *path, unsigned batches, int steady)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f)
		return -1;
	fprintf(f, "{\"batches\": %u, \"mode\": \"%s\", \"series\": [",
		batches, steady ? "steady" : "fragment");
	for (unsigned b = 0; b < batches; b++) {
		const struct sample *s = &series[b];
		fprintf(f, "%s\n {\"batch\": %u, \"in_use\": %zu, "
			   "\"free\": %zu, \"arena\": %zu, \"keepcost\": %zu, "
			   "\"rss\": %zu, \"live\": %zu}",
			b ? "," : "", b, s->in_use, s->free, s->arena,
			s->keepcost, s->rss, s->live);
	}
	fprintf(f, "\n]}\n");
	int bad = ferror(f);
	if (f == stdout)
		return fflush(f) || bad ? -1 : 0;
	return fclose(f) || bad ? -1 : 0;
}

static NOINLINE void usage(void)
{
	die("usage: fragment [--batches N] [--steady] [--stats FILE]");
}

int main(int argc, char **argv)
{
	unsigned batches = DEFAULT_BATCHES;
	int steady = 0;
	const char *stats = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--batches") && i + 1 < argc) {
			char *end;
			unsigned long n = strtoul(argv[++i], &end, 10);
			if (*end || n < 1 || n > MAX_BATCHES)
				die("--batches: a number from 1 to 2000");
			batches = (unsigned)n;
		} else if (!strcmp(argv[i], "--steady")) {
			steady = 1;
		} else if (!strcmp(argv[i], "--stats") && i + 1 < argc) {
			stats = argv[++i];
		} else {
			usage();
		}
	}
	/* Each scratch buffer at least 16 bytes (one chunk size step) larger
	 * than the one before, the last within SCRATCH_ROOM. */
	size_t step = SCRATCH_ROOM / batches & ~(size_t)15;
	if (step > SCRATCH_STEP)
		step = SCRATCH_STEP;
	if (steady)
		step = 0;

	size_t live = 0;
	unsigned kept = 0;
	for (unsigned b = 0; b < batches; b++) {
		size_t input = SCRATCH_BASE + b * step;
		if (steady && kept) {
			free(pins[--kept]);
			live -= PIN_BYTES;
		}
		char *scratch = scratch_buffer(input, b);
		pins[kept++] = pin_small_block(scratch, input);
		live += PIN_BYTES;
		free(scratch);
		HEAPSLOPE_MARK_BATCH();
		take_sample(&series[b], live);
	}
	while (kept)
		free(pins[--kept]);
	if (stats && write_stats(stats, batches, steady))
		die("cannot write the --stats file");
	return 0;
}
