/* Python frames of the allocating thread, read from the interpreter's own
 * structures.  The thread state comes from the thread's gilstate slot
 * (the key CPython keeps for PyGILState_GetThisThreadState), which stays
 * set while the thread has released the GIL, as PyTorch does around every
 * operator; never from "the thread holding the GIL".  Only the owning
 * thread changes its frames, and it is inside malloc: reading them needs
 * no lock.  The layout is the interpreter's version's: an interpreter
 * this table does not know leaves the stacks native-only, said once.
 *
 * A frame is (code object, instruction); lines are the analyzer's, from
 * the code's line table, written once per code object. */
#include "python.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "../base/rmem.h"
#include "internal.h"
#include "unwind.h"

/* Where a version keeps what is read, in bytes from the structure. */
struct py_layout {
	unsigned long version; /* Py_Version >> 16: major, minor */
	/* _PyRuntime */
	size_t finalizing, main_interp, main_interp_at, tss_init, tss_key;
	/* PyThreadState, _PyCFrame */
	size_t ts_interp, ts_cframe, ts_native_tid, cf_frame;
	/* _PyInterpreterFrame */
	size_t fr_code, fr_previous, fr_instr, fr_entry, fr_owner;
	unsigned owner_generator;
	/* PyCodeObject (ob_size: its code units) */
	size_t co_type, co_size, co_firstlineno, co_filename, co_name,
		co_qualname, co_linetable, co_firsttraceable, co_code;
	/* str (PyASCIIObject, PyCompactUnicodeObject), bytes */
	size_t str_length, str_state, str_ascii, str_utf8_len, str_utf8,
		str_compact, bytes_size, bytes_data;
};

/* CPython 3.11 on x86_64, as its headers declare it (checked against
 * Debian's python3.11-dev, and at start by the probe below). */
static const struct py_layout layout_311 = {
	.version = 0x030b,
	.finalizing = 24, .main_interp = 48, .main_interp_at = 58936,
	.tss_init = 592, .tss_key = 596,
	.ts_interp = 16, .ts_cframe = 56, .ts_native_tid = 160,
	.cf_frame = 8,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_entry = 68,
	.fr_owner = 69, .owner_generator = 1,
	.co_type = 8, .co_size = 16, .co_firstlineno = 72, .co_filename = 112,
	.co_name = 120, .co_qualname = 128, .co_linetable = 136,
	.co_firsttraceable = 168, .co_code = 184,
	.str_length = 16, .str_state = 32, .str_ascii = 48,
	.str_utf8_len = 48, .str_utf8 = 56, .str_compact = 72,
	.bytes_size = 16, .bytes_data = 32,
};

#if defined(__x86_64__)
static const struct py_layout *const layouts[] = { &layout_311 };
#else
static const struct py_layout *const layouts[] = { NULL };
#endif

static struct {
	const uint8_t *rt;       /* _PyRuntime */
	const void *code_type;   /* &PyCode_Type */
	unsigned long version;   /* Py_Version */
	const struct py_layout *L;
	int probed;              /* the first thread state was checked */
	int said;
} py;

struct python_code python_code;

int python_active; /* frames are read (python_on) */

/* Strings and line tables past these are cut (a line table cut short
 * leaves the lines past it unknown). */
#define STR_CAP 1024
#define LINES_CAP (64u << 10)

#define AT(base, off, type) (*(type const *)((const uint8_t *)(base) + (off)))

static void say_once(const char *why)
{
	if (py.said)
		return;
	py.said = 1;
	hs_say("heapslope: Python %lu.%lu: %s; stacks are native-only",
	       py.version >> 24, py.version >> 16 & 0xff, why);
}

static int find_interp(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	uintptr_t lo, hi;
	unwind_module_range(info, &lo, &hi);
	if (python_code.eval_lo >= lo && python_code.eval_lo < hi) {
		python_code.interp_lo = lo;
		python_code.interp_hi = hi;
		return 1;
	}
	return 0;
}

/* Where the eval loop's code is, and the interpreter's (python_trim). */
static void find_eval(void)
{
	void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!eval || !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) ||
	    !sym || !sym->st_size)
		return;
	python_code.eval_lo = (uintptr_t)eval;
	python_code.eval_hi = python_code.eval_lo + sym->st_size;
	dl_iterate_phdr(find_interp, NULL);
}

int python_trim(uintptr_t *ips, int n, int *eval)
{
	int i = 0, k;
	/* inside the innermost Python call: everything */
	while (i < n && !python_is_eval(ips[i]))
		i++;
	*eval = i;
	if (i == n || !python_code.interp_hi)
		return n;
	for (k = ++i; i < n; i++) {
		if (!python_is_interp(ips[i]))
			ips[k++] = ips[i];
	}
	return k;
}

void python_init(int on)
{
	if (!on || py.rt)
		return;
	const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
	const uint8_t *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	const void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	if (!version || !rt || !code_type)
		return;
	py.version = *version;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i] && layouts[i]->version == py.version >> 16)
			py.L = layouts[i];
	py.code_type = code_type;
	py.rt = rt;
	if (!py.L) {
		say_once("no layout of this interpreter's frames is known");
		return;
	}
	find_eval();
	__atomic_store_n(&python_active, 1, __ATOMIC_RELEASE);
}

/* The first thread state found must be what the layout says it is: of
 * the main interpreter, which lives in _PyRuntime, and of this thread. */
static int probe(const uint8_t *ts)
{
	const struct py_layout *L = py.L;
	const uint8_t *main_interp = AT(py.rt, L->main_interp, const uint8_t *);
	int ok = main_interp == py.rt + L->main_interp_at &&
		 AT(ts, L->ts_interp, const uint8_t *) == main_interp &&
		 AT(ts, L->ts_native_tid, unsigned long) ==
			 (unsigned long)hs_tid();
	if (!ok) {
		__atomic_store_n(&python_active, 0, __ATOMIC_RELAXED);
		say_once("its thread state is not laid out as expected");
	}
	__atomic_store_n(&py.probed, 1, __ATOMIC_RELEASE);
	return ok;
}

/* A frame's is_entry and owner bytes, as a visit keeps them. */
static inline __attribute__((always_inline)) uint32_t
frame_flags(const struct py_layout *L, const uint8_t *fr)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (L->fr_owner == L->fr_entry + 1) /* 3.11's: one load */
		return AT(fr, L->fr_entry, uint16_t);
#endif
	return AT(fr, L->fr_entry, uint8_t) |
	       (uint32_t)AT(fr, L->fr_owner, uint8_t) << 8;
}

static inline unsigned py_seek(const uint8_t *fr)
{
	return (unsigned)((uintptr_t)fr >> 6) & (PY_SEEK - 1);
}

/* Whether frame fr, at visit v's address, holds what v read but, maybe,
 * its instruction (*instr, read when the code is v's). */
static inline __attribute__((always_inline)) int
visit_holds(const struct py_layout *L, const uint8_t *fr,
	    const struct py_visit *v, uintptr_t *instr)
{
	const uint8_t *code = AT(fr, L->fr_code, const uint8_t *);
	if ((uintptr_t)code != v->code)
		return 0; /* its line table is read only through the same code */
	*instr = AT(fr, L->fr_instr, uintptr_t);
	/* compared at once: one branch */
	return !((AT(code, L->co_linetable, uintptr_t) ^ v->lines) |
		 (uintptr_t)(frame_flags(L, fr) ^ (v->flags & 0xffff)));
}

/* Whether frame fr is where visit v saw a frame and holds what it read
 * but, maybe, its instruction. */
static inline __attribute__((always_inline)) int
visit_like(const struct py_layout *L, const uint8_t *fr,
	   const struct py_visit *v, uintptr_t *instr)
{
	return (uintptr_t)fr == v->fr && visit_holds(L, fr, v, instr);
}

/* The chain from fr, whose visit matched last->v[s], is last's from there
 * to its end: every frame is where last saw it and holds what it read.
 * Each frame is read at the address its visit kept, once its previous
 * frame was found to link to it: the reads of a frame then wait for a
 * branch, which is predicted, not for the link's load, and the frames of
 * a deep chain (an import's 50) are read side by side. */
static inline __attribute__((always_inline)) int
rest_same(const struct py_layout *L, const uint8_t *fr,
	  const struct py_trail *last, int s)
{
	const struct py_visit *v = &last->v[s], *end = &last->v[last->seen];
	for (;;) {
		uintptr_t prev = AT(fr, L->fr_previous, uintptr_t);
		if (++v == end)
			return prev == 0;
		if (prev != v->fr)
			return 0;
		/* the kept address, by a volatile load: the compiler
		 * cannot take prev, its equal, for it */
		fr = (const uint8_t *)*(const volatile uintptr_t *)&v->fr;
		uintptr_t instr;
		if (!visit_holds(L, fr, v, &instr) || instr != v->instr)
			return 0;
	}
}

/* A frame's instruction offset in code units, as its place is kept. */
static inline long kept_units(long units)
{
	if (units < 0)
		return 0;
	return units < 1L << 30 ? units : (1L << 30) - 1;
}

/* The captures of a thread are mostly at the place of the one before
 * (half of them, in a loop that makes small objects), or in the same
 * function and chain with only the innermost frame further on.  Then
 * nothing is read anew: *common is PY_SAME, or PY_MOVED (python.h).  -1
 * when the chain is otherwise. */
static inline __attribute__((always_inline)) int
moved(const struct py_layout *L, const uint8_t *fr, struct py_trail *now,
      const struct py_trail *last, int *common)
{
	const struct py_visit *v = last->v;
	uintptr_t instr;
	/* (the innermost visit has no entry pending: its flags as read) */
	if (!visit_like(L, fr, v, &instr) || !rest_same(L, fr, last, 0))
		return -1;
	const uint8_t *code = (const uint8_t *)v->code;
	if (instr == v->instr) {
		*common = PY_SAME;
		return last->n;
	}
	/* begun then and now: the frame put out first, then as now */
	uintptr_t start = v->code + L->co_code;
	long units = (long)(instr - start) / 2;
	long was = (long)(v->instr - start) / 2;
	int first = AT(code, L->co_firsttraceable, int);
	if ((AT(fr, L->fr_owner, uint8_t) != L->owner_generator &&
	     (units < first || was < first)) ||
	    !last->n || last->raw[0].code != v->code ||
	    last->raw[0].where >> 2 != (uint64_t)kept_units(was))
		return -1;
	/* now holds the move only: its innermost frame and visit */
	now->raw[0] = last->raw[0];
	now->raw[0].where = PY_WHERE(kept_units(units),
				     last->raw[0].where & 3);
	now->v[0].instr = instr;
	*common = PY_MOVED;
	return last->n;
}

/* The chain from its innermost frame fr, read frame by frame with the
 * layout L, inlined where L is a constant so that its offsets are too
 * (no loads of them, no registers spilled). */
static inline __attribute__((always_inline)) int
read_with(const struct py_layout *L, const uint8_t *fr, struct py_trail *now,
	  const struct py_trail *last, int *common)
{
	struct py_raw *f = now->raw;
	int n = 0, pending_entry = 0, seen = 0, fresh = -1;
	/* last's frames may be met: in a chain deep enough for it to pay */
	int seek = last && last->seen >= PY_SEEK_MIN;
	for (; fr && n < PY_DEPTH && seen < 4 * PY_DEPTH; seen++) {
		if ((uintptr_t)fr & 7)
			break;
		const uint8_t *code = AT(fr, L->fr_code, const uint8_t *);
		if (!code || ((uintptr_t)code & 7) ||
		    AT(code, L->co_type, const void *) != py.code_type)
			break;
		uint32_t flags = frame_flags(L, fr) |
				 (uint32_t)pending_entry << 16;
		int entry = (flags & 0xff) != 0;
		const uint8_t *first = code + L->co_code;
		const uint8_t *instr = AT(fr, L->fr_instr, const uint8_t *);
		uintptr_t lines = AT(code, L->co_linetable, uintptr_t);
		if (seek) {
			/* stale entries, of visits no longer there, may
			 * point anywhere, or nowhere */
			unsigned k = (unsigned)(last->seen -
						last->seek[py_seek(fr)]);
			int there = k < (unsigned)last->seen;
			const struct py_visit *v = &last->v[there ? k : 0];
			if (there && v->fr == (uintptr_t)fr &&
			    v->code == (uintptr_t)code &&
			    v->instr == (uintptr_t)instr && v->lines == lines &&
			    v->flags == flags) {
				/* one try: a frame of last's whose outer frames
				 * differ leaves nothing of last to meet further
				 * out but by chance */
				seek = 0;
				int s = (int)k, run = last->seen - s;
				if (n + (int)v->rem < PY_DEPTH &&
				    seen + run <= PY_VISITS &&
				    rest_same(L, fr, last, s)) {
					/* in one go (a loop of struct copies
					 * became a string move per visit) */
					memcpy(&now->v[seen], v,
					       (size_t)run * sizeof(*v));
					memcpy(&f[n], &last->raw[last->n - v->rem],
					       v->rem * sizeof(*f));
					*common = (int)v->rem;
					n += (int)v->rem;
					fresh = seen;
					seen += run;
					fr = NULL;
					break;
				}
			}
		}
		if (seen < PY_VISITS)
			now->v[seen] = (struct py_visit){
				(uintptr_t)fr, (uintptr_t)code,
				(uintptr_t)instr, lines, flags, (uint32_t)n
			};
		long units = (long)(instr - first) / 2;
		/* a frame whose code has not begun (its prologue): not a
		 * line of the program's yet */
		if (AT(fr, L->fr_owner, uint8_t) != L->owner_generator &&
		    units < AT(code, L->co_firsttraceable, int)) {
			pending_entry |= entry;
		} else {
			units = kept_units(units);
			f[n].code = (uintptr_t)code;
			f[n].lines = lines;
			f[n].where = PY_WHERE(units, entry ? HS_PY_ENTRY : 0);
			n++;
			pending_entry = 0;
		}
		if (pending_entry && entry && n < PY_DEPTH) {
			/* an eval call with no frame begun: kept, so that
			 * the frames outside it go with the calls outside */
			f[n++] = (struct py_raw){ 0, 0,
						  PY_WHERE(0, HS_PY_ENTRY |
								    HS_PY_NONE) };
			pending_entry = 0;
		}
		fr = AT(fr, L->fr_previous, const uint8_t *);
	}
	now->n = n;
	if (fresh < 0)
		fresh = seen;
	if (fr || seen > PY_VISITS)
		return n; /* not whole: the next capture reads it all */
	now->seen = seen;
	if (seen < PY_SEEK_MIN)
		return n; /* the next capture reads it all */
	/* the visits made here held the frames put out before them */
	for (int t = 0; t < fresh; t++)
		now->v[t].rem = (uint32_t)n - now->v[t].rem;
	if (fresh < seen) /* last's entries of the visits copied hold */
		memcpy(now->seek, last->seek, sizeof(now->seek));
	else
		memset(now->seek, 0, sizeof(now->seek));
	for (int t = fresh; t-- > 0;) /* the innermost of a seek's frames */
		now->seek[py_seek((const uint8_t *)now->v[t].fr)] =
			(uint16_t)(seen - t);
	return n;
}

/* The chain read frame by frame from fr, with the layout found at
 * start-up: out of line, so that the capture's common case (moved) needs
 * no frame of its size. */
static __attribute__((noinline)) int
read_chain(const uint8_t *fr, struct py_trail *now,
	   const struct py_trail *last, int *common)
{
#if defined(__x86_64__)
	if (py.L == &layout_311)
		return read_with(&layout_311, fr, now, last, common);
#endif
	return read_with(py.L, fr, now, last, common);
}

/* python_capture with the layout L (a constant where inlined): the
 * thread's innermost frame, then moved, else the whole chain read. */
static inline __attribute__((always_inline)) int
capture_with(const struct py_layout *L, struct py_trail *now,
	     const struct py_trail *last, int *common)
{
	if (!AT(py.rt, L->tss_init, int))
		return 0;
	const uint8_t *ts = pthread_getspecific(AT(py.rt, L->tss_key,
						   pthread_key_t));
	/* finalizing: thread states of daemon threads are being freed */
	if (!ts || AT(py.rt, L->finalizing, uintptr_t))
		return 0;
	if (!__atomic_load_n(&py.probed, __ATOMIC_ACQUIRE) && !probe(ts))
		return 0;
	const uint8_t *cframe = AT(ts, L->ts_cframe, const uint8_t *);
	const uint8_t *fr = cframe ? AT(cframe, L->cf_frame, const uint8_t *)
				   : NULL;
	if (last && last->seen > 0) {
		int n = moved(L, fr, now, last, common);
		if (n >= 0)
			return n;
	}
	return read_chain(fr, now, last, common);
}

/* With the layout found at start-up, whichever it is: out of line, so
 * that the constant layout's common case keeps few registers. */
static __attribute__((noinline)) int
capture_any(struct py_trail *now, const struct py_trail *last, int *common)
{
	return capture_with(py.L, now, last, common);
}

int python_capture(struct py_trail *now, const struct py_trail *last,
		   int *common)
{
	*common = -1;
	now->n = 0;
	now->seen = -1;
	if (!python_on())
		return 0;
#if defined(__x86_64__)
	if (py.L == &layout_311)
		return capture_with(&layout_311, now, last, common);
#endif
	return capture_any(now, last, common);
}

/* ---- code objects: each written once, with a trace id ---- */

struct code_slot {
	uintptr_t code, lines; /* 0: empty */
	uint32_t id;
};

static struct {
	struct code_slot *slots;
	uint32_t mask, count, next_id;
} codes;

static uint32_t code_hash(uintptr_t code)
{
	uint64_t h = (uint64_t)code * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

/* The slot of code: its own, or the empty one it would take. */
static struct code_slot *code_slot(uintptr_t code)
{
	uint32_t i = code_hash(code) & codes.mask;
	while (codes.slots[i].code && codes.slots[i].code != code)
		i = (i + 1) & codes.mask;
	return &codes.slots[i];
}

static int codes_grow(void)
{
	uint32_t cap = codes.slots ? (codes.mask + 1) * 2 : 1024;
	struct code_slot *old = codes.slots;
	uint32_t old_cap = old ? codes.mask + 1 : 0;
	struct code_slot *fresh = rmem_map(cap * sizeof(*fresh));
	if (!fresh)
		return -1;
	codes.slots = fresh;
	codes.mask = cap - 1;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].code)
			*code_slot(old[i].code) = old[i];
	if (old)
		rmem_unmap(old, old_cap * sizeof(*old));
	return 0;
}

void python_reset(void)
{
	if (codes.slots)
		memset(codes.slots, 0, (codes.mask + 1) * sizeof(*codes.slots));
	codes.count = 0;
	codes.next_id = 0;
}

/* The bytes str takes as UTF-8, at most STR_CAP. */
static size_t str_bound(const uint8_t *s)
{
	const struct py_layout *L = py.L;
	if (!s)
		return 0;
	size_t len = (size_t)AT(s, L->str_length, long);
	if (!(AT(s, L->str_state, uint32_t) & 0x40)) /* not ASCII */
		len *= 4;
	return len < STR_CAP ? len : STR_CAP;
}

static size_t put_utf8(char *out, size_t at, uint32_t c)
{
	if (c < 0x80) {
		out[at++] = (char)c;
	} else if (c < 0x800) {
		out[at++] = (char)(0xc0 | c >> 6);
		out[at++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out[at++] = (char)(0xe0 | c >> 12);
		out[at++] = (char)(0x80 | (c >> 6 & 0x3f));
		out[at++] = (char)(0x80 | (c & 0x3f));
	} else {
		out[at++] = (char)(0xf0 | c >> 18);
		out[at++] = (char)(0x80 | (c >> 12 & 0x3f));
		out[at++] = (char)(0x80 | (c >> 6 & 0x3f));
		out[at++] = (char)(0x80 | (c & 0x3f));
	}
	return at;
}

/* str as UTF-8 into out (STR_CAP bytes), cut at a character; its
 * length.  Compact strings only (every name and file of a code object). */
static size_t str_utf8(const uint8_t *s, char *out)
{
	const struct py_layout *L = py.L;
	if (!s)
		return 0;
	size_t len = (size_t)AT(s, L->str_length, long);
	uint32_t state = AT(s, L->str_state, uint32_t);
	unsigned kind = state >> 2 & 7;
	if (!(state & 0x20)) /* not compact: not a name */
		return 0;
	if (state & 0x40) { /* ASCII */
		len = len < STR_CAP ? len : STR_CAP;
		memcpy(out, s + L->str_ascii, len);
		return len;
	}
	const uint8_t *data = s + L->str_compact;
	size_t n = 0;
	for (size_t i = 0; i < len && n + 4 <= STR_CAP; i++) {
		uint32_t c = kind == 1   ? data[i]
			     : kind == 2 ? ((const uint16_t *)data)[i]
					 : ((const uint32_t *)data)[i];
		n = put_utf8(out, n, c);
	}
	return n;
}

static size_t lines_len(const uint8_t *code)
{
	const uint8_t *b = AT(code, py.L->co_linetable, const uint8_t *);
	size_t n = b ? (size_t)AT(b, py.L->bytes_size, long) : 0;
	return n < LINES_CAP ? n : LINES_CAP;
}

size_t python_codes_need(const struct py_raw *f, int n, uint32_t *ids)
{
	const struct py_layout *L = py.L;
	size_t need = 0;
	for (int i = 0; i < n; i++) {
		ids[i] = 0;
		if (!f[i].code)
			continue;
		if (codes.slots) {
			struct code_slot *s = code_slot(f[i].code);
			if (s->code && s->lines == f[i].lines) {
				ids[i] = s->id;
				continue;
			}
		}
		const uint8_t *c = (const uint8_t *)f[i].code;
		ids[i] = UINT32_MAX;
		need += HS_PY_CODE_MAX(
			str_bound(AT(c, L->co_filename, const uint8_t *)) +
			str_bound(AT(c, L->co_name, const uint8_t *)) +
			str_bound(AT(c, L->co_qualname, const uint8_t *)) +
			lines_len(c));
	}
	return need;
}

uint8_t *python_codes_put(const struct py_raw *f, int n, uint32_t *ids,
			  uint8_t *p)
{
	const struct py_layout *L = py.L;
	static char file[STR_CAP], name[STR_CAP], qual[STR_CAP];
	for (int i = 0; i < n; i++) {
		if (ids[i] != UINT32_MAX)
			continue;
		ids[i] = 0;
		if ((codes.count + 1) * 2 > (codes.slots ? codes.mask + 1 : 0) &&
		    codes_grow())
			continue; /* no room: the frame says "no code" */
		struct code_slot *s = code_slot(f[i].code);
		if (s->code && s->lines == f[i].lines) {
			ids[i] = s->id; /* the same code further out */
			continue;
		}
		if (!s->code)
			codes.count++;
		*s = (struct code_slot){ f[i].code, f[i].lines, ++codes.next_id };
		ids[i] = s->id;
		const uint8_t *c = (const uint8_t *)f[i].code;
		const uint8_t *lt = AT(c, L->co_linetable, const uint8_t *);
		size_t nf = str_utf8(AT(c, L->co_filename, const uint8_t *),
				     file);
		size_t nn = str_utf8(AT(c, L->co_name, const uint8_t *), name);
		size_t nq = str_utf8(AT(c, L->co_qualname, const uint8_t *),
				     qual);
		p = enc_py_code(p, s->id, py.version,
				(uint64_t)AT(c, L->co_firstlineno, int), file,
				nf, name, nn, qual, nq,
				lt ? lt + L->bytes_data : NULL, lines_len(c));
	}
	return p;
}
