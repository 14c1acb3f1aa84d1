/* Recorder state, start-up, events and fork/exec/exit handling.  Every
 * event is appended under one short lock, which is what keeps the order of
 * a free and a later reuse of the same address across threads. */
#include "recorder.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "anonmap.h"
#include "stacks.h"
#include "../format/rmem.h"

#ifndef HS_VERSION
#define HS_VERSION "unknown"
#endif

#define BUF_SIZE (2u << 20)
#define STACK_REC_MAX (1 + 3 * HS_VARINT_MAX)
#define LABEL_MAX 1024
#define ZSTD_LEVEL 1

__thread struct tstate hs_thread HS_TLS;
struct recorder hs_rec = {
	.fd = -1,
};
static struct live live_none; /* before start-up: nothing is recorded */
struct live *hs_live = &live_none;
static hs_lock mod_lock;

/* What `heapslope record` passed in the environment, read once at
 * start-up: later, getenv may be the program's own (bash's reads its
 * shell variables). */
static struct {
	char output[4096];  /* trace name template */
	char report[108];   /* abstract socket of `heapslope record` */
	char fd_token[128]; /* the first image's trace: fd:pid:dev:ino */
	char fd_path[4096]; /* and its path */
	long root_pid;      /* the process `heapslope record` started */
	long execed_pid;    /* the process that exec'd this image, or 0 */
} env;

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return def;
	return v;
}

static void env_copy(const char *name, char *out, size_t cap)
{
	const char *s = getenv(name);
	snprintf(out, cap, "%s", s ? s : "");
}

/* Lock held: announces a new thread and switches the stream to it. */
static uint8_t *thread_prefix(struct tstate *t, uint8_t *p)
{
	struct recorder *R = &hs_rec;
	pid_t tid = hs_tid();
	if (t->seen_gen != R->gen) {
		char name[17] = "";
		t->seen_gen = R->gen;
		p = enc_u64(p, HS_REC_THREAD, (uint64_t)tid);
		R->counts[HS_COUNT_THREADS]++;
		if (prctl(PR_GET_NAME, name) == 0 && name[0]) {
			name[16] = 0;
			*p++ = HS_REC_THREAD_NAME;
			p = varint_put(p, (uint64_t)tid);
			p = enc_str(p, name, strlen(name));
		}
	}
	if (R->enc.tid != (uint64_t)tid) {
		p = enc_u64(p, HS_REC_SWITCH, (uint64_t)tid);
		R->enc.tid = (uint64_t)tid;
	}
	return p;
}
#define PREFIX_MAX (2 * (1 + HS_VARINT_MAX) + 1 + 2 * HS_VARINT_MAX + 16)

static size_t event_bound(int depth)
{
	return PREFIX_MAX + (size_t)depth * STACK_REC_MAX + HS_EVENT_MAX;
}

static void count_event(unsigned counter)
{
	hs_rec.counts[counter]++;
	hs_rec.counts[HS_COUNT_EVENTS]++;
	hs_rec.events_since_tick = 1;
}

static void count_unrecorded(void)
{
	__atomic_fetch_add(&hs_rec.counts[HS_COUNT_UNRECORDED], 1,
			   __ATOMIC_RELAXED);
}

/* New code (a dlopen) shows up as new stack nodes: check the loader then,
 * outside the lock, so module records follow the first stack into it. */
static void after_fresh_nodes(int fresh)
{
	if (fresh && modules_generation() != hs_rec.mod_generation)
		rec_modules_changed();
}

/* One heap event, as the hooks see it. */
struct event {
	unsigned kind, fn; /* HS_REC_ALLOC, _FREE, _REALLOC, _FAIL, _MUNMAP */
	uintptr_t old, ptr;
	uint64_t size;
};

/* Lock held: appends e with the stack ips[0..n) (unused by frees).
 * key: the unwinder's walk key for that stack, or 0.  Inlined: at each
 * call the kind is mostly known, and this is every event's path. */
static inline __attribute__((always_inline)) void put_event(const struct event *e, const uintptr_t *ips, int n,
		      uint64_t key, int *fresh)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	uint8_t *p = hs_live->on ? reserve(event_bound(n)) : NULL;
	if (!p)
		return;
	p = thread_prefix(t, p);
	uint32_t id = 0;
	if (e->kind != HS_REC_FREE && e->kind != HS_REC_MUNMAP)
		id = stacks_intern(ips, n, key, &p, fresh);
	switch (e->kind) {
	case HS_REC_ALLOC:
		p = enc_alloc(&R->enc, p, e->fn, e->ptr, e->size, id);
		count_event(e->fn == HS_FN_MMAP ? HS_COUNT_MMAPS
						: HS_COUNT_ALLOCATIONS);
		break;
	case HS_REC_FAIL:
		p = enc_fail(p, e->fn, e->size, id);
		count_event(HS_COUNT_FAILED);
		break;
	case HS_REC_FREE:
		p = enc_free(&R->enc, p, e->fn, e->ptr);
		count_event(HS_COUNT_FREES);
		break;
	case HS_REC_MUNMAP:
		p = enc_munmap(&R->enc, p, e->ptr, e->size);
		count_event(HS_COUNT_MUNMAPS);
		break;
	default:
		p = enc_realloc(&R->enc, p, e->fn, e->old, e->ptr, e->size,
				id);
		count_event(e->fn == HS_FN_MREMAP ? HS_COUNT_MMAPS
						  : HS_COUNT_REALLOCS);
	}
	commit(p);
}

static struct event realloc_event(unsigned fn, const void *old,
				  const void *ptr, size_t size);

/* ---- the lock, and nested calls set aside while it is held ---- */

/* Lock held by this thread: writes its nested events kept aside; with
 * `freed` not 0, only those that freed that block (they came before the
 * realloc that took it again). */
static void side_flush(uintptr_t freed, int *fresh)
{
	struct tstate *t = &hs_thread;
	int keep = 0;
	for (int i = 0; i < t->nside; i++) {
		struct side_event *s = &t->side[i];
		if (freed && !(s->kind == HS_REC_FREE && s->ptr == freed)) {
			t->side[keep++] = *s;
			continue;
		}
		struct event e = { s->kind, s->fn, s->old, s->ptr, s->size };
		put_event(&e, s->ips, s->n, 0, fresh);
	}
	t->nside = keep;
}

void rec_lock(void)
{
	lock_take(&hs_rec.lock, hs_tid());
}

static void unlock_slow(void)
{
	int fresh = 0;
	side_flush(0, &fresh);
	lock_give(&hs_rec.lock);
	after_fresh_nodes(fresh);
}

static inline void unlock(void)
{
	if (__builtin_expect(hs_thread.nside != 0, 0))
		unlock_slow();
	else
		lock_give(&hs_rec.lock);
}

void rec_unlock(void)
{
	unlock();
}

int rec_nested_lock(void)
{
	if (lock_owned(&hs_rec.lock, hs_tid()))
		return 0;
	rec_lock();
	return 1;
}

/* Lock held by this thread, which was interrupted there: e waits. */
static void side_add(const struct event *e, const uintptr_t *ips, int n)
{
	struct tstate *t = &hs_thread;
	if (t->nside == SIDE_EVENTS) {
		count_unrecorded();
		return;
	}
	struct side_event *s = &t->side[t->nside];
	if (n > SIDE_DEPTH)
		n = SIDE_DEPTH;
	s->kind = (uint8_t)e->kind;
	s->fn = (uint8_t)e->fn;
	s->n = (uint16_t)n;
	s->old = e->old;
	s->ptr = e->ptr;
	s->size = e->size;
	memcpy(s->ips, ips, (size_t)n * sizeof(*ips));
	/* published last: a handler interrupting this one sees it whole */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->nside++;
}

/* A nested call's event, with its stack: recorded, or set aside when
 * the thread holds the lock. */
static void nested_put(const struct event *e, const uintptr_t *ips, int n)
{
	if (lock_owned(&hs_rec.lock, hs_tid())) {
		side_add(e, ips, n);
		return;
	}
	int fresh = 0;
	rec_lock();
	put_event(e, ips, n, 0, &fresh);
	rec_unlock();
	after_fresh_nodes(fresh);
}

void rec_nested(unsigned kind, unsigned fn, const void *old, const void *ptr,
		size_t size, const void *ra)
{
	struct event e = { kind, fn, (uintptr_t)old, (uintptr_t)ptr, size };
	uintptr_t ips[HS_DEPTH_MAX];
	int n = 0;
	if (kind != HS_REC_FREE && kind != HS_REC_MUNMAP) {
		n = unwind_capture_plain(ips, hs_rec.depth);
		if (n == 0 && ra) {
			ips[0] = (uintptr_t)ra;
			n = 1;
		}
	}
	nested_put(&e, ips, n);
}

/* ---- events ---- */

static void stack_event(unsigned kind, unsigned fn, const void *ptr,
			uint64_t size)
{
	struct recorder *R = &hs_rec;
	uintptr_t ips[HS_DEPTH_MAX];
	uint64_t key;
	int n = unwind_capture(ips, R->depth, &key);
	struct event e = { kind, fn, 0, (uintptr_t)ptr, size };
	int fresh = 0;
	rec_lock();
	if (kind == HS_REC_ALLOC && fn == HS_FN_MMAP)
		anonmap_add((uintptr_t)ptr, size);
	put_event(&e, ips, n, key, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

void rec_alloc(unsigned fn, const void *p, size_t size)
{
	stack_event(HS_REC_ALLOC, fn, p, size);
}

void rec_fail(unsigned fn, size_t size)
{
	stack_event(HS_REC_FAIL, fn, NULL, size);
}

void rec_free(unsigned fn, const void *ptr)
{
	struct event e = { HS_REC_FREE, fn, 0, (uintptr_t)ptr, 0 };
	int fresh = 0;
	rec_lock();
	put_event(&e, NULL, 0, 0, &fresh);
	unlock();
}

void rec_munmap(const void *ptr, size_t len)
{
	struct event e = { HS_REC_MUNMAP, HS_FN_MUNMAP, 0, (uintptr_t)ptr,
			   len };
	int fresh = 0;
	rec_lock();
	/* only memory the program mapped anonymously: not its files */
	if (anonmap_remove((uintptr_t)ptr, len))
		put_event(&e, NULL, 0, 0, &fresh);
	unlock();
}

void rec_realloc_begin(int *depth, uintptr_t *ips)
{
	*depth = unwind_capture(ips, hs_rec.depth, NULL);
	rec_lock();
}

void rec_mremap_end(const void *old, size_t old_len, const void *ptr,
		    size_t len, int n, const uintptr_t *ips)
{
	/* a remapped file mapping is none of our business */
	if (!anonmap_remove((uintptr_t)old, old_len)) {
		rec_unlock();
		return;
	}
	if (ptr)
		anonmap_add((uintptr_t)ptr, len);
	else
		anonmap_add((uintptr_t)old, old_len); /* failed: still there */
	rec_realloc_end(HS_FN_MREMAP, old, ptr, len, n, ips);
}

/* What a realloc-like call did. */
static struct event realloc_event(unsigned fn, const void *old,
				  const void *ptr, size_t size)
{
	struct event e = { HS_REC_REALLOC, fn, (uintptr_t)old, (uintptr_t)ptr,
			   size };
	if (old && !ptr && size == 0)
		e.kind = HS_REC_FREE, e.ptr = (uintptr_t)old; /* realloc(p, 0) */
	else if (!ptr)
		e.kind = HS_REC_FAIL;
	else if (!old)
		e.kind = HS_REC_ALLOC;
	return e;
}

void rec_nested_realloc_end(int locked, unsigned fn, const void *old,
			    const void *ptr, size_t size, int n,
			    const uintptr_t *ips)
{
	if (locked) {
		rec_realloc_end(fn, old, ptr, size, n, ips);
	} else {
		struct event e = realloc_event(fn, old, ptr, size);
		side_add(&e, ips, n);
	}
}

void rec_realloc_end(unsigned fn, const void *old, const void *ptr,
		     size_t size, int n, const uintptr_t *ips)
{
	struct event e = realloc_event(fn, old, ptr, size);
	int fresh = 0;
	if (__builtin_expect(hs_thread.nside != 0, 0) && ptr)
		side_flush((uintptr_t)ptr, &fresh);
	put_event(&e, ips, n, 0, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

void rec_mark(unsigned kind, const char *label)
{
	struct recorder *R = &hs_rec;
	uint64_t rss, brk;
	struct mallinfo2 mi;
	int has_mi;
	size_t len = label ? strnlen(label, LABEL_MAX) : 0;
	int cancel;
	if (!hs_live->on)
		return; /* no trace: nothing to sample for */
	/* statm's read (and open) are cancellation points: not in a mark */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	int ok = take_sample(&rss, &mi, &has_mi, 1, &brk);
	pthread_setcancelstate(cancel, NULL);
	rec_lock();
	uint8_t *p = hs_live->on ? reserve(PREFIX_MAX + 3 * HS_VARINT_MAX +
					   1 + len)
				 : NULL;
	if (p) {
		p = thread_prefix(&hs_thread, p);
		*p++ = HS_REC_MARK;
		p = enc_time(&R->enc, p, now_ns());
		p = varint_put(p, kind);
		commit(enc_str(p, label ? label : "", len));
		R->counts[HS_COUNT_MARKS]++;
		if (ok)
			sample_append(now_ns(), rss, &mi, has_mi, brk);
	}
	rec_unlock();
}

void rec_thread_name(const char *name)
{
	size_t len = strnlen(name, 64);
	rec_lock();
	uint8_t *p = hs_live->on ? reserve(PREFIX_MAX + 2 * HS_VARINT_MAX + 1 +
					   len)
				 : NULL;
	if (p) {
		p = thread_prefix(&hs_thread, p);
		*p++ = HS_REC_THREAD_NAME;
		p = varint_put(p, (uint64_t)hs_tid());
		commit(enc_str(p, name, len));
	}
	rec_unlock();
}

void rec_modules_changed(void)
{
	struct recorder *R = &hs_rec;
	int self = hs_tid();
	/* a nested call, in code of ours that is doing this already */
	if (lock_owned(&mod_lock, self) || lock_owned(&R->lock, self))
		return;
	lock_take(&mod_lock, self);
	uint64_t gen = modules_generation();
	modlist_collect(&R->scratch);
	lock_take(&R->lock, self);
	R->mod_generation = gen;
	for (uint32_t i = 0; i < R->scratch.count && hs_live->on; i++) {
		const struct module *m = &R->scratch.mods[i];
		if (modlist_contains(&R->known, m, R->scratch.pool))
			continue;
		uint8_t *p = reserve(module_record_bound(m));
		if (p)
			commit(module_encode(p, m, R->scratch.pool));
	}
	for (uint32_t i = 0; i < R->known.count && hs_live->on; i++) {
		const struct module *m = &R->known.mods[i];
		if (modlist_contains(&R->scratch, m, R->known.pool))
			continue;
		uint8_t *p = reserve(1 + HS_VARINT_MAX);
		if (p)
			commit(enc_u64(p, HS_REC_MODULE_GONE, m->base));
	}
	struct modlist tmp = R->known;
	R->known = R->scratch;
	R->scratch = tmp;
	lock_give(&R->lock);
	lock_give(&mod_lock);
}

/* ---- output file ---- */

/* Tells `heapslope record` about a new trace, through its abstract socket:
 * no descriptor of ours is ever inherited by the program, and a reader
 * that has gone (record killed, a child outliving it) costs nothing: the
 * connection is refused, no signal, no wait. */
static void report_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t l = strlen(env.report);
	if (!l || l + 1 > sizeof(a.sun_path))
		return;
	memcpy(a.sun_path + 1, env.report, l);
	char line[4200];
	int n = snprintf(line, sizeof(line), "%s\n", path);
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

/* Expands %p (pid), %e (program name) and %% of the output template. */
static int expand(const char *tmpl, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *s = tmpl; *s; s++) {
		char piece[64];
		const char *add = piece;
		if (*s == '%' && s[1] == 'p') {
			snprintf(piece, sizeof(piece), "%d", (int)getpid());
			s++;
		} else if (*s == '%' && s[1] == 'e') {
			add = program_invocation_short_name;
			s++;
		} else if (*s == '%' && s[1] == '%') {
			piece[0] = '%', piece[1] = 0;
			s++;
		} else {
			piece[0] = *s, piece[1] = 0;
		}
		size_t l = strlen(add);
		if (o + l + 1 > cap)
			return -1;
		memcpy(out + o, add, l);
		o += l;
	}
	out[o] = 0;
	return 0;
}

static int open_output(void)
{
	struct recorder *R = &hs_rec;
	const char *tmpl = env.output;
	char base[4096];
	if (!*tmpl)
		tmpl = "heapslope.%e.%p.hst";
	if (expand(tmpl, base, sizeof(base) - 8)) {
		hs_fail("trace path too long", 0);
		return -1;
	}
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(R->path, sizeof(R->path), "%s", base);
		else
			snprintf(R->path, sizeof(R->path), "%.4000s.%d", base,
				 i);
		R->fd = open(R->path,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				     O_CLOEXEC,
			     0600);
		if (R->fd >= 0 || errno != EEXIST)
			break;
	}
	if (R->fd < 0) {
		hs_fail_path("cannot create", errno);
		return -1;
	}
	return 0;
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
	return fd_is(fd, hs_rec.dev, hs_rec.ino);
}

/* The descriptor HEAPSLOPE_FD names, when it proves itself: this very
 * process, and on that descriptor the very file record opened; else -1. */
static int token_fd(void)
{
	/* fd:pid:dev:ino; no sscanf in the recorder (see take_sample) */
	unsigned long long v[4];
	const char *s = env.fd_token;
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
	struct recorder *R = &hs_rec;
	int fd = token_fd();
	if (fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return open_output();
	R->fd = fd;
	snprintf(R->path, sizeof(R->path), "%s",
		 *env.fd_path ? env.fd_path : "(fd)");
	return 0;
}

/* No trace here after all (--no-follow's descendant, a failure before
 * it started): the descriptor record opened for this process is not the
 * program's to keep. */
static void drop_token(void)
{
	int fd = token_fd();
	if (fd >= 0)
		close(fd);
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

static int write_header(unsigned options)
{
	struct recorder *R = &hs_rec;
	static uint8_t body[60000], out[60000 + HS_PREAMBLE_LEN];
	static char exe[4096];
	struct hs_hdr_buf h = { body, 0, sizeof(body), 0 };
	struct timespec rt;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	clock_gettime(CLOCK_REALTIME, &rt);
	hdr_put_u64(&h, HS_HDR_PID, (uint64_t)getpid());
	hdr_put_u64(&h, HS_HDR_PPID, (uint64_t)getppid());
	hdr_put_str(&h, HS_HDR_EXE, exe);
	hdr_put_u64(&h, HS_HDR_START_REALTIME,
		    (uint64_t)rt.tv_sec * 1000000000ull +
			    (uint64_t)rt.tv_nsec);
	hdr_put_u64(&h, HS_HDR_START_MONOTONIC, R->start_ns);
	hdr_put_u64(&h, HS_HDR_PAGE_SIZE, (uint64_t)getpagesize());
	hdr_put_u64(&h, HS_HDR_DEPTH, (uint64_t)R->depth);
	hdr_put_u64(&h, HS_HDR_OPTIONS, options);
	hdr_put_str(&h, HS_HDR_VERSION, HS_VERSION);
	hdr_put_u64(&h, HS_HDR_INTERVAL, (uint64_t)R->interval_ms);
	hdr_put_str(&h, HS_HDR_UNWIND, unwind_name());
	const char *alloc = getenv("HEAPSLOPE_ALLOCATOR");
	hdr_put_str(&h, HS_HDR_ALLOCATOR, alloc && *alloc ? alloc : "glibc");
	hdr_put_u64(&h, HS_HDR_HEAP_START, heap_start());
	const char *owner = malloc_owner();
	if (owner)
		hdr_put_str(&h, HS_HDR_MALLOC_OWNER, owner);
	for (int i = 0; i < R->argc && R->argv && R->argv[i]; i++) {
		struct hs_hdr_buf keep = h;
		hdr_put_str(&h, HS_HDR_ARG, R->argv[i]);
		if (h.overflow) { /* a huge argv: keep what fits */
			h = keep;
			break;
		}
	}
	size_t len = hdr_finish(&h, out, sizeof(out));
	R->file_off = len;
	if (!len || write_all(R->fd, out, len)) {
		hs_fail_path("write", len ? errno : 0);
		return -1;
	}
	/* `heapslope record` says it next to the trace's name */
	if (owner && !*env.report)
		hs_say("heapslope: %s defines its own malloc: allocations made "
		       "through it cannot be recorded", owner);
	return 0;
}

static void start_clock(void)
{
	hs_rec.mallinfo_next_ns = 0; /* times are from the start */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	hs_rec.start_ns =
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	hs_rec.last_flush_ns = 0;
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

/* Moves the trace out of the program's way (a high descriptor) and
 * remembers which file it is, to notice if the program closes it. */
static int keep_output(void)
{
	struct recorder *R = &hs_rec;
	struct stat st;
	R->fd = fd_high(R->fd, HS_FD_HIGH);
	if (fstat(R->fd, &st)) {
		hs_fail_path("fstat", errno);
		return -1;
	}
	R->dev = st.st_dev;
	R->ino = st.st_ino;
	return 0;
}

static void start_trace_file(unsigned options, int adopt)
{
	struct recorder *R = &hs_rec;
	if (R->record_mmap)
		options |= HS_OPT_MMAP;
	R->started = 1;
	hs_live->owner = 1;
	if ((adopt ? adopt_output() : open_output()) || keep_output() ||
	    write_header(options))
		return;
	/* once it is a trace: `record` may look at it as soon as it knows */
	report_path(R->path);
	statm_open();
	hs_live->on = 1;
	uint8_t *p = R->buf[R->active];
	R->len = (size_t)(enc_timerec(&R->enc, p, 0) - p);
	rec_modules_changed();
	internal_begin();
	writer_start();
	internal_end();
}

/* Starts a new trace in this process: file, header, modules, writer. */
static void start_trace(unsigned options, int adopt)
{
	int cancel;
	/* open, write, connect: cancellation points, in a forked child's
	 * fork() */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	start_trace_file(options, adopt);
	pthread_setcancelstate(cancel, NULL);
}

/* The page of what a child made without fork()'s handlers must not
 * inherit.  Without MADV_WIPEONFORK (Linux < 4.14) such a child is only
 * noticed when it would wait for its absent writer (reserve). */
static void live_map(void)
{
	struct live *l = rmem_map(sizeof(*l));
	if (!l)
		return;
	(void)madvise(l, (size_t)getpagesize(), MADV_WIPEONFORK);
	hs_live = l;
}

/* A process made without fork()'s handlers (_Fork, clone, a raw system
 * call) found on its first call: recording stays off here, and the
 * parent's descriptors are let go.  Programs it executes are recorded. */
/* In a new process: the parent's trace and statm are never ours to
 * write or read; but the program may have put files of its own on those
 * numbers. */
static void drop_parent_files(void)
{
	struct recorder *R = &hs_rec;
	if (is_trace(R->fd))
		close(R->fd);
	R->fd = -1;
	statm_close();
}

void recorder_orphan(void)
{
	if (!__atomic_exchange_n(&hs_rec.started, 0, __ATOMIC_RELAXED))
		return;
	hs_thread.tid = 0; /* the parent's */
	drop_parent_files();
	hs_say("heapslope: process %d was made without fork() (clone or "
	       "_Fork): it is not recorded, programs it executes are",
	       (int)getpid());
}

/* Whether this image is the one `heapslope record` started, rather than a
 * descendant or an image exec'd after it (for --no-follow). */
static int first_image(void)
{
	return env.root_pid == (long)getpid() && env.execed_pid != env.root_pid;
}

void recorder_init(int argc, char **argv)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	busy_enter(t);
	internal_begin();
	R->argc = argc;
	R->argv = argv;
	R->pid = getpid();
	R->gen = 1;
	R->depth = (int)env_long("HEAPSLOPE_DEPTH", 64, 1, HS_DEPTH_MAX);
	R->interval_ms = (int)env_long("HEAPSLOPE_INTERVAL", 100, 0, 3600000);
	R->follow = (int)env_long("HEAPSLOPE_FOLLOW", 1, 0, 1);
	R->record_mmap = (int)env_long("HEAPSLOPE_MMAP", 0, 0, 1);
	const char *alloc = getenv("HEAPSLOPE_ALLOCATOR");
	R->has_mallinfo = !alloc || !*alloc || strcmp(alloc, "glibc") == 0;
	R->mallinfo = (int)env_long("HEAPSLOPE_MALLINFO", MALLINFO_AUTO, 0,
				    MALLINFO_ALWAYS);
	env_copy("HEAPSLOPE_OUTPUT", env.output, sizeof(env.output));
	env_copy("HEAPSLOPE_REPORT", env.report, sizeof(env.report));
	env_copy("HEAPSLOPE_FD", env.fd_token, sizeof(env.fd_token));
	env_copy("HEAPSLOPE_FD_PATH", env.fd_path, sizeof(env.fd_path));
	env.root_pid = env_long("HEAPSLOPE_ROOT", 0, 0, INT_MAX);
	env.execed_pid = env_long("HEAPSLOPE_EXECED", 0, 0, INT_MAX);
	/* a courtesy to the program: where unsetenv is libc's; nothing here
	 * relies on it */
	unsetenv("HEAPSLOPE_FD");
	unsetenv("HEAPSLOPE_FD_PATH");
	start_clock();
	live_map();
	if (!R->follow && !first_image())
		goto out; /* --no-follow: a descendant, not recorded */
	if (unwind_init(getenv("HEAPSLOPE_UNWIND"))) {
		hs_fail("unknown HEAPSLOPE_UNWIND method", 0);
		goto out;
	}
	/* a static context: its whole workspace is resident from the start,
	 * so the first compression does not show up as program growth */
	size_t ws_size = ZSTD_estimateCCtxSize(ZSTD_LEVEL);
	void *ws = rmem_map_resident(ws_size);
	R->cap = BUF_SIZE;
	R->buf[0] = rmem_map_resident(BUF_SIZE);
	R->buf[1] = rmem_map_resident(BUF_SIZE);
	R->cout_cap = chunk_bound(BUF_SIZE + 4096);
	R->cout = rmem_map_resident(R->cout_cap);
	R->work = rmem_map_resident(chunk_work_size(BUF_SIZE));
	R->cctx = ws ? ZSTD_initStaticCCtx(ws, ws_size) : NULL;
	if (!R->buf[0] || !R->buf[1] || !R->cout || !R->work || !R->cctx ||
	    stacks_create() || modlist_init(&R->known) ||
	    modlist_init(&R->scratch)) {
		hs_fail("cannot allocate recorder buffers", ENOMEM);
		goto out;
	}
	ZSTD_CCtx_setParameter(R->cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(R->cctx, ZSTD_c_checksumFlag, 1);
	pthread_atfork(recorder_fork_prepare, recorder_fork_parent,
		       recorder_fork_child);
	unsigned options = 0;
	if (env.execed_pid == (long)getpid())
		options |= HS_OPT_EXECED;
	start_trace(options, 1);
out:
	if (!R->started)
		drop_token();
	internal_end();
	busy_leave(t);
}

static size_t encode_end(uint8_t *buf, unsigned reason, const char *exec_path)
{
	struct recorder *R = &hs_rec;
	uint8_t *p = buf;
	if (exec_path) {
		*p++ = HS_REC_EXEC;
		p = enc_str(p, exec_path, strnlen(exec_path, 4000));
	}
	if (R->failed) {
		*p++ = HS_REC_STOP;
		p = enc_str(p, R->stop_reason, strnlen(R->stop_reason, 500));
	}
	*p++ = HS_REC_END;
	p = varint_put(p, R->failed ? HS_END_ERROR : reason);
	p = varint_put(p, HS_COUNT_MAX);
	for (int i = 0; i < HS_COUNT_MAX; i++)
		p = varint_put(p, __atomic_load_n(&R->counts[i],
						  __ATOMIC_RELAXED));
	return (size_t)(p - buf);
}
#define END_MAX (4096 + 600 + (HS_COUNT_MAX + 8) * HS_VARINT_MAX)

/* The trace's descriptor, or when the program took it, the trace opened
 * again by its path (checked to be the same file); -1 if neither. */
static int trace_fd(int *own)
{
	struct recorder *R = &hs_rec;
	*own = 0;
	if (is_trace(R->fd))
		return R->fd;
	/* O_NONBLOCK: a FIFO put at the path must not hang us (the identity
	 * check then refuses it); regular files ignore it */
	const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
	int fd = open(R->path, flags);
	struct rlimit rl;
	if (fd < 0 && errno == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < rl.rlim_max) {
		/* the program holds every descriptor it may: one past its
		 * limit, for a moment (the limit is the program's again at
		 * once; a descriptor already open stays valid) */
		struct rlimit more = { rl.rlim_cur + 1, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
			fd = open(R->path, flags);
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

/* Lock held, recording stopped on an error: the trace's last chunks hold
 * what was buffered (unless the trace cannot be written) and say why
 * recording stopped, after the last whole chunk.  When the program took
 * the descriptor, this waits for the image's end (finish): opening the
 * trace again takes the program's lowest free descriptor for a moment,
 * which a program that just closed its descriptors may be about to
 * open.  If nothing can be written, the trace just ends. */
void write_stop(void)
{
	struct recorder *R = &hs_rec;
	static uint8_t end[END_MAX]; /* lock held; small stacks */
	int own;
	if (R->ended || !R->started || !R->file_off ||
	    (R->fail_kind == FAIL_FD && !R->finishing))
		return;
	R->ended = 1;
	int fd = trace_fd(&own), saved = R->fd;
	if (fd < 0 || lseek(fd, (off_t)R->file_off, SEEK_SET) < 0)
		goto out;
	R->fd = fd;
	if (R->fail_kind != FAIL_IO) {
		if (R->pending &&
		    write_chunk(R->buf[!R->active], R->pending_len) == 0)
			R->pending = 0;
		if (!R->pending && R->len &&
		    write_chunk(R->buf[R->active], R->len) == 0)
			R->len = 0;
	}
	size_t n = encode_end(end, HS_END_ERROR, NULL);
	size_t c = chunk_encode(R->cctx, end, n, R->cout, R->cout_cap,
				R->work);
	if (c && write_all(fd, R->cout, c) == 0)
		R->file_off += c;
	else
		(void)!ftruncate(fd, (off_t)R->file_off);
out:
	if (own) {
		close(fd);
		saved = -1;
	}
	R->fd = saved;
}

static void finish(unsigned reason, const char *exec_path)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	/* static: this may run on a handler's small alternate stack */
	static uint8_t end[END_MAX];
	/* a vfork child shares our memory: it must not touch the trace */
	if (!R->started || getpid() != R->pid)
		return;
	if (R->ended) {
		/* the writer wrote the stop chunk, or still is: the image must
		 * not end under it */
		if (R->failed)
			writer_stop();
		return;
	}
	busy_enter(t);
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (lock_owned(&R->lock, hs_tid())) {
		/* the program exits (or execs) from a handler of its that ran
		 * in code of ours holding the lock: that code never goes on,
		 * and what it half wrote cannot be told.  Recording stops;
		 * with nothing appended any more, the lock can be let go and
		 * what was recorded written out */
		hs_fail("the program ended from a signal handler that "
			"interrupted the recorder", 0);
		lock_give(&R->lock);
	}
	/* at exec the writer may go on (exec can fail); after a failure it
	 * is done, and the stop chunk below must not race its compression */
	if (reason != HS_END_EXEC || R->failed)
		writer_stop();
	rec_lock();
	/* first let the writer finish, since other threads may append while
	 * we wait: the end record's counts must include them */
	if (hs_live->on && wait_idle() == 0 && hs_live->on) {
		size_t n = encode_end(end, reason, exec_path);
		if (flush_sync(end, n) == 0)
			R->ended = 1;
		/* nothing after the end record: at exec the other threads
		 * still run until the kernel replaces the image */
		hs_live->on = 0;
	}
	if (R->failed) {
		if (R->writer_running) { /* it may hold a buffer in hand */
			rec_unlock();
			writer_stop();
			rec_lock();
		}
		R->finishing = 1;
		write_stop();
	}
	rec_unlock();
	pthread_setcancelstate(cancel, NULL);
	busy_leave(t);
}

void recorder_finish(unsigned reason)
{
	finish(reason, NULL);
}

void recorder_before_exec(const char *path)
{
	finish(HS_END_EXEC, path ? path : "");
}

void recorder_exec_failed(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	if (R->failed || hs_live->on || !R->started || getpid() != R->pid ||
	    R->fd < 0 || lock_owned(&R->lock, hs_tid()))
		return;
	busy_enter(t);
	if (R->writer_running) { /* it ended when recording stopped */
		pthread_join(R->writer, NULL);
		R->writer_running = 0;
	}
	rec_lock();
	R->ended = 0;
	hs_live->on = 1;
	R->stop = 0;
	rec_unlock();
	internal_begin();
	writer_start();
	internal_end();
	busy_leave(t);
}

void recorder_abandoned(struct tstate *t)
{
	struct recorder *R = &hs_rec;
	int self = hs_tid();
	count_unrecorded();
	unwind_forget();
	t->nside = 0;
	hs_guard.internal = 0;
	hs_guard.real = 0;
	if (lock_owned(&mod_lock, self))
		lock_give(&mod_lock);
	if (lock_owned(&hs_live->table_lock, self))
		lock_give(&hs_live->table_lock);
	if (lock_owned(&R->lock, self)) {
		/* what the section had half written cannot be told apart */
		hs_fail("a signal handler left the recorder with longjmp", 0);
		lock_give(&R->lock);
	}
	statm_abandoned(self);
}

void recorder_fork_prepare(void)
{
	struct tstate *t = &hs_thread;
	int self = hs_tid();
	busy_enter(t);
	hs_rec.on_at_fork = hs_live->on;
	/* fork() from a handler that interrupted the recorder: a lock is
	 * this thread's, the child just will not record */
	t->fork_nested = lock_owned(&hs_rec.lock, self) ||
			 lock_owned(&mod_lock, self) || statm_owned(self) ||
			 lock_owned(&hs_live->table_lock, self);
	if (t->fork_nested)
		return;
	statm_fork_prepare();
	lock_take(&hs_live->table_lock, self);
	lock_take(&mod_lock, self);
	lock_take(&hs_rec.lock, self);
}

void recorder_fork_parent(void)
{
	struct tstate *t = &hs_thread;
	if (!t->fork_nested) {
		lock_give(&hs_rec.lock);
		lock_give(&mod_lock);
		lock_give(&hs_live->table_lock);
		statm_fork_parent();
	}
	busy_leave(t);
}

void recorder_fork_child(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	R->lock.v = 0; /* other threads are gone: nobody holds them */
	mod_lock.v = 0;
	hs_live->table_lock.v = 0; /* wiped already, unless madvise failed */
	t->tid = 0;
	R->pid = getpid();
	R->writer_running = 0;
	R->stop = 0;
	R->pending = 0;
	R->len = 0;
	R->ended = 0;
	t->nside = 0;
	signals_forget(t);
	enc_reset(&R->enc);
	int was_on = R->on_at_fork && !t->fork_nested;
	hs_live->on = 0; /* wiped already, unless madvise failed */
	drop_parent_files();
	R->started = 0;
	if (!was_on || !R->follow)
		goto out;
	R->gen++;
	memset(R->counts, 0, sizeof(R->counts));
	modlist_clear(&R->known);
	R->mod_generation = 0;
	R->events_since_tick = 0;
	if (stacks_reset()) {
		hs_fail("cannot allocate the stack table", ENOMEM);
		goto out;
	}
	start_clock();
	start_trace(HS_OPT_FORKED, 0);
out:
	busy_leave(t);
}
