/* heapslope record, from its options to its exit status. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "base/error.h"
#include "libraries.h"
#include "listing.h"
#include "paths.h"
#include "program.h"
#include "traces.h"

/* Where the traces go.  tmpl: the template every process below the first
 * expands (HS_ENV_OUTPUT); root: the first process's trace, created here
 * (*root_fd) with -o FILE, empty with a template, and named by the child
 * by default. */
static int outputs(const struct launch_opts *o, char *tmpl, char *root,
		   int *root_fd)
{
	if (o->output && strchr(o->output, '%')) {
		/* a template: every process, the first included, expands it */
		if (absolute_path(o->output, tmpl, PATH_MAX))
			goto toolong;
		root[0] = 0;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", tmpl);
		if (access(dirname(dir), W_OK | X_OK)) {
			fprintf(stderr, "heapslope record: cannot create traces "
					"in %s: %s\n", dir, strerror(errno));
			return -1;
		}
	} else if (o->output) {
		if (absolute_path(o->output, root, PATH_MAX) ||
		    snprintf(tmpl, PATH_MAX, "%s.%%p", root) >= PATH_MAX)
			goto toolong;
		*root_fd = trace_create(root, PATH_MAX, o->force, 0);
		if (*root_fd == TRACE_NOT_REGULAR) {
			fprintf(stderr, "heapslope record: cannot replace %s: "
					"not a regular file (-f replaces "
					"regular files and symlinks only)\n",
				o->output);
			return -1;
		}
		if (*root_fd < 0) {
			fprintf(stderr, "heapslope record: cannot create %s: "
					"%s%s\n", o->output, strerror(errno),
				errno == EEXIST ? " (use -f to replace it)"
						: "");
			return -1;
		}
	} else {
		if (absolute_path(HS_TRACE_TEMPLATE, tmpl, PATH_MAX))
			goto toolong;
	}
	return 0;
toolong:
	fprintf(stderr, "heapslope record: output path too long\n");
	return -1;
}

static pid_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* Until the child exits: reports as they come, and its exit at once (a
 * pidfd); without pidfds, every 100 ms.  -1 if waitpid fails. */
static int supervise(int rep, struct paths *paths, int *status)
{
	int pidfd = (int)syscall(SYS_pidfd_open, child_pid, 0), rc = 0;
	for (;;) {
		struct pollfd pfd[2] = { { rep, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
		poll(pfd, pidfd >= 0 ? 2 : 1, 100);
		reports_drain(rep, paths);
		pid_t w = waitpid(child_pid, status, WNOHANG);
		if (w == child_pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("heapslope record: waitpid");
			rc = -1;
			break;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return rc;
}

int launch_record(const struct launch_opts *o)
{
	char lib[PATH_MAX], alloc[PATH_MAX], tmpl[PATH_MAX], root[PATH_MAX];
	char exe[PATH_MAX], report[64];
	int root_fd = -1, msgp[2] = { -1, -1 }, rep = -1;
	int rc = 1, status = 0;
	struct paths paths = { 0 };
	struct child_msg msg;
	struct child c = { .opts = o, .recorder = lib, .alloc_lib = alloc,
			   .report = report };

	if (recorder_find(lib, sizeof(lib))) {
		fprintf(stderr, "heapslope record: %s\n", hs_last_error());
		return 1;
	}
	if (allocator_find(o->allocator, lib, alloc, sizeof(alloc),
			   &c.alloc_name))
		return 2;
	const char *prog = strrchr(o->cmd[0], '/');
	prog = prog ? prog + 1 : o->cmd[0];
	const char *why = NULL;
	if (program_find(o->cmd[0], exe, sizeof(exe)) == 0 &&
	    (why = program_unloadable(exe))) {
		c.unloadable = 1;
		fprintf(stderr, "heapslope record: warning: %s; nothing of %s "
				"will be recorded (programs it runs may be)\n",
			why, prog);
	}
	if (outputs(o, tmpl, root, &root_fd))
		return 1;
	setenv(HS_ENV_OUTPUT, tmpl, 1);
	rep = reports_open(report, sizeof(report));
	if (rep < 0) {
		perror("heapslope record: report socket");
		goto out;
	}
	if (pipe2(msgp, O_CLOEXEC)) {
		perror("heapslope record: pipe");
		goto out;
	}

	struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { 0 }, old_int,
			 old_quit;
	fwd.sa_handler = forward;
	fflush(NULL);
	child_pid = fork();
	if (child_pid < 0) {
		perror("heapslope record: fork");
		goto out;
	}
	if (child_pid == 0) {
		close(msgp[0]);
		close(rep);
		if (!o->output) {
			/* the default name carries the child's pid */
			char name[PATH_MAX];
			if (trace_name_expand(HS_TRACE_TEMPLATE, prog, getpid(),
					      name, sizeof(name)) ||
			    absolute_path(name, root, sizeof(root)))
				_exit(127);
			root_fd = -2;
		}
		child_run(&c, root, root_fd, msgp[1]);
	}
	/* like a shell: the terminal's signals go to the child; ours are
	 * passed on */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);
	close(msgp[1]);
	msgp[1] = -1;
	if (root_fd >= 0)
		close(root_fd);
	root_fd = -1;

	int got;
	while ((got = child_read(msgp[0], &msg)) > 0 && msg.stage == STAGE_PATH)
		snprintf(root, sizeof(root), "%s", msg.path);
	if (got > 0) {
		waitpid(child_pid, NULL, 0);
		if (msg.stage == STAGE_EXEC && root[0])
			unlink(root); /* nothing ran: leave no empty trace */
		if (msg.stage == STAGE_EXEC)
			fprintf(stderr, "heapslope record: cannot run %s: %s\n",
				o->cmd[0], strerror(msg.err));
		else
			fprintf(stderr, "heapslope record: cannot create the "
					"trace%s%s: %s\n", msg.path[0] ? " " : "",
				msg.path, strerror(msg.err));
		rc = msg.stage == STAGE_EXEC ? 127 : 1;
		goto out;
	}
	if (supervise(rep, &paths, &status))
		goto out;
	reports_drain(rep, &paths);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (root[0] && trace_check(root, prog, why != NULL) == 0) {
		paths_add(&paths, root, strlen(root));
	} else if (root[0]) {
		paths_remove(&paths, root); /* reported, then removed */
		root[0] = 0;
	}
	/* the others' processes may still run (or start writing): theirs
	 * are never checked, let alone removed */
	struct listing_opts lo = { .quiet = o->quiet, .max = o->list_max };
	listing_finish(&paths, (long)child_pid, root, status, &lo);
	rc = WIFEXITED(status) ? WEXITSTATUS(status)
	     : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
out:
	for (int i = 0; i < 2; i++)
		if (msgp[i] >= 0)
			close(msgp[i]);
	if (rep >= 0)
		close(rep);
	if (root_fd >= 0)
		close(root_fd);
	paths_finish(&paths);
	return rc;
}
