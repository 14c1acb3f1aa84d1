/* Recorder state, start-up, events and fork/exec/exit handling.  Every
 * event is appended under one short lock, which is what keeps the order of
 * a free and a later reuse of the same address across threads. */
#include "recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "anonmap.h"
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
static hs_lock mod_lock;

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

static pid_t thread_id(struct tstate *t)
{
	if (!t->tid)
		t->tid = (pid_t)syscall(SYS_gettid);
	return t->tid;
}

/* Lock held: announces a new thread and switches the stream to it. */
static uint8_t *thread_prefix(struct tstate *t, uint8_t *p)
{
	struct recorder *R = &hs_rec;
	pid_t tid = thread_id(t);
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

/* Lock held: the id of the stack ips[0..n), innermost first, writing the
 * nodes not seen before.  The thread's previous stack usually shares its
 * outer part, which is reused without a lookup. */
static uint32_t intern_path(struct tstate *t, const uintptr_t *ips, int n,
			    uint8_t **pp, int *fresh)
{
	struct recorder *R = &hs_rec;
	int m = t->gen == R->gen ? t->n : 0;
	int c = 0;
	while (c < n && c < m && ips[n - 1 - c] == t->ips[m - 1 - c])
		c++;
	if (c == n && n == m)
		return n ? t->ids[0] : 0;
	uint32_t ids[HS_DEPTH_MAX];
	for (int k = 0; k < c; k++)
		ids[n - 1 - k] = t->ids[m - 1 - k];
	for (int i = n - 1 - c; i >= 0; i--) {
		uint32_t parent = i == n - 1 ? 0 : ids[i + 1];
		int is_new;
		uint32_t id = stackmap_intern(R->stacks, parent, ips[i],
					      &is_new);
		if (!id) {
			hs_fail("out of memory for the stack table", ENOMEM);
			t->n = 0;
			return 0;
		}
		if (is_new) {
			*pp = enc_stack(*pp, id, parent, ips[i]);
			R->counts[HS_COUNT_STACKS]++;
			*fresh = 1;
		}
		ids[i] = id;
	}
	memcpy(t->ips, ips, (size_t)n * sizeof(*ips));
	memcpy(t->ids, ids, (size_t)n * sizeof(*ids));
	t->n = n;
	t->gen = R->gen;
	return n ? ids[0] : 0;
}

/* Four lanes, each a multiply-xorshift chain over every fourth address,
 * so that their multiplications overlap instead of waiting on each other
 * (the hash of every allocation's stack is on the hot path). */
#define HASH_M 0xff51afd7ed558ccdull
static inline uint64_t lane(uint64_t h, uint64_t ip)
{
	h = (h ^ ip) * HASH_M;
	return h ^ (h >> 29);
}

static inline uint64_t stack_hash(const uintptr_t *ips, int n)
{
	uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	uint64_t b = 0xc2b2ae3d27d4eb4full, c = 0x165667b19e3779f9ull;
	uint64_t d = 0x85ebca77c2b2ae63ull;
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		a = lane(a, ips[i]);
		b = lane(b, ips[i + 1]);
		c = lane(c, ips[i + 2]);
		d = lane(d, ips[i + 3]);
	}
	for (; i < n; i++)
		a = lane(a, ips[i]);
	uint64_t h = a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^
		     (d << 47 | d >> 17);
	return lane(h, 0);
}

/* Lock held.  A program allocates from few distinct stacks, over and over:
 * the thread remembers the ids of its recent whole stacks by a 64-bit hash
 * of their return addresses (and depth), which saves walking the tree. */
static pthread_key_t leaves_key;
static int have_leaves_key;

/* Runs as the thread ends; later destructors may still allocate, and
 * must find no cache rather than an unmapped one. */
static void leaves_gone(void *p)
{
	hs_thread.leaves = NULL;
	hs_thread.leaves_done = 1;
	rmem_unmap(p, HS_LEAVES * sizeof(struct leaf));
}

static struct leaf *thread_leaves(struct tstate *t)
{
	if (!t->leaves && have_leaves_key && !t->leaves_done) {
		/* mapped, not in TLS: threads with tiny stacks stay possible;
		 * the key's destructor unmaps it when the thread ends */
		t->leaves = rmem_map(HS_LEAVES * sizeof(struct leaf));
		if (t->leaves && pthread_setspecific(leaves_key, t->leaves)) {
			rmem_unmap(t->leaves, HS_LEAVES * sizeof(struct leaf));
			t->leaves = NULL;
		}
		t->leaves_gen = hs_rec.gen;
	}
	if (t->leaves && t->leaves_gen != hs_rec.gen) {
		memset(t->leaves, 0, HS_LEAVES * sizeof(struct leaf));
		t->leaves_gen = hs_rec.gen;
	}
	return t->leaves;
}

static uint32_t intern(struct tstate *t, const uintptr_t *ips, int n,
		       uint8_t **pp, int *fresh)
{
	struct leaf *leaves = thread_leaves(t);
	if (!leaves)
		return intern_path(t, ips, n, pp, fresh);
	uint64_t h = stack_hash(ips, n);
	struct leaf *l = &leaves[h & (HS_LEAVES - 1)];
	if (l->hash == h && l->n == (uint32_t)n && l->id)
		return l->id;
	uint32_t id = intern_path(t, ips, n, pp, fresh);
	*l = (struct leaf){ h, id, (uint32_t)n };
	return id;
}

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

/* New code (a dlopen) shows up as new stack nodes: check the loader then,
 * outside the lock, so module records follow the first stack into it. */
static void after_fresh_nodes(int fresh)
{
	if (fresh && modules_generation() != hs_rec.mod_generation)
		rec_modules_changed();
}

static void stack_event(unsigned tag, unsigned fn, const void *ptr,
			uint64_t size)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	uintptr_t ips[HS_DEPTH_MAX];
	int n = unwind_capture(ips, R->depth);
	uint64_t *memo = unwind_memo();
	int fresh = 0;
	lock_take(&R->lock);
	uint8_t *p = R->on ? reserve(event_bound(n)) : NULL;
	if (p) {
		p = thread_prefix(t, p);
		/* the unwinder keeps this place's stack id for us: no hash */
		uint32_t id;
		if (memo && *memo >> 32 == R->gen) {
			id = (uint32_t)*memo;
		} else {
			id = intern(t, ips, n, &p, &fresh);
			if (memo && id)
				*memo = (uint64_t)R->gen << 32 | id;
		}
		if (tag == HS_REC_ALLOC) {
			if (fn == HS_FN_MMAP)
				anonmap_add((uintptr_t)ptr, size);
			p = enc_alloc(&R->enc, p, fn, (uintptr_t)ptr, size, id);
			count_event(fn == HS_FN_MMAP ? HS_COUNT_MMAPS
						     : HS_COUNT_ALLOCATIONS);
		} else {
			p = enc_fail(p, fn, size, id);
			count_event(HS_COUNT_FAILED);
		}
		commit(p);
	}
	lock_give(&R->lock);
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
	struct recorder *R = &hs_rec;
	lock_take(&R->lock);
	uint8_t *p = R->on ? reserve(PREFIX_MAX + HS_EVENT_MAX) : NULL;
	if (p) {
		p = thread_prefix(&hs_thread, p);
		commit(enc_free(&R->enc, p, fn, (uintptr_t)ptr));
		count_event(HS_COUNT_FREES);
	}
	lock_give(&R->lock);
}

void rec_munmap(const void *ptr, size_t len)
{
	struct recorder *R = &hs_rec;
	lock_take(&R->lock);
	/* only memory the program mapped anonymously: not its files */
	uint8_t *p = R->on && anonmap_remove((uintptr_t)ptr, len)
			     ? reserve(PREFIX_MAX + HS_EVENT_MAX)
			     : NULL;
	if (p) {
		p = thread_prefix(&hs_thread, p);
		commit(enc_munmap(&R->enc, p, (uintptr_t)ptr, len));
		count_event(HS_COUNT_MUNMAPS);
	}
	lock_give(&R->lock);
}

void rec_realloc_begin(int *depth, uintptr_t *ips)
{
	*depth = unwind_capture(ips, hs_rec.depth);
	lock_take(&hs_rec.lock);
}

void rec_mremap_end(const void *old, size_t old_len, const void *ptr,
		    size_t len, int n, const uintptr_t *ips)
{
	/* a remapped file mapping is none of our business */
	if (!anonmap_remove((uintptr_t)old, old_len)) {
		lock_give(&hs_rec.lock);
		return;
	}
	if (ptr)
		anonmap_add((uintptr_t)ptr, len);
	else
		anonmap_add((uintptr_t)old, old_len); /* failed: still there */
	rec_realloc_end(HS_FN_MREMAP, old, ptr, len, n, ips);
}

void rec_realloc_end(unsigned fn, const void *old, const void *ptr,
		     size_t size, int n, const uintptr_t *ips)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	int fresh = 0;
	uint8_t *p = R->on ? reserve(event_bound(n)) : NULL;
	if (p) {
		p = thread_prefix(t, p);
		if (old && !ptr && size == 0) {
			/* realloc(p, 0) that freed p */
			p = enc_free(&R->enc, p, fn, (uintptr_t)old);
			count_event(HS_COUNT_FREES);
		} else {
			uint32_t id = intern(t, ips, n, &p, &fresh);
			if (!ptr) {
				p = enc_fail(p, fn, size, id);
				count_event(HS_COUNT_FAILED);
			} else if (!old) {
				p = enc_alloc(&R->enc, p, fn, (uintptr_t)ptr,
					      size, id);
				count_event(HS_COUNT_ALLOCATIONS);
			} else {
				p = enc_realloc(&R->enc, p, fn, (uintptr_t)old,
						(uintptr_t)ptr, size, id);
				count_event(fn == HS_FN_MREMAP
						    ? HS_COUNT_MMAPS
						    : HS_COUNT_REALLOCS);
			}
		}
		commit(p);
	}
	lock_give(&R->lock);
	after_fresh_nodes(fresh);
}

void rec_mark(unsigned kind, const char *label)
{
	struct recorder *R = &hs_rec;
	uint64_t rss, brk;
	struct mallinfo2 mi;
	int has_mi;
	size_t len = label ? strnlen(label, LABEL_MAX) : 0;
	if (!R->on)
		return; /* no trace: nothing to sample for */
	int ok = take_sample(&rss, &mi, &has_mi, 1, &brk);
	lock_take(&R->lock);
	uint8_t *p = R->on ? reserve(PREFIX_MAX + 3 * HS_VARINT_MAX + 1 +
				     len)
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
	lock_give(&R->lock);
}

void rec_thread_name(const char *name)
{
	struct recorder *R = &hs_rec;
	size_t len = strnlen(name, 64);
	lock_take(&R->lock);
	uint8_t *p = R->on ? reserve(PREFIX_MAX + 2 * HS_VARINT_MAX + 1 + len)
			   : NULL;
	if (p) {
		p = thread_prefix(&hs_thread, p);
		*p++ = HS_REC_THREAD_NAME;
		p = varint_put(p, (uint64_t)thread_id(&hs_thread));
		commit(enc_str(p, name, len));
	}
	lock_give(&R->lock);
}

void rec_modules_changed(void)
{
	struct recorder *R = &hs_rec;
	lock_take(&mod_lock);
	uint64_t gen = modules_generation();
	modlist_collect(&R->scratch);
	lock_take(&R->lock);
	R->mod_generation = gen;
	for (uint32_t i = 0; i < R->scratch.count && R->on; i++) {
		const struct module *m = &R->scratch.mods[i];
		if (modlist_contains(&R->known, m, R->scratch.pool))
			continue;
		uint8_t *p = reserve(module_record_bound(m));
		if (p)
			commit(module_encode(p, m, R->scratch.pool));
	}
	for (uint32_t i = 0; i < R->known.count && R->on; i++) {
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

static void report_path(const char *path)
{
	long fd = env_long("HEAPSLOPE_REPORT_FD", -1, 0, INT_MAX);
	struct stat st;
	/* only into the pipe of `heapslope record`, never into a file the
	 * program opened under that number */
	if (fd < 0 || fstat((int)fd, &st) || !S_ISFIFO(st.st_mode))
		return;
	char line[4200];
	int n = snprintf(line, sizeof(line), "%s\n", path);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write((int)fd, line, (size_t)n);
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
	const char *tmpl = getenv("HEAPSLOPE_OUTPUT");
	char base[4096];
	if (!tmpl || !*tmpl)
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
	report_path(R->path);
	return 0;
}

/* The first image of `heapslope record` gets its trace already opened. */
static int adopt_output(void)
{
	struct recorder *R = &hs_rec;
	long fd = env_long("HEAPSLOPE_FD", -1, 0, INT_MAX);
	const char *path = getenv("HEAPSLOPE_FD_PATH");
	unsetenv("HEAPSLOPE_FD");
	unsetenv("HEAPSLOPE_FD_PATH");
	if (fd < 0 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
		return open_output();
	R->fd = (int)fd;
	snprintf(R->path, sizeof(R->path), "%s", path ? path : "(fd)");
	report_path(R->path);
	return 0;
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

/* Moves the trace out of the program's way (a high descriptor) and
 * remembers which file it is, to notice if the program closes it. */
static int keep_output(void)
{
	struct recorder *R = &hs_rec;
	struct stat st;
	int high = fcntl(R->fd, F_DUPFD_CLOEXEC, 700);
	if (high >= 0) {
		close(R->fd);
		R->fd = high;
	}
	if (fstat(R->fd, &st)) {
		hs_fail_path("fstat", errno);
		return -1;
	}
	R->dev = st.st_dev;
	R->ino = st.st_ino;
	return 0;
}

/* Starts a new trace in this process: file, header, modules, writer. */
static void start_trace(unsigned options, int adopt)
{
	struct recorder *R = &hs_rec;
	if (R->record_mmap)
		options |= HS_OPT_MMAP;
	if ((adopt ? adopt_output() : open_output()) || keep_output() ||
	    write_header(options))
		return;
	statm_open();
	R->on = 1;
	uint8_t *p = R->buf[R->active];
	R->len = (size_t)(enc_timerec(&R->enc, p, 0) - p);
	rec_modules_changed();
	writer_start();
}

/* With --no-follow, programs this one execs must not load the recorder. */
static void drop_from_preload(void)
{
	Dl_info info;
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !dladdr((void *)recorder_init, &info) || !info.dli_fname)
		return;
	char out[8192];
	size_t o = 0;
	const char *s = pre;
	while (*s) {
		size_t l = strcspn(s, ": ");
		if (l && !(strlen(info.dli_fname) == l &&
			   memcmp(s, info.dli_fname, l) == 0) &&
		    o + l + 2 < sizeof(out)) {
			if (o)
				out[o++] = ' ';
			memcpy(out + o, s, l);
			o += l;
		}
		s += l;
		if (*s)
			s++;
	}
	out[o] = 0;
	if (o)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
}

void recorder_init(int argc, char **argv)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	t->busy = 1;
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
	start_clock();
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
	R->stacks = stackmap_create();
	if (!R->buf[0] || !R->buf[1] || !R->cout || !R->work || !R->cctx || !R->stacks ||
	    modlist_init(&R->known) || modlist_init(&R->scratch)) {
		hs_fail("cannot allocate recorder buffers", ENOMEM);
		goto out;
	}
	ZSTD_CCtx_setParameter(R->cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(R->cctx, ZSTD_c_checksumFlag, 1);
	pthread_atfork(recorder_fork_prepare, recorder_fork_parent,
		       recorder_fork_child);
	have_leaves_key = pthread_key_create(&leaves_key, leaves_gone) == 0;
	if (!R->follow)
		drop_from_preload();
	unsigned options = 0;
	if (getenv("HEAPSLOPE_EXECED")) {
		options |= HS_OPT_EXECED;
		unsetenv("HEAPSLOPE_EXECED");
	}
	start_trace(options, 1);
out:
	t->busy = 0;
}

static void encode_end(uint8_t *buf, size_t *len, unsigned reason,
		       const char *exec_path)
{
	uint8_t *p = buf;
	if (exec_path) {
		*p++ = HS_REC_EXEC;
		p = enc_str(p, exec_path, strnlen(exec_path, 4000));
	}
	*p++ = HS_REC_END;
	p = varint_put(p, reason);
	p = varint_put(p, HS_COUNT_MAX);
	for (int i = 0; i < HS_COUNT_MAX; i++)
		p = varint_put(p, hs_rec.counts[i]);
	*len = (size_t)(p - buf);
}

static void finish(unsigned reason, const char *exec_path)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	int was = t->busy;
	/* a vfork child shares our memory: it must not touch the trace */
	if (!R->on || getpid() != R->pid)
		return;
	t->busy = 1;
	if (reason != HS_END_EXEC)
		writer_stop();
	uint8_t end[4096 + (HS_COUNT_MAX + 4) * HS_VARINT_MAX];
	size_t n;
	lock_take(&R->lock);
	/* first let the writer finish, since other threads may append while
	 * we wait: the end record's counts must include them */
	if (R->on && wait_idle() == 0 && R->on) {
		encode_end(end, &n, reason, exec_path);
		flush_sync(end, n);
		/* nothing after the end record: at exec the other threads
		 * still run until the kernel replaces the image */
		R->on = 0;
	}
	lock_give(&R->lock);
	t->busy = was;
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
	if (R->failed || R->on || getpid() != R->pid || R->fd < 0)
		return;
	int was = t->busy;
	t->busy = 1;
	if (R->writer_running) { /* it ended when recording stopped */
		pthread_join(R->writer, NULL);
		R->writer_running = 0;
	}
	lock_take(&R->lock);
	R->on = 1;
	R->stop = 0;
	lock_give(&R->lock);
	writer_start();
	t->busy = was;
}

void recorder_fork_prepare(void)
{
	hs_thread.busy++;
	statm_fork_prepare();
	lock_take(&mod_lock);
	lock_take(&hs_rec.lock);
}

void recorder_fork_parent(void)
{
	lock_give(&hs_rec.lock);
	lock_give(&mod_lock);
	statm_fork_parent();
	hs_thread.busy--;
}

void recorder_fork_child(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	R->lock.v = 0; /* other threads are gone: nobody holds them */
	mod_lock.v = 0;
	t->tid = 0;
	R->pid = getpid();
	R->writer_running = 0;
	R->stop = 0;
	R->pending = 0;
	R->len = 0;
	enc_reset(&R->enc);
	int was_on = R->on;
	R->on = 0;
	if (R->fd >= 0)
		close(R->fd); /* the parent's trace: never ours to write */
	R->fd = -1;
	statm_close(); /* the parent's statm */
	if (!was_on || !R->follow)
		goto out;
	R->gen++;
	memset(R->counts, 0, sizeof(R->counts));
	modlist_clear(&R->known);
	R->mod_generation = 0;
	R->events_since_tick = 0;
	if (stackmap_reset(R->stacks)) {
		hs_fail("cannot allocate the stack table", ENOMEM);
		goto out;
	}
	start_clock();
	start_trace(HS_OPT_FORKED, 0);
out:
	t->busy--;
}
