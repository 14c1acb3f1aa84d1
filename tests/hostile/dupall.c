/* Opens a file of its own and puts it on every descriptor from 3 to the
 * limit (dup2 over every descriptor, the recorder's and libunwind's probe
 * pipe's included), then allocates N blocks of 777 bytes from stacks of
 * many depths and reports what the file holds and where its offset is:
 * nothing may have read from it or written into it.
 *   dupall N FILE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pairs.h"

static const char content[] = "0123456789abcdefghijklmnopqrstuvwxyz\n";

/* recursion, so that stacks differ and the unwinder steps many frames */
static void __attribute__((noinline)) deep(long n, int depth)
{
	if (depth > 0) {
		deep(n, depth - 1);
		__asm__ volatile("" ::: "memory");
		return;
	}
	pairs(n, 777);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[1]);
	int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, content, sizeof(content) - 1) !=
			      (ssize_t)sizeof(content) - 1 ||
	    lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	struct rlimit rl;
	int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096
			  ? (int)rl.rlim_cur
			  : 4096;
	for (int i = 3; i < top; i++)
		if (i != fd)
			dup2(fd, i);
	for (int d = 0; d < 40; d++)
		deep(n / 40, d);
	char buf[128] = { 0 };
	off_t off = lseek(fd, 0, SEEK_CUR);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	printf("dupall: %ld blocks of 777 bytes; descriptors 3..%d hold the "
	       "file; its offset %ld, %zd bytes: %s", n / 40 * 40, top - 1,
	       (long)off, got, buf);
	return got == (ssize_t)sizeof(content) - 1 && off == 0 &&
			       !memcmp(buf, content, sizeof(content) - 1)
		       ? 0
		       : 3;
}
