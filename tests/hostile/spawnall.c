/* Starts PROGRAM ARGS three ways, one after the other: vfork + exec,
 * posix_spawn, system() (through /bin/sh); waits for each and prints its
 * status.
 *   spawnall PROGRAM ARGS... */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int st;
	fflush(stdout);
	pid_t pid = vfork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	printf("vfork: wait status 0x%x\n", st);
	fflush(stdout);
	if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) ||
	    waitpid(pid, &st, 0) != pid)
		return 1;
	printf("posix_spawn: wait status 0x%x\n", st);
	fflush(stdout);
	char cmd[4096] = "";
	for (int i = 1; i < argc; i++) {
		if (strlen(cmd) + strlen(argv[i]) + 2 >= sizeof(cmd))
			return 2;
		strcat(cmd, argv[i]);
		strcat(cmd, " ");
	}
	printf("system: status 0x%x\n", system(cmd));
	return 0;
}
