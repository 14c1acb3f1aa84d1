/* Namespace calls the kernel allows a process of one thread only: unshare
 * of a user namespace (in a child), then setns into that namespace from
 * the parent, while both allocate.  Prints what each call returned (0, or
 * the error's name): the same under the recorder, whose writer thread
 * would make both fail with EINVAL. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pairs.h"

static const char *result(int rc)
{
	return rc == 0 ? "0" : strerrorname_np(errno);
}

int main(void)
{
	int up[2], down[2];
	if (pipe(up) || pipe(down))
		return 2;
	pairs(1000, 64);
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		const char *r = result(unshare(CLONE_NEWUSER));
		pairs(1000, 64);
		(void)!write(up[1], r, strlen(r) + 1);
		char go;
		(void)!read(down[0], &go, 1); /* until the parent joined */
		exit(0);
	}
	char child[64] = "";
	(void)!read(up[0], child, sizeof(child) - 1);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *joined = fd < 0 ? "no fd" : result(setns(fd, CLONE_NEWUSER));
	pairs(1000, 64);
	(void)!write(down[1], "x", 1);
	waitpid(pid, NULL, 0);
	printf("unshare(CLONE_NEWUSER) in the child: %s; setns into it: %s\n",
	       child, joined);
	return 0;
}
