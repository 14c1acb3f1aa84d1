/* heapslope record: run a command with the recorder preloaded. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "format/append.h"
#include "format/error.h"

#ifndef HS_LIBDIR
#define HS_LIBDIR "/usr/local/lib/heapslope"
#endif

struct record_opts {
	const char *output;
	long interval_ms;
	long depth;
	int no_follow;
	int mmap;
	int keep_pymalloc;
	int force;
	const char *unwind;
	char **cmd;
};

enum { OPT_INTERVAL = 1000, OPT_DEPTH, OPT_NO_FOLLOW, OPT_MMAP, OPT_KEEP_PY,
       OPT_UNWIND };

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0,
	  "Write the trace to FILE (default heapslope.PROGRAM.PID.hst); "
	  "%p and %e in FILE expand to the pid and program name", 0 },
	{ "force", 'f', NULL, 0, "Replace FILE if it exists", 0 },
	{ "interval", OPT_INTERVAL, "MS", 0,
	  "Sample RSS every MS milliseconds (default 100, 0: only at marks; "
	  "marks also sample the allocator's state)", 0 },
	{ "depth", OPT_DEPTH, "N", 0,
	  "Record at most N frames per call stack (default 64, at most 256)",
	  0 },
	{ "no-follow", OPT_NO_FOLLOW, NULL, 0,
	  "Do not record forked or exec'd child processes", 0 },
	{ "mmap", OPT_MMAP, NULL, 0,
	  "Also record anonymous mmap, munmap and mremap", 0 },
	{ "keep-pymalloc", OPT_KEEP_PY, NULL, 0,
	  "Do not set PYTHONMALLOC=malloc for Python programs", 0 },
	{ "unwind", OPT_UNWIND, "METHOD", 0,
	  "Stack unwinder: fast (the default: own DWARF unwinder with a cache, "
	  "falling back to libunwind) or libunwind", 0 },
	{ 0 }
};

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;
	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case 'f':
		o->force = 1;
		break;
	case OPT_INTERVAL:
		if (parse_long(arg, 0, 3600000, &o->interval_ms))
			argp_error(state, "--interval takes milliseconds from "
					  "0 to 3600000, not '%s'", arg);
		break;
	case OPT_DEPTH:
		if (parse_long(arg, 1, 256, &o->depth))
			argp_error(state, "--depth takes a number from 1 to "
					  "256, not '%s'", arg);
		break;
	case OPT_NO_FOLLOW:
		o->no_follow = 1;
		break;
	case OPT_MMAP:
		o->mmap = 1;
		break;
	case OPT_KEEP_PY:
		o->keep_pymalloc = 1;
		break;
	case OPT_UNWIND:
		if (strcmp(arg, "libunwind") != 0 && strcmp(arg, "fast") != 0)
			argp_error(state, "unknown --unwind method '%s'", arg);
		o->unwind = arg;
		break;
	case ARGP_KEY_ARG:
		/* the command starts here: the rest is its own */
		o->cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!o->cmd)
			argp_error(state, "no command to record");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = {
	options, parse, "[--] COMMAND [ARGS...]",
	"Run COMMAND with the heapslope recorder preloaded and write every "
	"allocation and free, with its call stack, to a compressed trace.  "
	"Exits with COMMAND's status (128+N if signal N killed it).",
	NULL, NULL, NULL
};

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The recorder library: $HEAPSLOPE_LIB, next to this binary (build tree),
 * or the installed libdir. */
static int find_library(char *out, size_t cap)
{
	const char *env = getenv("HEAPSLOPE_LIB");
	char self[PATH_MAX];
	if (env && *env) {
		if (!realpath(env, out) || !exists(out))
			return hs_error("HEAPSLOPE_LIB=%s: no such file", env);
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		const char *dir = dirname(self);
		const char *cands[] = { "%s/libheapslope.so",
					"%s/../record/libheapslope.so",
					"%s/../lib/heapslope/libheapslope.so" };
		for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), cands[i], dir);
			if (exists(p) && realpath(p, out))
				return 0;
		}
	}
	snprintf(out, cap, "%s/libheapslope.so", HS_LIBDIR);
	if (exists(out))
		return 0;
	return hs_error("cannot find libheapslope.so (looked next to the "
			"heapslope binary and in %s; set HEAPSLOPE_LIB)",
			HS_LIBDIR);
}

static int absolute(const char *path, char *out, size_t cap)
{
	char cwd[PATH_MAX];
	if (path[0] == '/')
		return snprintf(out, cap, "%s", path) >= (int)cap ? -1 : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(out, cap, "%s/%s", cwd, path) >= (int)cap ? -1 : 0;
}

/* heapslope.PROGRAM.PID.hst in the current directory, as a full path. */
static int default_name(const char *prog, pid_t pid, char *out, size_t cap)
{
	char name[PATH_MAX];
	snprintf(name, sizeof(name), "heapslope.%s.%d.hst", prog, (int)pid);
	return absolute(name, out, cap);
}

static int create_trace(const char *path, int force)
{
	if (force && unlink(path) && errno != ENOENT)
		return -1;
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
}

static pid_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

struct paths {
	char **v;
	size_t n;
};

static void paths_add(struct paths *p, const char *s, size_t len)
{
	for (size_t i = 0; i < p->n; i++)
		if (strlen(p->v[i]) == len && !memcmp(p->v[i], s, len))
			return;
	char **v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v)
		return;
	p->v = v;
	p->v[p->n] = strndup(s, len);
	if (p->v[p->n])
		p->n++;
}

/* Lines "path\n" from the recorders, as they create traces. */
static void read_reports(int fd, char *buf, size_t cap, size_t *len,
			 struct paths *out)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n <= 0)
			return;
		*len += (size_t)n;
		char *nl;
		while ((nl = memchr(buf, '\n', *len))) {
			paths_add(out, buf, (size_t)(nl - buf));
			*len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, *len);
		}
		if (*len == cap)
			*len = 0;
	}
}

static void print_path(const char *path)
{
	char cwd[PATH_MAX];
	size_t l;
	if (getcwd(cwd, sizeof(cwd)) && (l = strlen(cwd)) &&
	    !strncmp(path, cwd, l) && path[l] == '/')
		path += l + 1;
	fprintf(stderr, "heapslope: trace written to %s\n", path);
}

/* Runs in the forked child: environment, trace file, exec.  root_fd is
 * the open root trace, -2 to create root_path here, -1 for a template. */
static void run_child(const struct record_opts *o, const char *lib,
		      const char *root_path, int root_fd, int err_fd)
{
	char num[32];
	const char *pre = getenv("LD_PRELOAD");
	char *preload = malloc(strlen(lib) + (pre ? strlen(pre) : 0) + 2);
	int stage = 0;
	if (!preload)
		goto fail;
	sprintf(preload, pre && *pre ? "%s %s" : "%s", lib, pre);
	setenv("LD_PRELOAD", preload, 1);
	if (!o->keep_pymalloc)
		setenv("PYTHONMALLOC", "malloc", 0);
	snprintf(num, sizeof(num), "%ld", o->interval_ms);
	setenv("HEAPSLOPE_INTERVAL", num, 1);
	snprintf(num, sizeof(num), "%ld", o->depth);
	setenv("HEAPSLOPE_DEPTH", num, 1);
	setenv("HEAPSLOPE_FOLLOW", o->no_follow ? "0" : "1", 1);
	setenv("HEAPSLOPE_MMAP", o->mmap ? "1" : "0", 1);
	if (o->unwind)
		setenv("HEAPSLOPE_UNWIND", o->unwind, 1);
	if (root_fd == -2) {
		stage = 1;
		root_fd = create_trace(root_path, 0);
		if (root_fd < 0)
			goto fail;
	}
	if (root_fd >= 0) {
		snprintf(num, sizeof(num), "%d", root_fd);
		setenv("HEAPSLOPE_FD", num, 1);
		setenv("HEAPSLOPE_FD_PATH", root_path, 1);
	}
	stage = 2;
	execvp(o->cmd[0], o->cmd);
fail: {
	int msg[2] = { stage, errno };
	(void)!write(err_fd, msg, sizeof(msg));
	_exit(127);
}
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { .interval_ms = 100, .depth = 64 };
	char lib[PATH_MAX], tmpl[PATH_MAX], root[PATH_MAX];
	int root_fd = -1, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int rc = 1, status = 0;
	struct paths paths = { 0 };
	char repbuf[8192];
	size_t replen = 0;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o))
		return 2;
	if (find_library(lib, sizeof(lib))) {
		fprintf(stderr, "heapslope record: %s\n", hs_last_error());
		return 1;
	}
	const char *prog = strrchr(o.cmd[0], '/');
	prog = prog ? prog + 1 : o.cmd[0];
	if (o.output && strchr(o.output, '%')) {
		/* a template: every process, the first included, expands it */
		if (absolute(o.output, tmpl, sizeof(tmpl)))
			goto toolong;
		root[0] = 0;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", tmpl);
		if (access(dirname(dir), W_OK | X_OK)) {
			fprintf(stderr, "heapslope record: cannot create traces "
					"in %s: %s\n", dir, strerror(errno));
			return 1;
		}
	} else if (o.output) {
		if (absolute(o.output, root, sizeof(root)) ||
		    snprintf(tmpl, sizeof(tmpl), "%s.%%p", root) >=
			    (int)sizeof(tmpl))
			goto toolong;
		root_fd = create_trace(root, o.force);
		if (root_fd < 0) {
			fprintf(stderr, "heapslope record: cannot create %s: "
					"%s%s\n", o.output, strerror(errno),
				errno == EEXIST ? " (use -f to replace it)"
						: "");
			return 1;
		}
	} else {
		if (absolute("heapslope.%e.%p.hst", tmpl, sizeof(tmpl)))
			goto toolong;
	}
	setenv("HEAPSLOPE_OUTPUT", tmpl, 1);
	if (pipe2(errp, O_CLOEXEC) || pipe2(rep, O_NONBLOCK)) {
		perror("heapslope record: pipe");
		goto out;
	}
	fcntl(rep[0], F_SETFD, FD_CLOEXEC);
	char num[32];
	snprintf(num, sizeof(num), "%d", rep[1]);
	setenv("HEAPSLOPE_REPORT_FD", num, 1);

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
		close(errp[0]);
		close(rep[0]);
		if (!o.output) {
			/* the default name carries the child's pid */
			if (default_name(prog, getpid(), root, sizeof(root)))
				_exit(127);
			root_fd = -2;
		}
		run_child(&o, lib, root, root_fd, errp[1]);
	}
	if (!o.output && default_name(prog, child_pid, root, sizeof(root)))
		root[0] = 0;
	/* like a shell: the terminal's signals go to the child; ours are
	 * passed on */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);
	close(errp[1]);
	errp[1] = -1;
	close(rep[1]);
	rep[1] = -1;
	if (root_fd >= 0)
		close(root_fd);
	root_fd = -1;

	int msg[2];
	ssize_t got;
	do
		got = read(errp[0], msg, sizeof(msg));
	while (got < 0 && errno == EINTR);
	if (got == (ssize_t)sizeof(msg)) {
		waitpid(child_pid, NULL, 0);
		if (msg[0] == 2 && root[0])
			unlink(root); /* nothing ran: leave no empty trace */
		if (msg[0] == 2)
			fprintf(stderr, "heapslope record: cannot run %s: %s\n",
				o.cmd[0], strerror(msg[1]));
		else
			fprintf(stderr, "heapslope record: cannot create the "
					"trace: %s\n", strerror(msg[1]));
		rc = msg[0] == 2 ? 127 : 1;
		goto out;
	}
	for (;;) {
		struct pollfd pfd = { rep[0], POLLIN, 0 };
		poll(&pfd, 1, 100);
		read_reports(rep[0], repbuf, sizeof(repbuf), &replen, &paths);
		pid_t w = waitpid(child_pid, &status, WNOHANG);
		if (w == child_pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("heapslope record: waitpid");
			goto out;
		}
	}
	read_reports(rep[0], repbuf, sizeof(repbuf), &replen, &paths);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (root[0] && trace_append_exit(root, status))
		fprintf(stderr, "heapslope record: note: %s\n",
			hs_last_error());
	if (root[0])
		paths_add(&paths, root, strlen(root));
	for (size_t i = 0; i < paths.n; i++)
		print_path(paths.v[i]);
	rc = WIFEXITED(status) ? WEXITSTATUS(status)
	     : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	goto out;
toolong:
	fprintf(stderr, "heapslope record: output path too long\n");
out:
	for (int i = 0; i < 2; i++) {
		if (errp[i] >= 0)
			close(errp[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	if (root_fd >= 0)
		close(root_fd);
	for (size_t i = 0; i < paths.n; i++)
		free(paths.v[i]);
	free(paths.v);
	return rc;
}
