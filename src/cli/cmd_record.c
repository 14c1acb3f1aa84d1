/* heapslope record: run a command with the recorder preloaded. */
#include <argp.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "format/append.h"
#include "format/error.h"
#include "format/reader.h"

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
	const char *allocator;
	long mallinfo; /* 0 never, 1 auto, 2 at every mark */
	const char *alloc_name; /* recorded in the header */
	const char *alloc_lib;  /* preloaded under the recorder; "" for glibc */
	int unloadable;         /* the recorder cannot load into the command */
	char **cmd;
};

enum { OPT_INTERVAL = 1000, OPT_DEPTH, OPT_NO_FOLLOW, OPT_MMAP, OPT_KEEP_PY,
       OPT_UNWIND, OPT_ALLOCATOR, OPT_MALLINFO };

/* The allocators --allocator knows by name, with the Debian package that
 * ships each.  glibc needs no library. */
static const struct allocator {
	const char *name, *soname, *package;
} allocators[] = {
	{ "glibc", NULL, NULL },
	{ "jemalloc", "libjemalloc.so.2", "libjemalloc2" },
	{ "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
	{ "mimalloc", "libmimalloc.so.2", "libmimalloc2.0" },
};

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
	{ "allocator", OPT_ALLOCATOR, "NAME|PATH", 0,
	  "Run COMMAND on another malloc, underneath the recorder: glibc (the "
	  "default), jemalloc, tcmalloc, mimalloc, or the path of a shared "
	  "library", 0 },
	{ "mallinfo", OPT_MALLINFO, "WHEN", 0,
	  "When marks read glibc's mallinfo2: auto (the default: at every "
	  "mark while that costs at most 2% of the run, else at evenly "
	  "spaced marks), always, or never", 0 },
	{ 0 }
};

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
	case OPT_ALLOCATOR:
		o->allocator = arg; /* checked after parsing: one-line errors */
		break;
	case OPT_MALLINFO:
		if (!strcmp(arg, "never"))
			o->mallinfo = 0;
		else if (!strcmp(arg, "auto"))
			o->mallinfo = 1;
		else if (!strcmp(arg, "always"))
			o->mallinfo = 2;
		else
			argp_error(state, "--mallinfo takes auto, always or "
					  "never, not '%s'", arg);
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

/* The start of an ELF file: ident, then e_type and e_machine, which sit
 * at the same offsets in 32- and 64-bit files. */
enum { ELF_HEAD = 20 };

static int elf_head(const char *path, unsigned char head[ELF_HEAD])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, head, ELF_HEAD);
	int e = errno;
	close(fd);
	if (n == ELF_HEAD && !memcmp(head, ELFMAG, SELFMAG))
		return 0;
	errno = n < 0 ? e : ENOEXEC;
	return -1;
}

/* A shared library the dynamic linker can preload next to the recorder,
 * whose head is `like`: same class, byte order and machine. */
static int shared_library(const char *path, const unsigned char *like)
{
	unsigned char h[ELF_HEAD];
	uint16_t type;
	if (elf_head(path, h))
		return -1;
	memcpy(&type, h + 16, sizeof(type));
	if (h[EI_CLASS] != like[EI_CLASS] || h[EI_DATA] != like[EI_DATA] ||
	    memcmp(h + 18, like + 18, 2) || type != ET_DYN) {
		errno = ENOEXEC;
		return -1;
	}
	return 0;
}

static int try_dir(const char *dir, size_t len, const char *soname,
		   const unsigned char *like, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "%.*s/%s", (int)len, dir, soname) >=
	    cap)
		return -1;
	return shared_library(out, like);
}

static int libc_dir(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = strrchr(info->dlpi_name, '/');
	(void)size;
	if (!base || strncmp(base + 1, "libc.so", 7))
		return 0;
	snprintf(data, PATH_MAX, "%.*s", (int)(base - info->dlpi_name),
		 info->dlpi_name);
	return 1;
}

/* Where the dynamic linker would find soname: LD_LIBRARY_PATH, the
 * directory libc came from (the multiarch one, /lib/x86_64-linux-gnu on
 * Debian amd64) and its /usr twin, then the usual ones. */
static int search_library(const char *soname, const unsigned char *like,
			  char *out, size_t cap)
{
	static const char *const fixed[] = { "/usr/local/lib", "/usr/lib64",
					     "/lib64", "/usr/lib", "/lib" };
	char libc[PATH_MAX] = "", usr[PATH_MAX + 4];
	for (const char *s = getenv("LD_LIBRARY_PATH"); s && *s;) {
		size_t l = strcspn(s, ":;");
		if (l && !try_dir(s, l, soname, like, out, cap))
			return 0;
		s += l + (s[l] != 0);
	}
	dl_iterate_phdr(libc_dir, libc);
	if (*libc && !try_dir(libc, strlen(libc), soname, like, out, cap))
		return 0;
	if (!strncmp(libc, "/lib/", 5)) {
		snprintf(usr, sizeof(usr), "/usr%s", libc);
		if (!try_dir(usr, strlen(usr), soname, like, out, cap))
			return 0;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!try_dir(fixed[i], strlen(fixed[i]), soname, like, out,
			     cap))
			return 0;
	return -1;
}

/* --allocator NAME|PATH: the name for the header and the library to
 * preload (out, empty for glibc).  recorder is libheapslope.so, whose
 * machine the allocator must match.  Prints a one-line error. */
static int find_allocator(struct record_opts *o, const char *recorder,
			  char *out, size_t cap)
{
	const char *arg = o->allocator;
	unsigned char like[ELF_HEAD];
	out[0] = 0;
	o->alloc_name = "glibc";
	o->alloc_lib = out;
	if (!arg)
		return 0;
	if (elf_head(recorder, like)) {
		fprintf(stderr, "heapslope record: %s: %s\n", recorder,
			strerror(errno));
		return -1;
	}
	if (strchr(arg, '/')) {
		const char *base = strrchr(arg, '/') + 1;
		errno = ENAMETOOLONG;
		if (!*base || absolute(arg, out, cap) ||
		    shared_library(out, like)) {
			fprintf(stderr, "heapslope record: allocator %s: %s\n",
				arg, !*base || errno == ENOEXEC
					? "not a shared library for this "
					  "machine"
					: strerror(errno));
			return -1;
		}
		o->alloc_name = base;
	} else {
		const struct allocator *a = NULL;
		for (size_t i = 0; i < sizeof(allocators) / sizeof(*a); i++)
			if (!strcmp(arg, allocators[i].name))
				a = &allocators[i];
		if (!a) {
			fprintf(stderr, "heapslope record: unknown allocator "
					"'%s' (glibc, jemalloc, tcmalloc, "
					"mimalloc, or a library's path)\n",
				arg);
			return -1;
		}
		o->alloc_name = a->name;
		if (a->soname && search_library(a->soname, like, out, cap)) {
			fprintf(stderr, "heapslope record: allocator %s not "
					"found: install %s (%s)\n", a->name,
				a->package, a->soname);
			return -1;
		}
	}
	if (strpbrk(out, " :")) {
		fprintf(stderr, "heapslope record: allocator %s: LD_PRELOAD "
				"cannot hold a path with a space or a colon\n",
			out);
		return -1;
	}
	return 0;
}

/* heapslope.PROGRAM.PID.hst in the current directory, as a full path. */
static int default_name(const char *prog, pid_t pid, char *out, size_t cap)
{
	char name[PATH_MAX];
	snprintf(name, sizeof(name), "heapslope.%s.%d.hst", prog, (int)pid);
	return absolute(name, out, cap);
}

enum { CREATE_NOT_REGULAR = -2 };

/* Creates the trace at path.  force replaces a regular file or a
 * symlink (the link itself, never what it points to), never anything
 * else: as root, -f -o /dev/null must not delete /dev/null.  step: if the name is
 * taken, the next free of path.1, path.2 ... (as the recorder does for
 * the processes below), written back into path. */
static int create_trace(char *path, size_t cap, int force, int step)
{
	struct stat st;
	char base[PATH_MAX];
	if (force && lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			return CREATE_NOT_REGULAR;
		if (unlink(path) && errno != ENOENT)
			return -1;
	}
	snprintf(base, sizeof(base), "%s", path);
	for (int i = 0; i < (step ? 1000 : 1); i++) {
		if (i && (size_t)snprintf(path, cap, "%s.%d", base, i) >= cap)
			break;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
			      0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* The program execvp would run for cmd: a path, or the first executable
 * file of that name in PATH. */
static int find_program(const char *cmd, char *out, size_t cap)
{
	if (strchr(cmd, '/'))
		return snprintf(out, cap, "%s", cmd) >= (int)cap ? -1 : 0;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *s = path;;) {
		size_t l = strcspn(s, ":");
		struct stat st;
		if ((size_t)snprintf(out, cap, "%.*s%s%s", (int)l, s,
				     l ? "/" : "", cmd) < cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return 0;
		if (!s[l])
			return -1;
		s += l + 1;
	}
}

/* Whether the ELF file at fd has a program interpreter (the dynamic
 * loader, which honours LD_PRELOAD). */
static int has_interp(int fd)
{
	unsigned char id[EI_NIDENT];
	if (pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return -1;
	int is64 = id[EI_CLASS] == ELFCLASS64;
	uint64_t phoff;
	unsigned phnum, phentsize;
	if (is64) {
		Elf64_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			return -1;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	} else {
		Elf32_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			return -1;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	}
	for (unsigned i = 0; i < phnum && i < 4096; i++) {
		uint32_t type;
		if (pread(fd, &type, sizeof(type), (off_t)(phoff + (uint64_t)i *
							     phentsize)) !=
		    (ssize_t)sizeof(type))
			return -1;
		if (type == PT_INTERP)
			return 1;
	}
	return 0;
}

/* Why the recorder cannot load into the program at path (NULL: it can,
 * as far as can be told): a static executable ignores LD_PRELOAD, and
 * so does the loader of a program that runs with other privileges. */
static const char *unloadable(const char *path, int depth)
{
	static char why[PATH_MAX + 100];
	struct stat st;
	char head[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL; /* exec will say */
	}
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	const char *r = NULL;
	if ((st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
	    (st.st_mode & S_ISGID && st.st_gid != getegid()) ||
	    fgetxattr(fd, "security.capability", NULL, 0) > 0) {
		snprintf(why, sizeof(why), "%s runs with other privileges "
			 "(setuid, setgid or file capabilities): the loader "
			 "ignores LD_PRELOAD for it", path);
		r = why;
	} else if (n >= 4 && !memcmp(head, ELFMAG, SELFMAG)) {
		if (has_interp(fd) == 0) {
			snprintf(why, sizeof(why), "%s is statically linked: "
				 "it loads no library, the recorder included",
				 path);
			r = why;
		}
	} else if (n > 2 && head[0] == '#' && head[1] == '!' && depth < 4) {
		/* a script: its interpreter is what runs */
		head[n] = 0;
		char *s = head + 2 + strspn(head + 2, " \t");
		s[strcspn(s, " \t\n")] = 0;
		close(fd);
		return *s ? unloadable(s, depth + 1) : NULL;
	}
	close(fd);
	return r;
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

static void paths_remove(struct paths *p, const char *s)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->v[i], s))
			p->v[k++] = p->v[i];
		else
			free(p->v[i]);
	}
	p->n = k;
}

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

/* The channel the recorders report their traces on: a listening unix
 * socket in the abstract namespace, named in HEAPSLOPE_REPORT.  Nothing
 * of it is inherited by the program (close-on-exec), and a recorder that
 * outlives `record` finds nobody listening: its connect just fails. */
static int reports_open(char *name, size_t cap)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	snprintf(name, cap, "heapslope.%d.%016llx", (int)getpid(),
		 (unsigned long long)r);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t l = strlen(name);
	memcpy(a.sun_path + 1, name, l);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l)) ||
	    listen(fd, 4096)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One recorder's report: it connects, writes a line and closes, so the
 * line is there by now; a connection that sends nothing is given up
 * after a moment.  Only processes of our own user are listened to. */
static void read_report(int c, struct paths *out)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char buf[PATH_MAX + 2];
	size_t len = 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
	    cred.uid != getuid())
		return;
	while (len < sizeof(buf)) {
		struct pollfd p = { c, POLLIN, 0 };
		if (poll(&p, 1, 100) <= 0)
			break;
		ssize_t n = read(c, buf + len, sizeof(buf) - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	char *nl = memchr(buf, '\n', len);
	if (nl && nl > buf)
		paths_add(out, buf, (size_t)(nl - buf));
}

static void reports_drain(int fd, struct paths *out)
{
	int c;
	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		read_report(c, out);
		close(c);
	}
}


/* What the child tells the parent, on a close-on-exec pipe: where its
 * trace is, or why it could not run the command. */
struct child_msg {
	int stage; /* STAGE_* */
	int err;
	char path[PATH_MAX];
};
enum { STAGE_PATH, STAGE_CREATE, STAGE_EXEC };

static void tell(int fd, int stage, int err, const char *path)
{
	struct child_msg m = { .stage = stage, .err = err };
	snprintf(m.path, sizeof(m.path), "%s", path ? path : "");
	(void)!write(fd, &m, sizeof(m));
}

/* Runs in the forked child: environment, trace file, exec.  root_fd is
 * the open root trace, -2 to create root_path here, -1 for a template. */
static void run_child(const struct record_opts *o, const char *lib,
		      char *root_path, int root_fd, int err_fd,
		      const char *report)
{
	char num[160];
	const char *pre = getenv("LD_PRELOAD"), *al = o->alloc_lib;
	if (!pre)
		pre = "";
	size_t cap = strlen(lib) + strlen(al) + strlen(pre) + 3;
	char *preload = malloc(cap);
	if (!preload) {
		tell(err_fd, STAGE_CREATE, ENOMEM, NULL);
		_exit(127);
	}
	/* the recorder first, so that the program's calls reach it and its
	 * dlsym(RTLD_NEXT) finds the allocator's; the user's own after */
	snprintf(preload, cap, "%s%s%s%s%s", lib, *al ? " " : "", al,
		 *pre ? " " : "", pre);
	setenv("LD_PRELOAD", preload, 1);
	setenv("HEAPSLOPE_ALLOCATOR", o->alloc_name, 1);
	if (!o->keep_pymalloc)
		setenv("PYTHONMALLOC", "malloc", 0);
	snprintf(num, sizeof(num), "%ld", o->interval_ms);
	setenv("HEAPSLOPE_INTERVAL", num, 1);
	snprintf(num, sizeof(num), "%ld", o->depth);
	setenv("HEAPSLOPE_DEPTH", num, 1);
	setenv("HEAPSLOPE_FOLLOW", o->no_follow ? "0" : "1", 1);
	setenv("HEAPSLOPE_MMAP", o->mmap ? "1" : "0", 1);
	snprintf(num, sizeof(num), "%ld", o->mallinfo);
	setenv("HEAPSLOPE_MALLINFO", num, 1);
	if (o->unwind)
		setenv("HEAPSLOPE_UNWIND", o->unwind, 1);
	setenv("HEAPSLOPE_REPORT", report, 1);
	/* the recorders below tell the first image by this pid */
	snprintf(num, sizeof(num), "%d", (int)getpid());
	setenv("HEAPSLOPE_ROOT", num, 1);
	unsetenv("HEAPSLOPE_EXECED");
	if (root_fd == -2) {
		root_fd = create_trace(root_path, PATH_MAX, 0, 1);
		if (root_fd < 0) {
			tell(err_fd, STAGE_CREATE, errno, root_path);
			_exit(127);
		}
	}
	unsetenv("HEAPSLOPE_FD");
	if (root_fd >= 0 && o->unloadable) {
		/* nothing will adopt it: not the program's to inherit */
		close(root_fd);
		root_fd = -1;
		tell(err_fd, STAGE_PATH, 0, root_path);
	}
	if (root_fd >= 0) {
		struct stat st;
		if (fstat(root_fd, &st)) {
			tell(err_fd, STAGE_CREATE, errno, root_path);
			_exit(127);
		}
		/* the token proves itself: this process, this very file */
		snprintf(num, sizeof(num), "%d:%d:%llu:%llu", root_fd,
			 (int)getpid(), (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		setenv("HEAPSLOPE_FD", num, 1);
		setenv("HEAPSLOPE_FD_PATH", root_path, 1);
		tell(err_fd, STAGE_PATH, 0, root_path);
	}
	execvp(o->cmd[0], o->cmd);
	tell(err_fd, STAGE_EXEC, errno, NULL);
	_exit(127);
}

/* Reads one message; 0 at end of file (the child exec'd). */
static int read_msg(int fd, struct child_msg *m)
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

/* Whether the trace at path has a heap event (read up to the first). */
static int has_events(struct hs_reader *r)
{
	struct hs_record rec;
	int rc;
	while ((rc = reader_next(r, &rec)) > 0)
		if (rec.kind >= HS_REC_ALLOC)
			return 1;
	return rc < 0; /* unreadable: not ours to remove */
}

/* After the run, the first process's trace: one the recorder never wrote
 * to (it did not load), or that holds no event because the program's
 * malloc was its own, is removed, with one line that says why, unless
 * that was said before the run. */
static int check_trace(const char *path, const char *prog, int warned)
{
	struct stat st;
	if (stat(path, &st) == 0 && st.st_size == 0) {
		unlink(path);
		if (!warned)
			fprintf(stderr, "heapslope record: nothing was recorded "
					"in %s: the recorder did not load in "
					"it\n", prog);
		return -1;
	}
	struct hs_reader *r = reader_open(path);
	const struct hs_header *h = r ? reader_header(r) : NULL;
	int empty = h && h->malloc_owner && !has_events(r);
	if (empty) {
		unlink(path);
		fprintf(stderr, "heapslope record: nothing was recorded in %s: "
				"its malloc is its own (%s), which the "
				"recorder does not see\n", prog, h->malloc_owner);
	}
	reader_destroy(r);
	return empty ? -1 : 0;
}

/* "trace written", and when the program's malloc was its own (the
 * header says so), that nothing went through it. */
static void print_path(const char *path)
{
	char cwd[PATH_MAX];
	const char *shown = path;
	size_t l;
	if (getcwd(cwd, sizeof(cwd)) && (l = strlen(cwd)) &&
	    !strncmp(path, cwd, l) && path[l] == '/')
		shown = path + l + 1;
	struct hs_reader *r = reader_open(path);
	const struct hs_header *h = r ? reader_header(r) : NULL;
	if (h && h->malloc_owner)
		fprintf(stderr, "heapslope: trace written to %s (no allocation "
				"recorded: the program's malloc is %s's own)\n",
			shown, h->malloc_owner);
	else
		fprintf(stderr, "heapslope: trace written to %s\n", shown);
	reader_destroy(r);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { .interval_ms = 100, .depth = 64, .mallinfo = 1 };
	char lib[PATH_MAX], alloc[PATH_MAX], tmpl[PATH_MAX], root[PATH_MAX];
	char exe[PATH_MAX], report[64];
	int root_fd = -1, errp[2] = { -1, -1 }, rep = -1, pidfd = -1;
	int rc = 1, status = 0;
	struct paths paths = { 0 };
	struct child_msg msg;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o))
		return 2;
	if (find_library(lib, sizeof(lib))) {
		fprintf(stderr, "heapslope record: %s\n", hs_last_error());
		return 1;
	}
	if (find_allocator(&o, lib, alloc, sizeof(alloc)))
		return 2;
	const char *prog = strrchr(o.cmd[0], '/');
	prog = prog ? prog + 1 : o.cmd[0];
	const char *why = NULL;
	if (find_program(o.cmd[0], exe, sizeof(exe)) == 0 &&
	    (why = unloadable(exe, 0))) {
		o.unloadable = 1;
		fprintf(stderr, "heapslope record: warning: %s; nothing of %s "
				"will be recorded (programs it runs may be)\n",
			why, prog);
	}
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
		root_fd = create_trace(root, sizeof(root), o.force, 0);
		if (root_fd == CREATE_NOT_REGULAR) {
			fprintf(stderr, "heapslope record: cannot replace %s: "
					"not a regular file (-f replaces "
					"regular files and symlinks only)\n",
				o.output);
			return 1;
		}
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
	rep = reports_open(report, sizeof(report));
	if (rep < 0) {
		perror("heapslope record: report socket");
		goto out;
	}
	if (pipe2(errp, O_CLOEXEC)) {
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
		close(errp[0]);
		close(rep);
		if (!o.output) {
			/* the default name carries the child's pid */
			if (default_name(prog, getpid(), root, sizeof(root)))
				_exit(127);
			root_fd = -2;
		}
		run_child(&o, lib, root, root_fd, errp[1], report);
	}
	/* like a shell: the terminal's signals go to the child; ours are
	 * passed on */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);
	close(errp[1]);
	errp[1] = -1;
	if (root_fd >= 0)
		close(root_fd);
	root_fd = -1;

	int got;
	while ((got = read_msg(errp[0], &msg)) > 0 && msg.stage == STAGE_PATH)
		snprintf(root, sizeof(root), "%s", msg.path);
	if (got > 0) {
		waitpid(child_pid, NULL, 0);
		if (msg.stage == STAGE_EXEC && root[0])
			unlink(root); /* nothing ran: leave no empty trace */
		if (msg.stage == STAGE_EXEC)
			fprintf(stderr, "heapslope record: cannot run %s: %s\n",
				o.cmd[0], strerror(msg.err));
		else
			fprintf(stderr, "heapslope record: cannot create the "
					"trace%s%s: %s\n", msg.path[0] ? " " : "",
				msg.path, strerror(msg.err));
		rc = msg.stage == STAGE_EXEC ? 127 : 1;
		goto out;
	}
	/* the child's exit wakes the loop at once (a pidfd), reports as they
	 * come; without pidfds, every 100 ms */
	pidfd = (int)syscall(SYS_pidfd_open, child_pid, 0);
	for (;;) {
		struct pollfd pfd[2] = { { rep, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
		poll(pfd, pidfd >= 0 ? 2 : 1, 100);
		reports_drain(rep, &paths);
		pid_t w = waitpid(child_pid, &status, WNOHANG);
		if (w == child_pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("heapslope record: waitpid");
			goto out;
		}
	}
	reports_drain(rep, &paths);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (root[0] && check_trace(root, prog, why != NULL) == 0) {
		if (trace_append_exit(root, status))
			fprintf(stderr, "heapslope record: note: %s\n",
				hs_last_error());
		paths_add(&paths, root, strlen(root));
	} else if (root[0]) {
		paths_remove(&paths, root); /* reported, then removed */
	}
	/* the others' processes may still run (or start writing): theirs
	 * are never checked, let alone removed */
	for (size_t i = 0; i < paths.n; i++)
		print_path(paths.v[i]);
	rc = WIFEXITED(status) ? WEXITSTATUS(status)
	     : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	goto out;
toolong:
	fprintf(stderr, "heapslope record: output path too long\n");
out:
	for (int i = 0; i < 2; i++)
		if (errp[i] >= 0)
			close(errp[i]);
	if (rep >= 0)
		close(rep);
	if (pidfd >= 0)
		close(pidfd);
	if (root_fd >= 0)
		close(root_fd);
	for (size_t i = 0; i < paths.n; i++)
		free(paths.v[i]);
	free(paths.v);
	return rc;
}
