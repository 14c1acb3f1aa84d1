/* Puts its own pipe on descriptors 5 (read end), 6 and 7 (write ends),
 * forks, and the child execs this program again, which writes one line
 * into 6 and one into 7.  The parent prints exactly what came out of 5:
 * nothing but those two lines may arrive there.
 *   pipefds
 *   pipefds --child            (what the child execs) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pairs.h"

static int put(int fd, const char *s)
{
	pairs(1, 777);
	return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return put(6, "line into descriptor 6\n") |
		       put(7, "line into descriptor 7\n");
	int p[2];
	if (pipe(p) || dup2(p[0], 5) < 0 || dup2(p[1], 6) < 0 ||
	    dup2(p[1], 7) < 0)
		return 1;
	if (p[0] != 5 && p[0] != 6 && p[0] != 7)
		close(p[0]);
	if (p[1] != 5 && p[1] != 6 && p[1] != 7)
		close(p[1]);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(5);
		execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
		_exit(126);
	}
	close(6);
	close(7);
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) &&
	       (n = read(5, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	printf("read %zu bytes from descriptor 5:\n", len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n' || (c >= 32 && c < 127))
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("child: wait status 0x%x\n", st);
	return 0;
}
