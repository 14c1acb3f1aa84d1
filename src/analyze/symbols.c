#include "symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debugfile.h"
#include "base/error.h"
#include "format/reader.h"

#define BUILD_ID_MAX 64
/* Distinct modules at most.  The recorder writes a module again each time
 * it is loaded (dlopen/dlclose loops), and those are kept once; a live
 * process holds at most 8192 (the recorder's limit), so more than this
 * many distinct ones come from a corrupt trace.  Each costs a file lookup
 * when symbolizing. */
#define MODULES_MAX (1u << 16)
#define NO_MODULE UINT32_MAX

struct module {
	char *path;
	size_t path_len;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t base, lo, hi; /* [lo, hi): addresses its segments cover */
	uint64_t seq; /* when last recorded: the newest covers an address */
	int stale; /* the file at path has another build-id now */
	int used;  /* a frame was resolved in it */
	/* when it was mapped, on the symbols' clock (symbols_clock): from a
	 * module record to its module-gone, or SYMBOLS_NOW; ascending */
	struct life {
		uint64_t load, gone;
	} *lives;
	size_t nlives, cap_lives;
	unsigned layer; /* the Dwfl it is reported to: modules that overlap
			 * (an address range reused after a dlclose) go to
			 * layers of their own */
};

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The first modules' files and debug information, loaded by a thread of
 * its own while the trace is replayed.  Until joined, the thread alone
 * touches dwfl and mods (copies of the entries, sharing the paths). */
struct preload {
	pthread_t thread;
	const struct symbols *s; /* read only: user_dir, cb */
	struct module *mods;
	size_t n;
	Dwfl *dwfl;
	atomic_int stop; /* wanted now, or not at all: finish early */
};

/* An address resolved, in module number mod (1-based, 0: none). */
struct memo {
	uint64_t ip;
	uint32_t mod, used;
	size_t n;
	struct frame *frames;
};

struct symbols {
	struct module *mods;
	size_t n, cap;
	uint32_t *index; /* open addressing over mods, NO_MODULE: empty */
	size_t index_mask;
	uint32_t *by_base; /* open addressing, the newest module at a base */
	uint64_t seq;
	uint64_t clock;  /* module and module-gone records so far */
	Dwfl **layers;   /* layers[0] is dwfl; the others own theirs */
	size_t nlayers;
	char *user_dir;
	char *dwfl_path; /* the search path handed to libdwfl */
	Dwfl_Callbacks cb;
	Dwfl *dwfl;
	int reported;
	demangle_fn demangle;
	void *libstdcxx;
	int demangle_tried;
	struct preload *preload; /* NULL: not started, or joined */
	int preload_tried;
	struct memo *memo;       /* resolved addresses, open addressing */
	size_t memo_mask, nmemo;
};

/* C++ names are demangled with the C++ runtime's __cxa_demangle when the
 * process already has it, or when libstdc++ can be opened at run time;
 * heapslope never links it.  Without it names stay mangled. */
extern char *__cxa_demangle(const char *, char *, size_t *, int *)
	__attribute__((weak));

struct symbols *symbols_create(const char *debuginfo_path)
{
	struct symbols *s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	/* '-': no CRC checks; '': next to the file; .debug beside it; then
	 * the user's directory and the system's, searched by build-id too */
	const char *user = debuginfo_path && *debuginfo_path ? debuginfo_path
							     : NULL;
	size_t len = 64 + (user ? strlen(user) : 0);
	s->dwfl_path = malloc(len);
	if (!s->dwfl_path)
		goto oom;
	snprintf(s->dwfl_path, len, "-:.debug:%s%s/usr/lib/debug",
		 user ? user : "", user ? ":" : "");
	if (user && !(s->user_dir = strdup(user)))
		goto oom;
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = debugfile_find_debuginfo;
	debugfile_search_path(s->dwfl_path);
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->dwfl_path;
	return s;
oom:
	symbols_destroy(s);
	hs_error("out of memory");
	return NULL;
}

static Dwfl *preload_join(struct symbols *s);

void symbols_destroy(struct symbols *s)
{
	if (!s)
		return;
	if (s->preload) {
		atomic_store(&s->preload->stop, 1);
		Dwfl *dwfl = preload_join(s);
		if (dwfl)
			dwfl_end(dwfl);
	}
	if (s->dwfl)
		dwfl_end(s->dwfl);
	for (size_t i = 1; i < s->nlayers; i++)
		if (s->layers[i])
			dwfl_end(s->layers[i]);
	free(s->layers);
	for (size_t i = 0; s->memo && i <= s->memo_mask; i++)
		if (s->memo[i].used)
			symbols_frames_free(s->memo[i].frames, s->memo[i].n);
	free(s->memo);
	for (size_t i = 0; i < s->n; i++) {
		free(s->mods[i].path);
		free(s->mods[i].lives);
	}
	free(s->mods);
	free(s->index);
	free(s->by_base);
	free(s->dwfl_path);
	free(s->user_dir);
	if (s->libstdcxx)
		dlclose(s->libstdcxx);
	free(s);
}

static uint64_t module_hash(const struct module *m)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < m->path_len; i++)
		h = (h ^ (uint8_t)m->path[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < m->build_id_len; i++)
		h = (h ^ m->build_id[i]) * 0x100000001b3ull;
	return (h ^ m->base ^ m->lo * 31 ^ m->hi * 961) * 0x9e3779b97f4a7c15ull;
}

static int same_module(const struct module *a, const struct module *b)
{
	return a->base == b->base && a->lo == b->lo && a->hi == b->hi &&
	       a->path_len == b->path_len &&
	       a->build_id_len == b->build_id_len &&
	       !memcmp(a->path, b->path, a->path_len) &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len);
}

/* The index slot of m: its twin's, or the empty one where it goes. */
static uint32_t *index_slot(const struct symbols *s, const struct module *m)
{
	size_t i = (size_t)(module_hash(m) >> 32) & s->index_mask;
	while (s->index[i] != NO_MODULE &&
	       !same_module(&s->mods[s->index[i]], m))
		i = (i + 1) & s->index_mask;
	return &s->index[i];
}

/* The by_base slot of base: the module there, or the empty one. */
static uint32_t *base_slot(const struct symbols *s, uint64_t base)
{
	size_t i = (size_t)((base * 0x9e3779b97f4a7c15ull) >> 32) &
		   s->index_mask;
	while (s->by_base[i] != NO_MODULE && s->mods[s->by_base[i]].base != base)
		i = (i + 1) & s->index_mask;
	return &s->by_base[i];
}

/* Room for one more module in mods and in the index. */
static int module_room(struct symbols *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct module *v = realloc(s->mods, cap * sizeof(*v));
		if (!v)
			return -1;
		s->mods = v;
		s->cap = cap;
	}
	if (s->index && (s->n + 1) * 2 <= s->index_mask + 1)
		return 0;
	size_t size = s->index ? (s->index_mask + 1) * 2 : 64;
	uint32_t *t = malloc(size * sizeof(*t));
	uint32_t *b = malloc(size * sizeof(*b));
	if (!t || !b) {
		free(t);
		free(b);
		return -1;
	}
	memset(t, 0xff, size * sizeof(*t));
	memset(b, 0xff, size * sizeof(*b));
	free(s->index);
	free(s->by_base);
	s->index = t;
	s->by_base = b;
	s->index_mask = size - 1;
	for (size_t i = 0; i < s->n; i++) {
		*index_slot(s, &s->mods[i]) = (uint32_t)i;
		uint32_t *bs = base_slot(s, s->mods[i].base);
		if (*bs == NO_MODULE || s->mods[*bs].seq < s->mods[i].seq)
			*bs = (uint32_t)i;
	}
	return 0;
}

/* A new life of m from now on; -1 when out of memory. */
static int life_begin(struct module *m, uint64_t now)
{
	if (m->nlives && m->lives[m->nlives - 1].gone == SYMBOLS_NOW)
		return 0; /* recorded again while mapped */
	if (m->nlives == m->cap_lives) {
		size_t cap = m->cap_lives ? m->cap_lives * 2 : 1;
		struct life *v = realloc(m->lives, cap * sizeof(*v));
		if (!v)
			return -1;
		m->lives = v;
		m->cap_lives = cap;
	}
	m->lives[m->nlives++] = (struct life){ now, SYMBOLS_NOW };
	return 0;
}

int symbols_module(struct symbols *s, const struct hs_record *rec)
{
	struct module m = {
		.path = (char *)rec->str,
		.path_len = rec->str_len,
		.build_id_len = rec->build_id_len < BUILD_ID_MAX
					? rec->build_id_len
					: BUILD_ID_MAX,
		.base = rec->base,
		.lo = UINT64_MAX,
	};
	memcpy(m.build_id, rec->build_id, m.build_id_len);
	for (unsigned i = 0; i < rec->nseg; i++) {
		uint64_t lo = rec->base + rec->segs[i].vaddr;
		uint64_t hi = lo + rec->segs[i].memsz;
		if (lo < m.lo)
			m.lo = lo;
		if (hi > m.hi)
			m.hi = hi;
	}
	if (!rec->nseg) {
		m.lo = rec->base;
		m.hi = rec->base + 1;
	}
	m.seq = ++s->seq;
	uint64_t now = ++s->clock;
	if (module_room(s))
		return hs_error("out of memory");
	uint32_t *slot = index_slot(s, &m);
	if (*slot != NO_MODULE) { /* loaded again: now the newest */
		s->mods[*slot].seq = m.seq;
		*base_slot(s, m.base) = *slot;
		if (life_begin(&s->mods[*slot], now))
			return hs_error("out of memory");
		return 0;
	}
	if (s->n == MODULES_MAX)
		return hs_error("corrupt trace: more than %u distinct modules",
				MODULES_MAX);
	m.path = malloc(rec->str_len + 1);
	if (!m.path)
		return hs_error("out of memory");
	memcpy(m.path, rec->str, rec->str_len);
	m.path[rec->str_len] = 0;
	if (life_begin(&m, now)) {
		free(m.path);
		return hs_error("out of memory");
	}
	*slot = (uint32_t)s->n;
	*base_slot(s, m.base) = (uint32_t)s->n;
	s->mods[s->n++] = m;
	return 0;
}

void symbols_module_gone(struct symbols *s, uint64_t base)
{
	uint64_t now = ++s->clock;
	if (!s->n)
		return;
	uint32_t i = *base_slot(s, base);
	if (i == NO_MODULE)
		return;
	struct module *m = &s->mods[i];
	if (m->nlives && m->lives[m->nlives - 1].gone == SYMBOLS_NOW)
		m->lives[m->nlives - 1].gone = now;
}

uint64_t symbols_clock(const struct symbols *s)
{
	return s->clock;
}

size_t symbols_module_count(const struct symbols *s)
{
	return s->n;
}

size_t symbols_stale(const struct symbols *s, const char **first)
{
	size_t n = 0;
	*first = NULL;
	for (size_t i = 0; i < s->n; i++) {
		if (!s->mods[i].stale || !s->mods[i].used)
			continue;
		if (!n++)
			*first = s->mods[i].path;
	}
	return n;
}

/* The load time of m's first life not gone at clock `when` (a life gone
 * later), or SYMBOLS_NOW when every life ended by then. */
static uint64_t mapped_since(const struct module *m, uint64_t when)
{
	size_t lo = 0, hi = m->nlives;
	while (lo < hi) { /* lives are in order, and so are their ends */
		size_t mid = lo + (hi - lo) / 2;
		if (m->lives[mid].gone > when)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < m->nlives ? m->lives[lo].load : SYMBOLS_NOW;
}

/* The module that covered ip at clock `when`: of those not unloaded by
 * then, the one loaded first (a stack node that reaches into a new
 * library comes before the library's module record, and a library that
 * reuses the range of one unloaded comes after that one's module-gone).
 * when == SYMBOLS_NOW, or none left: the newest. */
static struct module *find_module_at(const struct symbols *s, uint64_t ip,
				     uint64_t when)
{
	struct module *found = NULL, *newest = NULL;
	uint64_t found_since = SYMBOLS_NOW;
	for (size_t i = 0; i < s->n; i++) {
		struct module *m = &s->mods[i];
		if (ip < m->lo || ip >= m->hi)
			continue;
		if (!newest || m->seq > newest->seq)
			newest = m;
		uint64_t since = when == SYMBOLS_NOW ? SYMBOLS_NOW
						     : mapped_since(m, when);
		if (since < found_since) {
			found = m;
			found_since = since;
		}
	}
	return found ? found : newest;
}

static struct module *find_module(const struct symbols *s, uint64_t ip)
{
	return find_module_at(s, ip, SYMBOLS_NOW);
}

/* 1 if path is a runtime library whose frames only wrap malloc
 * (libstdc++'s operator new, libc, libgcc): not an allocation site. */
static int is_runtime(const char *path)
{
	static const char *const runtimes[] = { "libstdc++.so", "libc++.so",
						"libc++abi.so", "libc.so",
						"libgcc_s.so" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		if (!strncmp(base, runtimes[i], strlen(runtimes[i])))
			return 1;
	return 0;
}

int symbols_in_runtime(void *symbols, uint64_t ip)
{
	const struct module *m = find_module(symbols, ip);
	return m && is_runtime(m->path);
}

/* Hands each of mods[0, n) whose file (or a debug file with its build-id)
 * is found to libdwfl, between dwfl_report_begin*() and _end(); the rest
 * stay unresolved. */
static void report_range(Dwfl *dwfl, const char *user_dir,
			 struct module *mods, size_t n, unsigned layer)
{
	char alt[4200];
	for (size_t i = 0; i < n; i++) {
		struct module *m = &mods[i];
		if (m->layer != layer)
			continue;
		const char *file = NULL;
		if (m->path[0] == '/' &&
		    debugfile_same_build(m->path, m->build_id, m->build_id_len))
			file = m->path;
		else if (debugfile_by_build_id(user_dir, m->build_id,
					       m->build_id_len, alt,
					       sizeof(alt)) ||
			 debugfile_by_build_id("/usr/lib/debug", m->build_id,
					       m->build_id_len, alt,
					       sizeof(alt)))
			file = alt;
		else
			m->stale = m->path[0] == '/' &&
				   access(m->path, R_OK) == 0;
		if (file) /* NULL on overlap with a module reported before */
			dwfl_report_elf(dwfl, m->path, file, -1, m->base,
					false);
	}
}

/* What resolving a frame in dm loads first: symbols, DWARF, the debug
 * file (runtime libraries: symbols only).  Only for the modules every stack passes through, the executable
 * (the first module) and libc, and libstdc++ for C++ allocations: the
 * others are loaded if their frames are resolved, as without a preload. */
static int load_module(Dwfl_Module *dm, void **user, const char *name,
		       Dwarf_Addr start, void *arg)
{
	(void)user, (void)start;
	struct preload *p = arg;
	Dwarf_Addr bias;
	if (atomic_load(&p->stop))
		return DWARF_CB_ABORT;
	if (strcmp(name, p->mods[0].path) != 0 && !is_runtime(name))
		return DWARF_CB_OK;
	dwfl_module_getsymtab(dm);
	if (!is_runtime(name)) /* only their symbols are used */
		dwfl_module_getdwarf(dm, &bias);
	return DWARF_CB_OK;
}

static void *preload_run(void *arg)
{
	struct preload *p = arg;
	p->dwfl = dwfl_begin(&p->s->cb);
	if (!p->dwfl)
		return NULL;
	dwfl_report_begin(p->dwfl);
	report_range(p->dwfl, p->s->user_dir, p->mods, p->n, 0);
	dwfl_report_end(p->dwfl, NULL, NULL);
	dwfl_getmodules(p->dwfl, load_module, p, 0);
	return NULL;
}

int symbols_preload(struct symbols *s)
{
	if (s->preload_tried)
		return 1;
	if (!s->n)
		return 0;
	/* on any failure here the modules are loaded when resolving */
	s->preload_tried = 1;
	struct preload *p = calloc(1, sizeof(*p));
	if (!p || !(p->mods = malloc(s->n * sizeof(*p->mods))))
		goto fail;
	memcpy(p->mods, s->mods, s->n * sizeof(*p->mods));
	p->n = s->n;
	p->s = s;
	atomic_init(&p->stop, 0);
	elf_version(EV_CURRENT);
	if (pthread_create(&p->thread, NULL, preload_run, p) != 0)
		goto fail;
	s->preload = p;
	return 1;
fail:
	if (p)
		free(p->mods);
	free(p);
	return 1;
}

/* Waits for the preload thread: its Dwfl, holding the first modules, and
 * their stale flags copied back. */
static Dwfl *preload_join(struct symbols *s)
{
	struct preload *p = s->preload;
	pthread_join(p->thread, NULL);
	Dwfl *dwfl = p->dwfl;
	if (dwfl)
		for (size_t i = 0; i < p->n; i++)
			s->mods[i].stale = p->mods[i].stale;
	free(p->mods);
	free(p);
	s->preload = NULL;
	return dwfl;
}

/* Overlapping modules beyond this many stay in layer 0 (a corrupt
 * trace): libdwfl then leaves them out, as it did before layers. */
#define OVERLAPPING_MAX 1024

static int by_lo(const void *x, const void *y, void *arg)
{
	const struct module *m = arg;
	uint64_t a = m[*(const uint32_t *)x].lo, b = m[*(const uint32_t *)y].lo;
	return a < b ? -1 : a > b;
}

static int overlap(const struct module *a, const struct module *b)
{
	return a->lo < b->hi && b->lo < a->hi;
}

#define UNPLACED UINT32_MAX

static int by_index(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* Puts each module from `from` on that overlaps another module in the
 * first layer where it overlaps none (libdwfl takes no overlapping
 * modules), in the order they were recorded; the others, and mods[0,
 * from) (preloaded), stay in layer 0.  Returns the number of layers. */
static size_t assign_layers(struct symbols *s, size_t from)
{
	size_t n = s->n, k = 0, layers = 1;
	uint32_t *order = malloc(n * sizeof(*order));
	uint32_t *over = malloc(n * sizeof(*over));
	if (!order || !over)
		goto out;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), by_lo, s->mods);
	/* of each overlapping pair, the later by start begins below the
	 * furthest end so far: it, and the module of that end, move */
	uint64_t reach = 0;
	uint32_t reach_i = UNPLACED;
	for (size_t j = 0; j < n; j++) {
		uint32_t idx = order[j];
		struct module *m = &s->mods[idx];
		if (j && m->lo < reach) {
			uint32_t two[2] = { idx, reach_i };
			for (int t = 0; t < 2; t++) {
				struct module *x = &s->mods[two[t]];
				if (two[t] >= from && x->layer != UNPLACED &&
				    k < OVERLAPPING_MAX) {
					x->layer = UNPLACED;
					over[k++] = two[t];
				}
			}
		}
		if (m->hi > reach) {
			reach = m->hi;
			reach_i = idx;
		}
	}
	qsort(over, k, sizeof(*over), by_index);
	for (size_t j = 0; j < k; j++) {
		struct module *m = &s->mods[over[j]];
		for (unsigned l = 0;; l++) {
			int clash = 0;
			for (size_t i = 0; i < n && !clash; i++)
				clash = s->mods[i].layer == l &&
					overlap(&s->mods[i], m);
			if (!clash) {
				m->layer = l;
				layers = l + 1 > layers ? l + 1 : layers;
				break;
			}
		}
	}
out:
	if (!order || !over) /* out of memory: as without layers */
		for (size_t i = 0; i < n; i++)
			s->mods[i].layer = 0;
	free(order);
	free(over);
	return layers;
}

/* Hands every module to libdwfl: the first ones as preloaded, the rest
 * (recorded later) here. */
static void report_modules(struct symbols *s)
{
	size_t from = s->preload ? s->preload->n : 0;
	s->reported = 1;
	if (s->preload) {
		/* what it has not loaded yet is loaded when needed */
		atomic_store(&s->preload->stop, 1);
		s->dwfl = preload_join(s);
	} else {
		elf_version(EV_CURRENT);
		s->dwfl = dwfl_begin(&s->cb);
	}
	if (!s->dwfl || (from && from == s->n))
		return;
	size_t layers = assign_layers(s, from);
	if (from)
		dwfl_report_begin_add(s->dwfl);
	else
		dwfl_report_begin(s->dwfl);
	report_range(s->dwfl, s->user_dir, s->mods ? s->mods + from : NULL,
		     s->n - from, 0);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (layers < 2 || !(s->layers = calloc(layers, sizeof(*s->layers))))
		return;
	s->nlayers = layers;
	s->layers[0] = s->dwfl;
	for (unsigned l = 1; l < layers; l++) {
		Dwfl *d = s->layers[l] = dwfl_begin(&s->cb);
		if (!d)
			continue;
		dwfl_report_begin(d);
		report_range(d, s->user_dir, s->mods + from, s->n - from, l);
		dwfl_report_end(d, NULL, NULL);
	}
}

/* The Dwfl that holds m. */
static Dwfl *dwfl_of(const struct symbols *s, const struct module *m)
{
	if (!m->layer)
		return s->dwfl;
	return m->layer < s->nlayers ? s->layers[m->layer] : NULL;
}

static char *demangled(struct symbols *s, const char *name)
{
	if (!name)
		return NULL;
	/* symbol versions (memcpy@@GLIBC_2.14) say nothing about a stack */
	const char *at = strchr(name, '@');
	char plain[512];
	if (at && at > name && (size_t)(at - name) < sizeof(plain)) {
		memcpy(plain, name, (size_t)(at - name));
		plain[at - name] = 0;
		name = plain;
	}
	if (name[0] == '_' && name[1] == 'Z') {
		if (!s->demangle_tried) {
			s->demangle_tried = 1;
			if (__cxa_demangle) {
				s->demangle = __cxa_demangle;
			} else {
				s->libstdcxx = dlopen("libstdc++.so.6",
						      RTLD_LAZY | RTLD_LOCAL);
				if (s->libstdcxx)
					*(void **)&s->demangle = dlsym(
						s->libstdcxx, "__cxa_demangle");
			}
		}
		int status = -1;
		char *d = s->demangle ? s->demangle(name, NULL, NULL, &status)
				      : NULL;
		if (d && status == 0)
			return d;
		free(d);
	}
	return strdup(name);
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n;
}

static int push(struct frame **v, size_t *n, size_t *cap, struct frame f)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct frame *nv = realloc(*v, c * sizeof(*nv));
		if (!nv) {
			free(f.function);
			free(f.file);
			return hs_error("out of memory");
		}
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = f;
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The CU holding address a, by walking every CU: for modules without
 * .debug_aranges (clang's default), where libdwfl's lookup finds none. */
static Dwarf_Die *cu_by_scan(Dwfl_Module *dm, Dwarf_Addr a,
			     Dwarf_Addr *bias, Dwarf_Die *out)
{
	Dwarf *dw = dwfl_module_getdwarf(dm, bias);
	Dwarf_CU *cu = NULL;
	if (!dw)
		return NULL;
	while (dwarf_get_units(dw, cu, &cu, NULL, NULL, out, NULL) == 0)
		if (dwarf_tag(out) == DW_TAG_compile_unit &&
		    dwarf_haspc(out, a - *bias) > 0)
			return out;
	return NULL;
}

/* ---- the scopes of code around an address ---- */

#define SCOPE_DEPTH 64 /* nested scopes kept; deeper ones are not searched */

/* DIEs whose code an address can be in, and DIEs without code that hold
 * such DIEs (the same as libdw's own search goes through). */
static int code_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_entry_point ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt;
}

static int holds_scopes(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module ||
	       tag == DW_TAG_class_type || tag == DW_TAG_structure_type;
}

/* Appends to path[d..), outermost first, the DIEs under parent whose code
 * holds pc, each inside the one before: a function and the calls inlined
 * into it, down to the innermost.  Returns the path's new length (d: none
 * there).  Not dwarf_getscopes: that stops at the innermost inlined call
 * and goes on from its abstract definition, so a call inlined into
 * another inlined call lost the outer one's frame; and where it cannot
 * find that definition (in another unit after link-time optimization)
 * it finds nothing and leaks what it allocated (elfutils 0.188).  levels
 * bounds the search on malformed or cyclic debug information. */
static int scope_path(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *path,
		      int d, int levels)
{
	Dwarf_Die child;
	if (levels <= 0 || dwarf_child(parent, &child) != 0)
		return d;
	do {
		int tag = dwarf_tag(&child);
		if (code_scope(tag)) {
			if (dwarf_haspc(&child, pc) != 1)
				continue;
			if (d == SCOPE_DEPTH)
				return d;
			path[d] = child;
			return scope_path(&path[d], pc, path, d + 1,
					  levels - 1);
		}
		Dwarf_Die unit, *in = &child;
		Dwarf_Attribute at;
		if (tag == DW_TAG_imported_unit) /* dwz's shared DIEs */
			in = dwarf_formref_die(dwarf_attr(&child, DW_AT_import,
							  &at),
					       &unit);
		else if (!holds_scopes(tag))
			continue;
		int e = in ? scope_path(in, pc, path, d, levels - 1) : d;
		if (e > d)
			return e;
	} while (dwarf_siblingof(&child, &child) == 0);
	return d;
}

int symbols_resolve(struct symbols *s, uint64_t ip, struct frame **frames,
		    size_t *n, size_t *cap)
{
	return symbols_resolve_at(s, ip, SYMBOLS_NOW, frames, n, cap);
}

/* The frames of ip in module m (or none), appended. */
static int resolve(struct symbols *s, uint64_t ip, struct module *m,
		   struct frame **frames, size_t *n, size_t *cap)
{
	struct frame f = { .address = ip };
	if (m) {
		f.module = m->path;
		f.offset = ip - m->base;
		m->used = 1;
	}
	if (!s->reported)
		report_modules(s);
	/* a return address: the call is the instruction before it */
	Dwarf_Addr a = ip ? ip - 1 : 0;
	Dwfl *dwfl = m ? dwfl_of(s, m) : NULL;
	Dwfl_Module *dm = dwfl ? dwfl_addrmodule(dwfl, a) : NULL;
	if (!dm)
		return push(frames, n, cap, f);

	GElf_Off off;
	GElf_Sym sym;
	const char *symname = dwfl_module_addrinfo(dm, a, &off, &sym, NULL,
						   NULL, NULL);
	/* the runtime libraries' frames by their symbols alone: their
	 * source lines are not the program's, and their debug files (say
	 * libc6-dbg's, compressed) would cost more to read than the rest */
	const int lines = !is_runtime(m->path);
	Dwfl_Line *ln = lines ? dwfl_module_getsrc(dm, a) : NULL;
	int lineno = 0;
	const char *src = ln ? dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL,
					     NULL)
			     : NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = lines ? dwfl_module_addrdie(dm, a, &bias) : NULL,
		  cu_mem;
	if (lines && !cu && (cu = cu_by_scan(dm, a, &bias, &cu_mem)) &&
	    !src) {
		/* no .debug_aranges (clang): the line from the CU found */
		Dwarf_Line *dl = dwarf_getsrc_die(cu, a - bias);
		if (dl && (src = dwarf_linesrc(dl, NULL, NULL)) &&
		    dwarf_lineno(dl, &lineno) != 0)
			lineno = 0;
	}
	Dwarf_Die path[SCOPE_DEPTH];
	int np = cu ? scope_path(cu, a - bias, path, 0, SCOPE_DEPTH) : 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	const char *file = src;
	unsigned line = lineno > 0 ? (unsigned)lineno : 0;
	size_t before = *n;
	/* innermost scope first: each inlined call is a frame whose caller
	 * is the next scope, at the call site the inlined DIE records */
	for (int i = np - 1; i >= 0; i--) {
		Dwarf_Die *scope = &path[i];
		int tag = dwarf_tag(scope);
		if (tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_subprogram)
			continue;
		struct frame g = f;
		const char *name = die_name(scope);
		if (tag == DW_TAG_subprogram && symname)
			name = symname;
		g.function = demangled(s, name);
		g.file = dup_or_null(file);
		g.line = line;
		g.inlined = tag == DW_TAG_inlined_subroutine;
		if (push(frames, n, cap, g))
			return -1;
		if (tag == DW_TAG_subprogram)
			break;
		Dwarf_Attribute at;
		Dwarf_Word cf = 0, cl = 0;
		file = NULL;
		line = 0;
		if (files &&
		    dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &at),
				    &cf) == 0 && cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &at),
				    &cl) == 0)
			line = (unsigned)cl;
	}
	if (*n > before && (*frames)[*n - 1].inlined && symname) {
		/* the scopes ended inside inlined code: add its host */
		struct frame g = f;
		g.function = demangled(s, symname);
		g.file = dup_or_null(file);
		g.line = line;
		return push(frames, n, cap, g);
	}
	if (*n == before) {
		f.function = demangled(s, symname);
		f.file = dup_or_null(src);
		f.line = line;
		return push(frames, n, cap, f);
	}
	return 0;
}

/* A frame with strings of its own; -1 when out of memory. */
static int frame_copy(struct frame *to, const struct frame *from)
{
	*to = *from;
	to->function = from->function ? strdup(from->function) : NULL;
	to->file = from->file ? strdup(from->file) : NULL;
	if ((from->function && !to->function) || (from->file && !to->file)) {
		free(to->function);
		free(to->file);
		return -1;
	}
	return 0;
}

/* The memo of ip in module number mod (0: none): its slot. */
static size_t memo_slot(const struct symbols *s, uint64_t ip, uint32_t mod)
{
	size_t h = (size_t)(((ip ^ (uint64_t)mod << 40) *
			     0x9e3779b97f4a7c15ull) >> 20) & s->memo_mask;
	while (s->memo[h].used &&
	       (s->memo[h].ip != ip || s->memo[h].mod != mod))
		h = (h + 1) & s->memo_mask;
	return h;
}

static int memo_grow(struct symbols *s)
{
	size_t cap = s->memo ? (s->memo_mask + 1) * 2 : 1024;
	struct memo *old = s->memo;
	size_t old_cap = old ? s->memo_mask + 1 : 0;
	s->memo = calloc(cap, sizeof(*s->memo));
	if (!s->memo) {
		s->memo = old;
		return -1;
	}
	s->memo_mask = cap - 1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].used)
			s->memo[memo_slot(s, old[i].ip, old[i].mod)] = old[i];
	free(old);
	return 0;
}

/* Every stack shown passes through the same frames (the interpreter's,
 * main's): each address is resolved once, its frames copied after. */
int symbols_resolve_at(struct symbols *s, uint64_t ip, uint64_t when,
		       struct frame **frames, size_t *n, size_t *cap)
{
	struct module *m = find_module_at(s, ip, when);
	uint32_t mod = m ? (uint32_t)(m - s->mods) + 1 : 0;
	if (s->memo) {
		const struct memo *e = &s->memo[memo_slot(s, ip, mod)];
		if (e->used) {
			for (size_t i = 0; i < e->n; i++) {
				struct frame f;
				if (frame_copy(&f, &e->frames[i]) ||
				    push(frames, n, cap, f))
					return hs_error("out of memory");
			}
			if (m)
				m->used = 1;
			return 0;
		}
	}
	size_t before = *n;
	if (resolve(s, ip, m, frames, n, cap))
		return -1;
	if ((s->nmemo + 1) * 2 > (s->memo ? s->memo_mask + 1 : 0) &&
	    memo_grow(s))
		return 0; /* not remembered: resolved again next time */
	struct frame *copy = calloc(*n - before + 1, sizeof(*copy));
	size_t k = 0;
	while (copy && k < *n - before &&
	       !frame_copy(&copy[k], &(*frames)[before + k]))
		k++;
	if (!copy || k < *n - before) {
		symbols_frames_free(copy, k);
		return 0;
	}
	s->memo[memo_slot(s, ip, mod)] =
		(struct memo){ ip, mod, 1, k, copy };
	s->nmemo++;
	return 0;
}

void symbols_frames_free(struct frame *f, size_t n)
{
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		free(f[i].function);
		free(f[i].file);
	}
	free(f);
}

uint32_t symbols_module_number(const struct symbols *s, uint64_t ip,
			       uint64_t when)
{
	const struct module *m = find_module_at(s, ip, when);
	return m ? (uint32_t)(m - s->mods) + 1 : 0;
}

int symbols_functions(struct symbols *s, uint64_t ip, uint64_t when,
		      symbols_function_fn fn, void *ctx, int *inlined)
{
	struct module *m = find_module_at(s, ip, when);
	*inlined = 0;
	if (!m)
		return 0;
	if (!s->reported)
		report_modules(s);
	Dwfl *dwfl = dwfl_of(s, m);
	Dwfl_Module *dm = dwfl ? dwfl_addrmodule(dwfl, ip ? ip - 1 : 0)
			       : NULL;
	if (!dm)
		return 0;
	Dwarf_Addr bias;
	/* as resolve reads the runtimes': by their symbols alone */
	*inlined = !is_runtime(m->path) && dwfl_module_getdwarf(dm, &bias);
	if (*inlined)
		return 0;
	int n = dwfl_module_getsymtab(dm);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &addr,
							   &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !sym.st_size || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		char *d = demangled(s, name);
		if (!d)
			return hs_error("out of memory");
		int rc = fn(ctx, addr, addr + sym.st_size, d);
		free(d);
		if (rc)
			return -1;
	}
	return 0;
}
