/* Memory outside malloc, with batch marks (test_mappings.py).
 *   av_maps kinds N DIR   each batch maps and keeps, each from a function
 *                         of its own: 64 KiB anonymous, 32 KiB of a file
 *                         in DIR, 16 KiB of a memfd, 8 KiB of a
 *                         shm_open object -> mapped, by kind exactly
 *   av_maps churn N       each batch maps 16 pages and unmaps 4 of them
 *                         (a hole in the middle), and grows a buffer by
 *                         mremap by 8 pages (moving it) -> 20 pages a
 *                         batch, anonymous
 *   av_maps touch N       mallocs 96 MiB once, then each batch writes
 *                         4 MiB more of it -> RSS rises into a flat live
 *                         heap: touching
 * Every batch also churns 200 small heap blocks, allocated and freed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapslope.h"

#define NOINLINE __attribute__((noinline))
#define KiB 1024
#define PAGE 4096

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

static void churn_heap(void)
{
	void *v[200];
	for (int i = 0; i < 200; i++)
		v[i] = malloc(32 + i);
	for (int i = 0; i < 200; i++)
		free(v[i]);
}

static void *touched(void *p, size_t len)
{
	must(p != MAP_FAILED, "mmap");
	memset(p, 1, len);
	return p;
}

NOINLINE static void map_anon_batch(void)
{
	touched(mmap(NULL, 64 * KiB, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), 64 * KiB);
}

NOINLINE static void map_file_batch(int fd, off_t off)
{
	touched(mmap(NULL, 32 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     off), 32 * KiB);
}

NOINLINE static void map_memfd_batch(int fd, off_t off)
{
	touched(mmap(NULL, 16 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     off), 16 * KiB);
}

NOINLINE static void map_shm_batch(int fd, off_t off)
{
	touched(mmap(NULL, 8 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     off), 8 * KiB);
}

static void kinds(int n, const char *dir)
{
	char path[4096], shm[64];
	snprintf(path, sizeof(path), "%s/av_maps.bin", dir);
	snprintf(shm, sizeof(shm), "/av_maps.%d", (int)getpid());
	int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int mfd = memfd_create("av_maps", 0);
	int sfd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
	must(file >= 0 && mfd >= 0 && sfd >= 0, "open");
	must(!ftruncate(file, (off_t)n * 32 * KiB) &&
	     !ftruncate(mfd, (off_t)n * 16 * KiB) &&
	     !ftruncate(sfd, (off_t)n * 8 * KiB), "ftruncate");
	shm_unlink(shm);
	for (int i = 0; i < n; i++) {
		churn_heap();
		map_anon_batch();
		map_file_batch(file, (off_t)i * 32 * KiB);
		map_memfd_batch(mfd, (off_t)i * 16 * KiB);
		map_shm_batch(sfd, (off_t)i * 8 * KiB);
		heapslope_mark_batch();
	}
}

NOINLINE static void map_and_cut(void)
{
	char *p = touched(mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
			  16 * PAGE);
	must(munmap(p + 6 * PAGE, 4 * PAGE) == 0, "munmap");
}

NOINLINE static char *grow_buffer(char *buf, size_t old, size_t len)
{
	char *p = mremap(buf, old, len, MREMAP_MAYMOVE);
	must(p != MAP_FAILED, "mremap");
	memset(p + old, 1, len - old);
	return p;
}

static void churn(int n)
{
	size_t len = PAGE;
	char *buf = touched(mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), len);
	/* a neighbour, so that growing the buffer moves it now and then */
	for (int i = 0; i < n; i++) {
		churn_heap();
		map_and_cut();
		buf = grow_buffer(buf, len, len + 8 * PAGE);
		len += 8 * PAGE;
		heapslope_mark_batch();
	}
}

/* A runtime's heap, as V8 grows its own: one PROT_NONE reservation,
 * committed 64 KiB a batch by mprotect. */
NOINLINE static char *reserve_heap(size_t len)
{
	char *p = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	must(p != MAP_FAILED, "mmap PROT_NONE");
	return p;
}

static void commit(int n)
{
	const size_t step = 16 * PAGE;
	char *heap = reserve_heap((size_t)(n + 1) * step);
	for (int i = 0; i < n; i++) {
		churn_heap();
		must(mprotect(heap + (size_t)i * step, step,
			      PROT_READ | PROT_WRITE) == 0, "mprotect");
		memset(heap + (size_t)i * step, 1, step);
		heapslope_mark_batch();
	}
}

static void touch(int n)
{
	const size_t step = 4u << 20;
	char *big = malloc(96u << 20);
	must(big != NULL, "malloc");
	for (int i = 0; i < n && (size_t)(i + 1) * step <= (96u << 20); i++) {
		churn_heap();
		memset(big + (size_t)i * step, 1, step);
		heapslope_mark_batch();
	}
	free(big);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
			"usage: av_maps kinds|churn|touch|commit N [DIR]\n");
		return 2;
	}
	int n = atoi(argv[2]);
	if (!strcmp(argv[1], "kinds") && argc == 4)
		kinds(n, argv[3]);
	else if (!strcmp(argv[1], "churn"))
		churn(n);
	else if (!strcmp(argv[1], "touch"))
		touch(n);
	else if (!strcmp(argv[1], "commit"))
		commit(n);
	else
		return 2;
	return 0;
}
