#include "child.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract.h"
#include "traces.h"

static void tell(int fd, int stage, int err, const char *path)
{
	struct child_msg m = { .stage = stage, .err = err };
	snprintf(m.path, sizeof(m.path), "%s", path ? path : "");
	(void)!write(fd, &m, sizeof(m));
}

/* The environment the recorder reads (contract.h); -1 when out of
 * memory. */
static int set_environment(const struct child *c)
{
	const struct launch_opts *o = c->opts;
	char num[32];
	const char *pre = getenv("LD_PRELOAD"), *al = c->alloc_lib;
	if (!pre)
		pre = "";
	size_t cap = strlen(c->recorder) + strlen(al) + strlen(pre) + 3;
	char *preload = malloc(cap);
	if (!preload)
		return -1;
	/* the recorder first, so that the program's calls reach it and its
	 * dlsym(RTLD_NEXT) finds the allocator's; the user's own after */
	snprintf(preload, cap, "%s%s%s%s%s", c->recorder, *al ? " " : "", al,
		 *pre ? " " : "", pre);
	setenv("LD_PRELOAD", preload, 1);
	setenv(HS_ENV_ALLOCATOR, c->alloc_name, 1);
	unsetenv(HS_ENV_PYMALLOC);
	if (!o->keep_pymalloc && !getenv("PYTHONMALLOC")) {
		setenv("PYTHONMALLOC", "malloc", 1);
		setenv(HS_ENV_PYMALLOC, "1", 1);
	}
	snprintf(num, sizeof(num), "%ld", o->interval_ms);
	setenv(HS_ENV_INTERVAL, num, 1);
	snprintf(num, sizeof(num), "%ld", o->depth);
	setenv(HS_ENV_DEPTH, num, 1);
	setenv(HS_ENV_FOLLOW, o->no_follow ? "0" : "1", 1);
	setenv(HS_ENV_MMAP, o->mmap ? "1" : "0", 1);
	setenv(HS_ENV_PYTHON, o->python ? "1" : "0", 1);
	snprintf(num, sizeof(num), "%ld", o->mallinfo);
	setenv(HS_ENV_MALLINFO, num, 1);
	if (o->unwind)
		setenv(HS_ENV_UNWIND, o->unwind, 1);
	setenv(HS_ENV_REPORT, c->report, 1);
	/* the recorders below tell the first image by this pid */
	snprintf(num, sizeof(num), "%d", (int)getpid());
	setenv(HS_ENV_ROOT, num, 1);
	unsetenv(HS_ENV_EXECED);
	return 0;
}

void child_run(const struct child *c, char *root_path, int root_fd,
	       int msg_fd)
{
	char token[160];
	if (set_environment(c)) {
		tell(msg_fd, STAGE_CREATE, ENOMEM, NULL);
		_exit(127);
	}
	if (root_fd == -2) {
		root_fd = trace_create(root_path, PATH_MAX, 0, 1);
		if (root_fd < 0) {
			tell(msg_fd, STAGE_CREATE, errno, root_path);
			_exit(127);
		}
	}
	unsetenv(HS_ENV_FD);
	if (root_fd >= 0 && c->unloadable) {
		/* nothing will adopt it: not the program's to inherit */
		close(root_fd);
		root_fd = -1;
		tell(msg_fd, STAGE_PATH, 0, root_path);
	}
	if (root_fd >= 0) {
		struct stat st;
		if (fstat(root_fd, &st)) {
			tell(msg_fd, STAGE_CREATE, errno, root_path);
			_exit(127);
		}
		/* the token proves itself: this process, this very file */
		snprintf(token, sizeof(token), "%d:%d:%llu:%llu", root_fd,
			 (int)getpid(), (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		setenv(HS_ENV_FD, token, 1);
		setenv(HS_ENV_FD_PATH, root_path, 1);
		tell(msg_fd, STAGE_PATH, 0, root_path);
	}
	execvp(c->opts->cmd[0], c->opts->cmd);
	tell(msg_fd, STAGE_EXEC, errno, NULL);
	_exit(127);
}

int child_read(int fd, struct child_msg *m)
{
	size_t got = 0;
	while (got < sizeof(*m)) {
		ssize_t n = read(fd, (char *)m + got, sizeof(*m) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got ? -1 : 0;
		got += (size_t)n;
	}
	return 1;
}
