/* Closes every descriptor above 2, as daemons and spawners do, then opens
 * FILE (it gets the lowest free descriptor), writes to it slowly, closes
 * it; optionally forks first and does it in the child.
 *   closefds FILE [fork] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sink.h"

static int work(const char *path)
{
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	for (int i = 0; i < 8; i++) {
		char line[64];
		void *p = malloc(100 + (size_t)i);
		sink(p);
		free(p);
		int n = snprintf(line, sizeof(line), "line %d of the victim\n", i);
		if (write(fd, line, (size_t)n) != n)
			return 1;
		struct timespec ts = { 0, 150 * 1000000L }; /* > 1 s in all */
		nanosleep(&ts, NULL);
	}
	printf("wrote %s on descriptor %d\n", path, fd);
	return close(fd) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			exit(work(argv[1]));
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return work(argv[1]);
}
