/* Every kind of mapping the recorder writes, each from a function of its
 * own (the test checks the stacks name them), then given back; prints one
 * line per mapping: "NAME ADDR LEN", for the test to match.
 *   mapkinds DIR       (DIR: where the file to map is made)
 *   mapkinds exit      (calls exit(3) after a few allocations)
 *   mapkinds bigmalloc (malloc's own mmapped blocks only) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "sink.h"

#define PAGE 4096

static void show(const char *name, void *p, size_t len)
{
	if (p == MAP_FAILED || p == (void *)-1) {
		fprintf(stderr, "mapkinds: %s failed\n", name);
		exit(1);
	}
	printf("%s %p %zu\n", name, p, len);
	if (strcmp(name, "reserve") != 0)
		memset(p, 1, 1);
}

__attribute__((noinline)) static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("anon", p, len);
	return p;
}

__attribute__((noinline)) static void *map_file(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/mapped.bin", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 3 * PAGE))
		exit(1);
	void *p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	show("file", p, 3 * PAGE);
	return p;
}

__attribute__((noinline)) static void *map_memfd(void)
{
	int fd = memfd_create("hs-batch", 0);
	if (fd < 0 || ftruncate(fd, 5 * PAGE))
		exit(1);
	void *p = mmap(NULL, 5 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	show("memfd", p, 5 * PAGE);
	return p;
}

__attribute__((noinline)) static void *map_shm(void)
{
	char name[64];
	snprintf(name, sizeof(name), "/hs-mapkinds-%d", (int)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, 6 * PAGE))
		exit(1);
	shm_unlink(name);
	void *p = mmap(NULL, 6 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	show("shm", p, 6 * PAGE);
	return p;
}

__attribute__((noinline)) static void *map_sysv(void)
{
	int id = shmget(IPC_PRIVATE, 7 * PAGE, IPC_CREAT | 0600);
	if (id < 0)
		exit(1);
	void *p = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	show("sysv", p, 7 * PAGE);
	return p;
}

__attribute__((noinline)) static void *grow(void *p, size_t len, size_t to)
{
	void *q = mremap(p, len, to, MREMAP_MAYMOVE);
	show("remap", q, to);
	return q;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (!strcmp(argv[1], "exit")) {
		for (int i = 0; i < 10; i++)
			sink(malloc(100));
		exit(3);
	}
	if (!strcmp(argv[1], "bigmalloc")) {
		for (int i = 0; i < 20; i++) {
			void *p = malloc((size_t)(1 + i) << 20);
			sink(p);
			free(p);
		}
		return 0;
	}
	char *a = map_anon(8 * PAGE);
	/* a hole in the middle, then the rest */
	munmap(a + 2 * PAGE, 2 * PAGE);
	munmap(a, 2 * PAGE);
	munmap(a + 4 * PAGE, 4 * PAGE);
	char *f = map_file(argv[1]);
	char *m = map_memfd();
	char *s = map_shm();
	char *v = map_sysv();
	char *g = grow(map_anon(2 * PAGE), 2 * PAGE, 16 * PAGE);
	/* a reservation, never memory until it is made accessible */
	void *r = mmap(NULL, 64 * PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	show("reserve", r, 64 * PAGE);
	/* part of it committed, as a runtime's heap grows */
	if (mprotect((char *)r + 8 * PAGE, 16 * PAGE, PROT_READ | PROT_WRITE))
		exit(1);
	memset((char *)r + 8 * PAGE, 1, 16 * PAGE);
	/* and of memory the program did not map: not recorded */
	static char page[2 * PAGE] __attribute__((aligned(PAGE)));
	mprotect(page, PAGE, PROT_READ);
	mprotect(page, PAGE, PROT_READ | PROT_WRITE);
	munmap(f, 3 * PAGE);
	munmap(m, 5 * PAGE);
	munmap(s, 6 * PAGE);
	shmdt(v);
	munmap(g, 16 * PAGE);
	munmap(r, 64 * PAGE);
	fflush(stdout);
	return 0;
}
