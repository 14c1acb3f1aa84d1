/* Limits the size of the files it writes (RLIMIT_FSIZE, as a sandbox or
 * `ulimit -f` may) to fewer bytes than a trace's header, then forks: the
 * child's trace cannot take even its header, the parent's no further
 * chunk.  Each allocates on; the parent exits with the child's status
 * (128 + the signal that ended it, if one did).
 * usage: fsizefork LIMIT_BYTES */
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void churn(int n)
{
	for (int i = 0; i < n; i++)
		free(malloc(16 + (size_t)(i % 500)));
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	rlim_t limit = (rlim_t)atol(argv[1]);
	churn(1000);
	struct rlimit r = { limit, limit };
	if (setrlimit(RLIMIT_FSIZE, &r))
		return 3;
	pid_t p = fork();
	if (p < 0)
		return 4;
	if (p == 0) {
		churn(100000);
		return 0;
	}
	churn(100000);
	int st;
	if (waitpid(p, &st, 0) != p)
		return 5;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}
