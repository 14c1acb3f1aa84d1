/* Heap events, the program's mappings, marks, thread names, module
 * records and the start of exit, appended under
 * the recorder lock; calls nested in recorder code, set aside while
 * their thread holds it. */
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "cxx.h"
#include "internal.h"
#include "maps.h"
#include "python.h"
#include "records.h"
#include "regions.h"
#include "stacks.h"
#include "unwind.h"
#include "unwind_rules.h"

#define STACK_REC_MAX (1 + 3 * HS_VARINT_MAX)

/* A heap event of a nested call (see rec_nested), kept aside while its
 * thread holds the lock: written when the thread gives the lock back. */
#define SIDE_EVENTS 4
#define SIDE_DEPTH 32
struct side_event {
	uint8_t kind, fn; /* HS_REC_ALLOC... */
	uint16_t n;
	uint64_t old, ptr, size;
	uintptr_t ips[SIDE_DEPTH];
};

static __thread struct {
	int n;
	struct side_event ev[SIDE_EVENTS];
} side HS_TLS;

/* The modules the trace has records of, and the generation of the
 * loader's list they were collected at (mod_lock). */
static struct modlist known, scratch;
static uint64_t mod_generation;

/* Lock held: announces a new thread and switches the stream to it. */
static __attribute__((noinline)) uint8_t *
thread_switch(struct tstate *t, pid_t tid, uint8_t *p)
{
	struct recorder *R = &hs_rec;
	if (t->seen_gen != R->gen) {
		char name[17] = "";
		t->seen_gen = R->gen;
		p = enc_u64(p, HS_REC_THREAD, (uint64_t)tid);
		R->counts[HS_COUNT_THREADS]++;
		if (prctl(PR_GET_NAME, name) == 0 && name[0]) {
			name[16] = 0;
			p = enc_thread_name(p, (uint64_t)tid, name,
					    strlen(name));
		}
	}
	if (R->enc.tid != (uint64_t)tid) {
		p = enc_u64(p, HS_REC_SWITCH, (uint64_t)tid);
		R->enc.tid = (uint64_t)tid;
	}
	return p;
}

/* Every record of a thread's goes after this: inline, since the stream
 * is mostly the same thread's already. */
static inline uint8_t *thread_prefix(struct tstate *t, uint8_t *p)
{
	pid_t tid = hs_tid();
	if (__builtin_expect(t->seen_gen != hs_rec.gen ||
				     hs_rec.enc.tid != (uint64_t)tid,
			     0))
		return thread_switch(t, tid, p);
	return p;
}
#define PREFIX_MAX (2 * (1 + HS_VARINT_MAX) + RECORDS_THREAD_NAME_MAX(16))

/* Lock held: room for a record of the calling thread's, of at most n
 * bytes, after its prefix; NULL when recording stopped. */
static inline uint8_t *reserve_thread(size_t n)
{
	uint8_t *p = hs_live->on ? buffer_reserve(PREFIX_MAX + n) : NULL;
	return p ? thread_prefix(&hs_thread, p) : NULL;
}

/* an event and the stack nodes it may add */
static size_t event_bound(int depth)
{
	return (size_t)depth * STACK_REC_MAX + HS_EVENT_MAX;
}

static void count_event(unsigned counter)
{
	hs_rec.counts[counter]++;
	hs_rec.counts[HS_COUNT_EVENTS]++;
	hs_rec.events_since_tick = 1;
}

void rec_unrecorded(void)
{
	__atomic_fetch_add(&hs_rec.counts[HS_COUNT_UNRECORDED], 1,
			   __ATOMIC_RELAXED);
}

/* New code (a dlopen) shows up as new stack nodes: check the loader then,
 * outside the lock, so module records follow the first stack into it.
 * The walk of the thread's last capture may have read the loader's
 * generation already (rules_generation): read after that capture began,
 * it counts every module its stack is in. */
static void after_fresh_nodes(int fresh)
{
	if (!fresh)
		return;
	uint64_t g = rules_generation;
	if ((g ? g : modules_generation()) != mod_generation)
		events_modules_changed();
}

/* One heap event, as the hooks see it. */
struct event {
	unsigned kind, fn; /* HS_REC_ALLOC, _FREE, _REALLOC, _FAIL */
	uintptr_t old, ptr;
	uint64_t size;
};

/* The Python frames of an event's thread (python.h), from their capture
 * to the stack's id: only on the paths of a process that runs Python,
 * whose threads have room for them. */
struct py_stack {
	int n, common;
	uint32_t code0; /* stacks_py_capture's */
	int new_codes;  /* codes not in the trace yet (py_bound) */
	const struct py_trail *t; /* the frames: t->raw[0..n) */
	uint32_t codes[PY_DEPTH];
};

/* The calling thread's Python frames into py (stacks_py_capture). */
static inline void py_capture(struct py_stack *py)
{
	py->n = stacks_py_capture(&py->t, &py->common, &py->code0);
}

/* Lock held: the bytes the records of py's frames may take: in a
 * process that runs Python, every stack may need an HS_EXT_PY_AT, with
 * frames or without (py NULL or py->n 0; py->n is set to 0 when the
 * thread cannot have them). */
static inline __attribute__((always_inline)) size_t
py_bound(struct py_stack *py)
{
	/* capture off since the frames were read (a failed probe on another
	 * thread): none are written, and none are reserved */
	if (__builtin_expect(!python_on(), 1)) {
		if (py)
			py->n = 0;
		return 0;
	}
	if (!py || !py->n)
		return HS_PY_AT_MAX;
	int m = py->n - py->common;
	py->new_codes = 0;
	if (!m) /* the frames of the thread's last Python stack */
		return HS_PY_AT_MAX;
	if (m == 1 && py->code0) { /* its innermost frame moved on */
		py->codes[0] = py->code0;
		return HS_PY_FRAME_MAX + HS_PY_AT_MAX;
	}
	size_t need = python_codes_need(py->t->raw, m, py->codes);
	py->new_codes = need != 0;
	return need + (size_t)m * HS_PY_FRAME_MAX + HS_PY_AT_MAX;
}

/* Lock held: the id of the native stack ips[0..n) (trimmed: as
 * stacks_intern's), the one its walk's key had if any. */
static inline __attribute__((always_inline)) uint32_t
native_id(const uintptr_t *ips, int n, const struct unwind_walk *w,
	  int trimmed, uint8_t **pp, int *fresh)
{
	uint32_t id = w ? stacks_known(w->key, trimmed) : 0;
	return id ? id : stacks_intern(ips, n, w, trimmed, pp, fresh);
}

/* Lock held, room reserved (py_bound): the id of the stack ips[0..n),
 * trimmed when py has Python frames; in a process that runs Python, the
 * HS_EXT_PY_AT that puts it under them (or under none). */
static inline __attribute__((always_inline)) uint32_t
stack_id(const uintptr_t *ips, int n, const struct unwind_walk *w,
	 struct py_stack *py, uint8_t **pp, int *fresh)
{
	if (!py || !py->n || !n) {
		uint32_t id = native_id(ips, n, w, 0, pp, fresh);
		if (__builtin_expect(python_on(), 0) && id)
			*pp = stacks_py_at(0, *pp);
		return id;
	}
	int m = py->n - py->common;
	if (py->new_codes)
		*pp = python_codes_put(py->t->raw, m, py->codes, *pp);
	uint32_t python = stacks_py_intern(py->t, py->codes, py->common, pp);
	uint32_t id = native_id(ips, n, w, python != 0, pp, fresh);
	if (id)
		*pp = stacks_py_at(python, *pp);
	return id;
}

/* Lock held: appends e with the stack ips[0..n) and the Python frames py
 * (NULL: none; both unused by frees).  w: what the unwinder said of
 * that stack, or NULL.  Inlined: at each call the kind is mostly known, and
 * this is every event's path. */
static inline __attribute__((always_inline)) void
put_event(const struct event *e, const uintptr_t *ips, int n,
	  const struct unwind_walk *w, struct py_stack *py, int *fresh)
{
	struct recorder *R = &hs_rec;
	if (e->kind == HS_REC_FREE)
		py = NULL;
	uint8_t *p = reserve_thread(event_bound(n) + py_bound(py));
	if (!p)
		return;
	uint32_t id = 0;
	if (e->kind != HS_REC_FREE)
		id = stack_id(ips, n, w, py, &p, fresh);
	switch (e->kind) {
	case HS_REC_ALLOC:
		p = enc_alloc(&R->enc, p, e->fn, e->ptr, e->size, id);
		count_event(HS_COUNT_ALLOCATIONS);
		break;
	case HS_REC_FAIL:
		p = enc_fail(p, e->fn, e->size, id);
		count_event(HS_COUNT_FAILED);
		break;
	case HS_REC_FREE:
		p = enc_free(&R->enc, p, e->fn, e->ptr);
		count_event(HS_COUNT_FREES);
		break;
	default:
		p = enc_realloc(&R->enc, p, e->fn, e->old, e->ptr, e->size,
				id);
		count_event(HS_COUNT_REALLOCS);
	}
	buffer_commit(p);
}

/* ---- the lock, and nested calls set aside while it is held ---- */

/* Lock held by this thread: writes its nested events kept aside; with
 * `freed` not 0, only those that freed that block (they came before the
 * realloc that took it again). */
static void side_flush(uintptr_t freed, int *fresh)
{
	int keep = 0;
	for (int i = 0; i < side.n; i++) {
		struct side_event *s = &side.ev[i];
		if (freed && !(s->kind == HS_REC_FREE && s->ptr == freed)) {
			side.ev[keep++] = *s;
			continue;
		}
		struct event e = { s->kind, s->fn, s->old, s->ptr, s->size };
		put_event(&e, s->ips, s->n, NULL, NULL, fresh);
	}
	side.n = keep;
}

void events_forget_thread(void)
{
	side.n = 0;
}

void rec_lock(void)
{
	rlock_take(&hs_rec.lock, hs_tid());
}

static void unlock_slow(void)
{
	int fresh = 0;
	side_flush(0, &fresh);
	rlock_give(&hs_rec.lock);
	after_fresh_nodes(fresh);
}

static inline void unlock(void)
{
	if (__builtin_expect(side.n != 0, 0))
		unlock_slow();
	else
		rlock_give(&hs_rec.lock);
}

void rec_unlock(void)
{
	unlock();
}

/* Lock held by this thread, which was interrupted there: e waits. */
static void side_add(const struct event *e, const uintptr_t *ips, int n)
{
	if (side.n == SIDE_EVENTS) {
		rec_unrecorded();
		return;
	}
	struct side_event *s = &side.ev[side.n];
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
	side.n++;
}

/* A nested call's event, with its stack: recorded, or set aside when
 * the thread holds the lock. */
static void nested_put(const struct event *e, const uintptr_t *ips, int n)
{
	if (rlock_owned(&hs_rec.lock, hs_tid())) {
		side_add(e, ips, n);
		return;
	}
	int fresh = 0;
	rec_lock();
	put_event(e, ips, n, NULL, NULL, &fresh);
	rec_unlock();
	after_fresh_nodes(fresh);
}

/* The stack of an event: a stack that begins in real operators new
 * (nothrow new calls new) begins at their caller (cxx_wraps).  How many
 * frames of ips[0..n) to skip. */
static inline int wrappers(const uintptr_t *ips, int n)
{
	int k = 0;
	while (k < n - 1 && cxx_wraps(ips[k]))
		k++;
	return k;
}

static inline int unwrapped(uintptr_t *ips, int n)
{
	int k = wrappers(ips, n);
	if (__builtin_expect(k != 0, 0)) {
		memmove(ips, ips + k, (size_t)(n - k) * sizeof(*ips));
		n -= k;
	}
	return n;
}

static inline int capture(uintptr_t *ips, struct unwind_walk *w)
{
	return unwrapped(ips, unwind_capture_walk(ips, hs_settings.depth, w));
}

/* capture()'s stack, left where it is: it starts at *at, past the
 * operators' frames if it begins in them. */
static inline int capture_at(uintptr_t *ips, struct unwind_walk *w,
			     const uintptr_t **at)
{
	int n = unwind_capture_walk(ips, hs_settings.depth, w);
	int k = wrappers(ips, n);
	*at = ips + k;
	return n - k;
}

static inline int capture_plain(uintptr_t *ips)
{
	return unwrapped(ips, unwind_capture_plain(ips, hs_settings.depth));
}

void rec_nested(unsigned kind, unsigned fn, const void *old, const void *ptr,
		size_t size, const void *ra)
{
	struct event e = { kind, fn, (uintptr_t)old, (uintptr_t)ptr, size };
	uintptr_t ips[HS_DEPTH_MAX];
	int n = 0;
	if (kind != HS_REC_FREE) {
		n = capture_plain(ips);
		if (n == 0 && ra) {
			ips[0] = (uintptr_t)ra;
			n = 1;
		}
	}
	nested_put(&e, ips, n);
}

/* ---- events ---- */

/* stack_event's work in a process that runs Python: with the thread's
 * Python frames (their room on this function's stack only). */
static __attribute__((noinline)) void
stack_event_py(const struct event *e, const uintptr_t *ips, int n,
	       const struct unwind_walk *w)
{
	struct py_stack py;
	py_capture(&py);
	int fresh = 0;
	rec_lock();
	put_event(e, ips, n, w, &py, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

static void stack_event(unsigned kind, unsigned fn, const void *ptr,
			uint64_t size)
{
	uintptr_t buf[HS_DEPTH_MAX];
	const uintptr_t *ips;
	struct unwind_walk w;
	int n = capture_at(buf, &w, &ips);
	struct event e = { kind, fn, 0, (uintptr_t)ptr, size };
	if (__builtin_expect(python_on(), 0)) {
		stack_event_py(&e, ips, n, &w);
		return;
	}
	int fresh = 0;
	rec_lock();
	put_event(&e, ips, n, &w, NULL, &fresh);
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
	/* CPython's teardown is frees: its start is seen at the first */
	if (__builtin_expect(exiting_py_finalizing != NULL, 0))
		events_exiting_poll();
	put_event(&e, NULL, 0, NULL, NULL, &fresh);
	unlock();
}

int rec_stack(uintptr_t *ips)
{
	struct unwind_walk w;
	return capture(ips, &w);
}

/* Lock held, before a realloc-like call: room in the buffer for its
 * record, so that after the call, when its old block may be another
 * thread's already, the record need not wait for the writer, which
 * gives the lock away meanwhile (the other thread would record its
 * allocation of that block first).  Python frames may need more (code
 * records of codes not seen before); the room is generous for them. */
#define REALLOC_PY_ROOM (64u << 10)
static void realloc_room(int depth)
{
	size_t n = PREFIX_MAX + event_bound(depth) + HS_REMAP_MAX +
		   (python_on() ? REALLOC_PY_ROOM : 0);
	if (hs_live->on)
		(void)buffer_reserve(n);
}

void rec_realloc_begin(int *depth, uintptr_t *ips, struct unwind_walk *w)
{
	*depth = capture(ips, w);
	rec_lock();
	realloc_room(*depth);
}

int rec_nested_realloc_begin(int *depth, uintptr_t *ips)
{
	*depth = capture_plain(ips);
	if (rlock_owned(&hs_rec.lock, hs_tid()))
		return 0;
	rec_lock();
	realloc_room(*depth);
	return 1;
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
		rec_realloc_end(fn, old, ptr, size, n, ips, NULL);
	} else {
		struct event e = realloc_event(fn, old, ptr, size);
		side_add(&e, ips, n);
	}
}

/* Lock held: put_event with the thread's Python frames, read under the
 * lock (a realloc's stack is captured before it takes the lock). */
static __attribute__((noinline)) void
put_event_py(const struct event *e, const uintptr_t *ips, int n,
	     const struct unwind_walk *w, int *fresh)
{
	struct py_stack py;
	py_capture(&py);
	put_event(e, ips, n, w, &py, fresh);
}

void rec_realloc_end(unsigned fn, const void *old, const void *ptr,
		     size_t size, int n, const uintptr_t *ips,
		     const struct unwind_walk *w)
{
	struct event e = realloc_event(fn, old, ptr, size);
	int fresh = 0;
	if (__builtin_expect(side.n != 0, 0) && ptr)
		side_flush((uintptr_t)ptr, &fresh);
	if (__builtin_expect(python_on(), 0) && e.kind != HS_REC_FREE)
		put_event_py(&e, ips, n, w, &fresh);
	else
		put_event(&e, ips, n, w, NULL, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

/* ---- the program's own mappings ---- */

/* A map, unmap or remap record was appended. */
static void count_map(unsigned counter)
{
	hs_rec.counts[counter]++;
	hs_rec.events_since_tick = 1;
}

/* Lock held: the record of a new mapping, with the stack ips[0..n) and
 * the Python frames py (or NULL). */
static void put_map(const struct map_call *m, const uintptr_t *ips, int n,
		    const struct unwind_walk *w, struct py_stack *py,
		    int *fresh)
{
	struct map_file f = { HS_MAP_ANON, 0, 0, "", 0 };
	if (m->shmid >= 0)
		f.kind = HS_MAP_SYSV;
	else if (!(m->flags & MAP_ANONYMOUS)) {
		maps_describe(m->fd, &f);
	}
	maps_add(m->addr, m->len);
	uint8_t *p = reserve_thread(event_bound(n) + py_bound(py) +
				    HS_MAP_MAX(f.path_len));
	if (!p)
		return;
	uint32_t id = stack_id(ips, n, w, py, &p, fresh);
	p = enc_map(p, m->addr, m->len, (uint64_t)m->prot, (uint64_t)m->flags,
		    f.kind, f.dev, f.ino, m->offset, id, f.path, f.path_len);
	count_map(HS_COUNT_MMAPS);
	buffer_commit(p);
}

static __attribute__((noinline)) void
map_py(const struct map_call *m, uintptr_t *ips, int n,
       const struct unwind_walk *w)
{
	struct py_stack py;
	py_capture(&py);
	int fresh = 0;
	rec_lock();
	put_map(m, ips, n, w, &py, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

void rec_map(const struct map_call *m)
{
	uintptr_t ips[HS_DEPTH_MAX];
	struct unwind_walk w;
	int n = capture(ips, &w);
	if (__builtin_expect(python_on(), 0)) {
		map_py(m, ips, n, &w);
		return;
	}
	int fresh = 0;
	rec_lock();
	put_map(m, ips, n, &w, NULL, &fresh);
	unlock();
	after_fresh_nodes(fresh);
}

/* Lock held: [addr, addr+len) given back, if the program mapped any of
 * it; len 0: the System V segment attached at addr. */
static void put_unmap(uintptr_t addr, size_t len)
{
	size_t known = len ? len : maps_length_at(addr);
	if (!known || !maps_remove(addr, known))
		return;
	uint8_t *p = reserve_thread(HS_UNMAP_MAX);
	if (!p)
		return;
	buffer_commit(enc_unmap(p, addr, len));
	count_map(HS_COUNT_MUNMAPS);
}

void rec_unmap(const void *addr, size_t len)
{
	rec_lock();
	put_unmap((uintptr_t)addr, len);
	unlock();
}

void rec_protect(const void *addr, size_t len, int prot)
{
	rec_lock();
	if (maps_overlaps((uintptr_t)addr, len)) {
		uint8_t *p = reserve_thread(HS_PROTECT_MAX);
		if (p) {
			buffer_commit(enc_protect(p, (uintptr_t)addr, len,
						  (uint64_t)prot));
			hs_rec.events_since_tick = 1;
		}
	}
	unlock();
}

void rec_shmdt(const void *addr)
{
	rec_lock();
	put_unmap((uintptr_t)addr, 0);
	unlock();
}

void rec_mremap_end(const void *old, size_t old_len, const void *ptr,
		    size_t len, int flags, int n, const uintptr_t *ips,
		    const struct unwind_walk *w)
{
	int fresh = 0;
	/* a failed call changed nothing; a mapping of the allocator's or
	 * the loader's is none of ours */
	if (ptr && old_len && maps_remove((uintptr_t)old, old_len)) {
		maps_add((uintptr_t)ptr, len);
		uint8_t *p = reserve_thread(event_bound(n) + HS_REMAP_MAX +
					    py_bound(NULL));
		if (p) {
			/* native only: no Python frames were read for it */
			uint32_t id = stack_id(ips, n, w, NULL, &p, &fresh);
			p = enc_remap(p, (uintptr_t)old, old_len,
				      (uintptr_t)ptr, len, (uint64_t)flags,
				      id);
			count_map(HS_COUNT_MMAPS);
			buffer_commit(p);
		}
	}
	unlock();
	after_fresh_nodes(fresh);
}

void events_maps_reset(void)
{
	maps_clear();
}

/* ---- the start of exit ---- */

/* Lock held: the process begins to exit (once per trace). */
static void put_exiting(uint64_t t)
{
	if (hs_rec.exiting || !hs_live->on)
		return;
	uint8_t *p = buffer_reserve(HS_EXITING_MAX);
	if (!p)
		return;
	buffer_commit(enc_exiting(p, t));
	hs_rec.exiting = 1;
}

void rec_exiting(void)
{
	/* a vfork child shares our memory: its exit is not ours */
	if (!hs_live->on || hs_rec.exiting || getpid() != hs_rec.pid)
		return;
	rec_lock();
	put_exiting(now_ns());
	unlock();
}

void events_exiting_poll(void)
{
	if (!hs_rec.exiting && exiting_python())
		put_exiting(now_ns());
}

/* ---- marks, thread names, modules ---- */

void rec_mark(unsigned kind, const char *label)
{
	struct sample s;
	size_t len = label ? strnlen(label, RECORDS_LABEL_MAX) : 0;
	int cancel;
	if (!hs_live->on)
		return; /* no trace: nothing to sample for */
	/* statm's read (and open) are cancellation points: not in a mark */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	int ok = sampler_take(&s, 1);
	pthread_setcancelstate(cancel, NULL);
	rec_lock();
	uint8_t *p = reserve_thread(HS_MARK_MAX(len));
	if (p) {
		buffer_commit(enc_mark(&hs_rec.enc, p, now_ns(), kind,
				       label ? label : "", len));
		hs_rec.counts[HS_COUNT_MARKS]++;
		if (ok)
			sampler_append(now_ns(), &s);
	}
	rec_unlock();
}

/* name NULL: the end of the thread's innermost region */
void rec_region(const char *name)
{
	if (!hs_live->on)
		return;
	rec_lock();
	uint8_t *p = reserve_thread(HS_REGION_NAME_MAX(REGIONS_NAME_MAX) +
				    HS_REGION_MAX);
	if (p && name) {
		int fresh;
		size_t n = strnlen(name, REGIONS_NAME_MAX);
		uint32_t id = regions_id(name, n, hs_rec.gen, &fresh);
		if (fresh) {
			const char *s = regions_name(id, &n);
			p = enc_region_name(p, id, s, n);
		}
		buffer_commit(enc_region_begin(p, id));
	} else if (p) {
		buffer_commit(enc_region_end(p));
	}
	rec_unlock();
}

void rec_thread_name(const char *name)
{
	size_t len = strnlen(name, RECORDS_NAME_MAX);
	rec_lock();
	uint8_t *p = reserve_thread(RECORDS_THREAD_NAME_MAX(len));
	if (p)
		buffer_commit(enc_thread_name(p, (uint64_t)hs_tid(), name,
					      len));
	rec_unlock();
}

int events_modules_create(void)
{
	return modlist_init(&known) || modlist_init(&scratch) ? -1 : 0;
}

void events_modules_reset(void)
{
	modlist_clear(&known);
	mod_generation = 0;
}

void events_modules_poll(void)
{
	if (modules_generation() != mod_generation)
		events_modules_changed();
}

void events_modules_changed(void)
{
	struct recorder *R = &hs_rec;
	int self = hs_tid();
	/* a nested call, in code of ours that is doing this already */
	if (lock_owned(&R->mod_lock, self) || rlock_owned(&R->lock, self))
		return;
	lock_take(&R->mod_lock, self);
	uint64_t gen = modules_generation();
	modlist_collect(&scratch);
	rlock_take(&R->lock, self);
	mod_generation = gen;
	for (uint32_t i = 0; i < scratch.count && hs_live->on; i++) {
		const struct module *m = &scratch.mods[i];
		if (modlist_contains(&known, m, scratch.pool))
			continue;
		uint8_t *p = buffer_reserve(records_module_max(m));
		if (p)
			buffer_commit(records_module(p, m, scratch.pool));
	}
	for (uint32_t i = 0; i < known.count && hs_live->on; i++) {
		const struct module *m = &known.mods[i];
		if (modlist_contains(&scratch, m, known.pool))
			continue;
		uint8_t *p = buffer_reserve(1 + HS_VARINT_MAX);
		if (p)
			buffer_commit(enc_u64(p, HS_REC_MODULE_GONE, m->base));
	}
	struct modlist tmp = known;
	known = scratch;
	scratch = tmp;
	rlock_give(&R->lock);
	lock_give(&R->mod_lock);
}
