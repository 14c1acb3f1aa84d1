/* fork: the parent allocates P blocks and keeps them until the child is
 * done; the child allocates C blocks, frees them and exits.
 *   forker P C [_exit] */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sink.h"

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int np = atoi(argv[1]), nc = atoi(argv[2]);
	int use_exit = argc > 3 && !strcmp(argv[3], "_exit");
	static void *blocks[100000];
	if (np > 100000 || nc > 100000)
		return 2;
	for (int i = 0; i < np; i++)
		sink(blocks[i] = malloc(100 + (size_t)i));
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		static void *mine[100000];
		for (int i = 0; i < nc; i++)
			sink(mine[i] = malloc(200 + (size_t)i));
		for (int i = 0; i < nc; i++)
			free(mine[i]);
		if (use_exit)
			_exit(0);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return 1;
	for (int i = 0; i < np; i++)
		free(blocks[i]);
	return 0;
}
