/* The trace file: its name (launch/contract.h), opening it or adopting
 * the one `heapslope record` opened, keeping it out of the program's way,
 * the header, writing chunks at its end, and its last words when
 * recording stops. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include <zstd.h>

#include "internal.h"
#include "records.h"
#include "unwind.h"

#ifndef HS_VERSION
#define HS_VERSION "unknown"
#endif

static struct {
	int fd;
	uint64_t file_off; /* end of the last complete chunk */
	dev_t dev;         /* identity of the file behind fd */
	ino_t ino;
	int made;          /* this process created the file (not record) */
	char path[4096];
} T = { .fd = -1 };

/* recording stops: "VERB <trace path>" */
static void fail_path(const char *verb, int err)
{
	char what[4200];
	snprintf(what, sizeof(what), "%s %.4000s", verb, T.path);
	hs_fail(what, err);
}

int fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev &&
	       st.st_ino == ino;
}

/* Whether fd still names this process's trace. */
static int is_trace(int fd)
{
	return fd_is(fd, T.dev, T.ino);
}

int fd_high(int fd, int from)
{
	struct rlimit rl;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, from);
	/* a limit at or below 700: as high as it allows */
	if (high < 0 && errno == EINVAL &&
	    getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64 + 16)
		high = fcntl(fd, F_DUPFD_CLOEXEC, (int)rl.rlim_cur - 64);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* Tells `heapslope record` about a new trace, through its abstract socket:
 * no descriptor of ours is ever inherited by the program, and a reader
 * that has gone (record killed, a child outliving it) costs nothing: the
 * connection is refused, no signal, no wait. */
void trace_report(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t l = strlen(hs_env.report);
	if (!l || l + 1 > sizeof(a.sun_path))
		return;
	memcpy(a.sun_path + 1, hs_env.report, l);
	char line[4200];
	int n = snprintf(line, sizeof(line), "%s\n", T.path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (n > 0 && (size_t)n < sizeof(line) &&
	    connect(fd, (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				l)) == 0)
		(void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* A trace of this process's own, named by the template: the first name
 * not taken. */
static int open_output(void)
{
	const char *tmpl = hs_env.output;
	char base[4096];
	if (!*tmpl)
		tmpl = HS_TRACE_TEMPLATE;
	if (trace_name_expand(tmpl, program_invocation_short_name, getpid(),
			      base, sizeof(base) - 8)) {
		hs_fail("trace path too long", 0);
		return -1;
	}
	for (int i = 0; i < HS_TRACE_TRIES; i++) {
		if (trace_name_try(base, i, T.path, sizeof(T.path)))
			break;
		T.fd = open(T.path,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (T.fd >= 0 || errno != EEXIST)
			break;
	}
	if (T.fd < 0) {
		fail_path("cannot create", errno);
		return -1;
	}
	T.made = 1;
	return 0;
}

/* The descriptor HEAPSLOPE_FD names, when it proves itself: this very
 * process, and on that descriptor the very file record opened; else -1. */
static int token_fd(void)
{
	/* fd:pid:dev:ino; no sscanf in the recorder (see sampler_take) */
	unsigned long long v[4];
	const char *s = hs_env.fd_token;
	for (int i = 0; i < 4; i++) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		v[i] = strtoull(s, &end, 10);
		if (*end != (i < 3 ? ':' : 0))
			return -1;
		s = end + (i < 3);
	}
	if (v[0] > INT_MAX || v[1] != (unsigned long long)getpid() ||
	    !fd_is((int)v[0], (dev_t)v[2], (ino_t)v[3]))
		return -1;
	return (int)v[0];
}

/* The first image of `heapslope record` gets its trace already opened, on
 * the descriptor the token names.  The token is inherited by every
 * process below (bash keeps exporting it whatever unsetenv does), so it
 * proves itself: the process record started, and on that descriptor the
 * very file record opened.  Anything else opens a trace of its own. */
static int adopt_output(void)
{
	int fd = token_fd();
	if (fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return open_output();
	T.fd = fd;
	T.made = 0;
	snprintf(T.path, sizeof(T.path), "%s",
		 *hs_env.fd_path ? hs_env.fd_path : "(fd)");
	return 0;
}

void trace_drop_token(void)
{
	int fd = token_fd();
	if (fd >= 0)
		close(fd);
}

/* Moves the trace out of the program's way (a high descriptor) and
 * remembers which file it is, to notice if the program closes it. */
static int keep_output(void)
{
	struct stat st;
	T.fd = fd_high(T.fd, HS_FD_HIGH);
	if (fstat(T.fd, &st)) {
		fail_path("fstat", errno);
		return -1;
	}
	T.dev = st.st_dev;
	T.ino = st.st_ino;
	return 0;
}

int trace_open(int adopt)
{
	T.file_off = 0; /* a forked child's is its parent's until its header */
	if (adopt ? adopt_output() : open_output())
		return -1;
	if (keep_output()) { /* never left open, nor written to */
		close(T.fd);
		T.fd = -1;
		return -1;
	}
	return 0;
}

int trace_has_fd(void)
{
	return T.fd >= 0;
}

void trace_let_go(void)
{
	if (is_trace(T.fd))
		close(T.fd);
	T.fd = -1;
}

/* Where the brk heap starts (start_brk, field 47 of /proc/self/stat): the
 * analyzer tells glibc's main arena from its mmapped blocks and thread
 * heaps by it.  0 when the kernel does not say. */
static uint64_t heap_start(void)
{
	static char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p)
		return 0;
	/* p + 2 is field 3 (state); field 47 is 44 fields further */
	p += 2;
	for (int field = 3; field < 47 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

/* The object whose malloc the program's calls reach, when it is not the
 * recorder's (a program or library before us that defines its own):
 * nothing the program allocates through it can be recorded. */
static const char *malloc_owner(void)
{
	static char path[4096];
	Dl_info a, b;
	const ElfW(Sym) *sym = NULL;
	void *f = dlsym(RTLD_DEFAULT, "malloc");
	/* an executable that takes malloc's address has a stub of that name
	 * (a canonical PLT entry) that dlsym returns: only a definition, at
	 * that very address, is a malloc of its own */
	if (!f || !dladdr1(f, &a, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    !a.dli_sname || strcmp(a.dli_sname, "malloc") || a.dli_saddr != f ||
	    sym->st_shndx == SHN_UNDEF ||
	    !dladdr((void *)recorder_init, &b) || a.dli_fbase == b.dli_fbase)
		return NULL;
	if (a.dli_fname && a.dli_fname[0])
		snprintf(path, sizeof(path), "%s", a.dli_fname);
	else if (readlink("/proc/self/exe", path, sizeof(path) - 1) <= 0)
		snprintf(path, sizeof(path), "the program");
	return path;
}

/* The trace cut at off: after a failed write, or bytes the program wrote
 * into it.  Past RLIMIT_FSIZE, as writes, without SIGXFSZ (internal.h). */
static int cut_at(int fd, uint64_t off)
{
	struct hs_xfsz x;
	hs_xfsz_hold(&x);
	int err = ftruncate(fd, (off_t)off) ? errno : 0;
	hs_xfsz_let_go(&x, err);
	if (err)
		errno = err;
	return err ? -1 : 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	struct hs_xfsz x;
	int rc = 0, err = 0;
	hs_xfsz_hold(&x);
	while (n) {
		ssize_t w = hs_write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : ENOSPC;
			rc = -1;
			break;
		}
		b += w;
		n -= (size_t)w;
	}
	hs_xfsz_let_go(&x, err);
	if (rc)
		errno = err;
	return rc;
}

/* A file without its whole header is no trace: nothing is written to it
 * any more (no end: file_off stays 0) and it is let go; one this process
 * made is removed, if its path still names it.  One `heapslope record`
 * made is left to it, which reports it incomplete. */
static void header_failed(void)
{
	struct stat st;
	if (T.made && lstat(T.path, &st) == 0 && st.st_dev == T.dev &&
	    st.st_ino == T.ino)
		unlink(T.path);
	if (is_trace(T.fd))
		close(T.fd);
	T.fd = -1;
}

int trace_write_header(unsigned options)
{
	static uint8_t body[60000], out[60000 + HS_PREAMBLE_LEN];
	static char exe[4096];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	struct timespec rt;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	clock_gettime(CLOCK_REALTIME, &rt);
	header_put_u64(&h, HS_HDR_PID, (uint64_t)getpid());
	header_put_u64(&h, HS_HDR_PPID, (uint64_t)getppid());
	header_put_str(&h, HS_HDR_EXE, exe);
	header_put_u64(&h, HS_HDR_START_REALTIME,
		    (uint64_t)rt.tv_sec * 1000000000ull +
			    (uint64_t)rt.tv_nsec);
	header_put_u64(&h, HS_HDR_START_MONOTONIC, hs_rec.start_ns);
	header_put_u64(&h, HS_HDR_PAGE_SIZE, (uint64_t)getpagesize());
	header_put_u64(&h, HS_HDR_DEPTH, (uint64_t)hs_settings.depth);
	header_put_u64(&h, HS_HDR_OPTIONS, options);
	header_put_str(&h, HS_HDR_VERSION, HS_VERSION);
	header_put_u64(&h, HS_HDR_INTERVAL, (uint64_t)hs_settings.interval_ms);
	header_put_str(&h, HS_HDR_UNWIND, unwind_name());
	header_put_str(&h, HS_HDR_ALLOCATOR, hs_env.allocator);
	header_put_u64(&h, HS_HDR_HEAP_START, heap_start());
	/* said of a Python program only */
	if (hs_settings.pymalloc_set && exiting_in_python())
		header_put_u64(&h, HS_HDR_PYMALLOC, 1);
	if (!(options & HS_OPT_FORKED)) {
		header_put_u64(&h, HS_HDR_BEFORE_ALLOCS,
			       __atomic_load_n(&hs_before_allocs,
					       __ATOMIC_RELAXED));
		header_put_u64(&h, HS_HDR_BEFORE_BYTES,
			       __atomic_load_n(&hs_before_bytes,
					       __ATOMIC_RELAXED));
	}
	const char *owner = malloc_owner();
	if (owner)
		header_put_str(&h, HS_HDR_MALLOC_OWNER, owner);
	for (int i = 0; i < hs_rec.argc && hs_rec.argv && hs_rec.argv[i]; i++) {
		struct hs_header_buf keep = h;
		header_put_str(&h, HS_HDR_ARG, hs_rec.argv[i]);
		if (h.overflow) { /* a huge argv: keep what fits */
			h = keep;
			break;
		}
	}
	size_t len = header_write(&h, out, sizeof(out));
	if (!len || write_all(T.fd, out, len)) {
		fail_path("write", len ? errno : 0);
		header_failed();
		return -1;
	}
	T.file_off = len;
	/* `heapslope record` says it next to the trace's name */
	if (owner && !*hs_env.report)
		hs_say("heapslope: %s defines its own malloc: allocations made "
		       "through it cannot be recorded", owner);
	return 0;
}

int trace_write(const uint8_t *chunk, size_t n)
{
	if (!is_trace(T.fd)) {
		/* the program closed our descriptor (and may have reused its
		 * number for a file of its own): never write there.  What is
		 * buffered is written at the end (trace_write_stop) */
		hs_rec.fail_kind = FAIL_FD;
		fail_path("the program closed or replaced the descriptor of", 0);
		return -1;
	}
	off_t at = lseek(T.fd, 0, SEEK_CUR); /* -1: not seekable, no check */
	if (at >= 0 && at != (off_t)T.file_off) {
		/* the program wrote into the trace, through a copy of the
		 * descriptor it made (bash, taking a close-on-exec descriptor
		 * of 10 and up for one of its own, undoes the script's
		 * redirection onto it): its bytes are cut, and recording
		 * stops; this chunk and what is buffered still go out, then
		 * why the trace ends */
		if (cut_at(T.fd, T.file_off) ||
		    lseek(T.fd, (off_t)T.file_off, SEEK_SET) < 0) {
			hs_rec.fail_kind = FAIL_IO;
			fail_path("the program wrote into", errno);
			return -1;
		}
		fail_path("the program wrote into", 0);
	}
	if (write_all(T.fd, chunk, n)) {
		int err = errno;
		/* a full disk: cut the partial chunk so the trace stays whole
		 * up to its last complete chunk */
		(void)cut_at(T.fd, T.file_off);
		if (!hs_rec.failed)
			hs_rec.fail_kind = FAIL_IO;
		fail_path("write", err);
		return -1;
	}
	T.file_off += n;
	return 0;
}

/* The trace's descriptor, or when the program took it, the trace opened
 * again by its path (checked to be the same file); -1 if neither. */
static int reopen(int *own)
{
	*own = 0;
	if (is_trace(T.fd))
		return T.fd;
	/* O_NONBLOCK: a FIFO put at the path must not hang us (the identity
	 * check then refuses it); regular files ignore it */
	const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
	int fd = open(T.path, flags);
	struct rlimit rl;
	if (fd < 0 && errno == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < rl.rlim_max) {
		/* the program holds every descriptor it may: one past its
		 * limit, for a moment (the limit is the program's again at
		 * once; a descriptor already open stays valid) */
		struct rlimit more = { rl.rlim_cur + 1, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
			fd = open(T.path, flags);
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (fd >= 0 && !is_trace(fd)) {
		close(fd);
		return -1;
	}
	*own = fd >= 0;
	return fd;
}

/* What was buffered goes out first (unless the trace cannot be written),
 * then why recording stopped, after the last whole chunk.  When the
 * program took the descriptor, this waits for the image's end (finish):
 * opening the trace again takes the program's lowest free descriptor for
 * a moment, which a program that just closed its descriptors may be
 * about to open.  If nothing can be written, the trace just ends. */
void trace_write_stop(void)
{
	struct recorder *R = &hs_rec;
	/* lock held; small stacks */
	static uint8_t end[RECORDS_END_MAX],
		chunk[HS_CHUNK_HEADER_LEN +
		      ZSTD_COMPRESSBOUND(RECORDS_END_MAX + 64)];
	int own;
	if (R->ended || !hs_started || !T.file_off ||
	    (R->fail_kind == FAIL_FD && !R->finishing))
		return;
	R->ended = 1;
	int fd = reopen(&own), saved = T.fd;
	if (fd < 0 || lseek(fd, (off_t)T.file_off, SEEK_SET) < 0)
		goto out;
	T.fd = fd;
	if (R->fail_kind != FAIL_IO)
		buffer_drain();
	size_t n = records_end(end, HS_END_ERROR, NULL,
			       R->failed ? R->stop_reason : NULL, R->counts);
	size_t c = writer_compress(end, n, chunk, sizeof(chunk));
	if (c && write_all(fd, chunk, c) == 0)
		T.file_off += c;
	else
		(void)cut_at(fd, T.file_off);
out:
	if (own) {
		close(fd);
		saved = -1;
	}
	T.fd = saved;
}
