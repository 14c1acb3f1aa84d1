/* posix_spawn (a vfork-like clone in glibc) of PROGRAM ARGS, then wait.
 *   spawner PROGRAM ARGS... */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "sink.h"

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *p = malloc(4242);
	sink(p);
	pid_t pid;
	if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ))
		return 1;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	free(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
