/* fork: the child fills 64 MiB and holds it for 400 ms (several samples at
 * the default 100 ms interval) while the parent, small, waits for it.
 * Each one's samples must show its own RSS. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		size_t n = 64u << 20;
		char *p = malloc(n);
		if (!p)
			_exit(1);
		memset(p, 1, n);
		struct timespec ts = { 0, 400 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		free(p);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
