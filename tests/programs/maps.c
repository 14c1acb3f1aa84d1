/* Anonymous memory maps: N mmap + munmap pairs, M mremap growths, and
 * one file mapping (never recorded).  Also N malloc/free pairs.
 *   maps N M */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sink.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[1]), m = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		void *p = mmap(NULL, 8192 + 4096 * (size_t)(i % 4),
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		if (munmap(p, 8192 + 4096 * (size_t)(i % 4)))
			return 1;
		sink(p = malloc(24));
		free(p);
	}
	size_t len = 4096;
	char *q = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return 1;
	for (int i = 0; i < m; i++) {
		char *r = mremap(q, len, len * 2, MREMAP_MAYMOVE);
		if (r == MAP_FAILED)
			return 1;
		q = r;
		len *= 2;
	}
	if (munmap(q, len))
		return 1;
	int fd = open("/proc/self/exe", O_RDONLY);
	if (fd >= 0) {
		void *f = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (f != MAP_FAILED)
			munmap(f, 4096);
		close(fd);
	}
	return 0;
}
