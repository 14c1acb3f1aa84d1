/* Lists the descriptors it holds at start (from /proc/self/fd: number,
 * what it is, close-on-exec or not), then does each ACTION in turn:
 * exec runs this program again with the remaining actions, fork lists
 * again in a child.  The list must be the one it gets natively.
 *   lsfds [exec|fork]... */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void list(const char *who)
{
	int fds[1024], n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		exit(1);
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			fds[n++] = atoi(e->d_name);
	closedir(d);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (fds[j] < fds[i]) {
				int t = fds[i];
				fds[i] = fds[j];
				fds[j] = t;
			}
	for (int i = 0; i < n; i++) {
		char link[64], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue; /* closed meanwhile */
		target[len] = 0;
		char *inode = strstr(target, ":[");
		if (inode) /* pipe:[1234]: the number differs run to run */
			*inode = 0;
		int flags = fcntl(fds[i], F_GETFD);
		printf("%s: fd %d %s%s\n", who, fds[i], target,
		       flags >= 0 && (flags & FD_CLOEXEC) ? " cloexec" : "");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char who[64];
	snprintf(who, sizeof(who), "%s", getenv("LSFDS_WHO") ? getenv("LSFDS_WHO")
							     : "first");
	list(who);
	if (argc < 2)
		return 0;
	if (!strcmp(argv[1], "exec")) {
		char next[80];
		snprintf(next, sizeof(next), "%s, exec'd", who);
		setenv("LSFDS_WHO", next, 1);
		execv("/proc/self/exe", argv + 1);
		return 126;
	}
	if (!strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			char next[80];
			snprintf(next, sizeof(next), "%s, forked", who);
			list(next);
			_exit(0);
		}
		int st;
		return pid > 0 && waitpid(pid, &st, 0) == pid && st == 0 ? 0 : 1;
	}
	return 2;
}
