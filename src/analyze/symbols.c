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

struct symbols {
	struct module *mods;
	size_t n, cap;
	uint32_t *index; /* open addressing over mods, NO_MODULE: empty */
	size_t index_mask;
	uint64_t seq;
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
	for (size_t i = 0; i < s->n; i++)
		free(s->mods[i].path);
	free(s->mods);
	free(s->index);
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
	if (!t)
		return -1;
	memset(t, 0xff, size * sizeof(*t));
	free(s->index);
	s->index = t;
	s->index_mask = size - 1;
	for (size_t i = 0; i < s->n; i++)
		*index_slot(s, &s->mods[i]) = (uint32_t)i;
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
	if (module_room(s))
		return hs_error("out of memory");
	uint32_t *slot = index_slot(s, &m);
	if (*slot != NO_MODULE) { /* loaded again: now the newest */
		s->mods[*slot].seq = m.seq;
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
	*slot = (uint32_t)s->n;
	s->mods[s->n++] = m;
	return 0;
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

static struct module *find_module(const struct symbols *s, uint64_t ip)
{
	/* the newest: an address range reused after a dlclose */
	struct module *found = NULL;
	for (size_t i = 0; i < s->n; i++)
		if (ip >= s->mods[i].lo && ip < s->mods[i].hi &&
		    (!found || s->mods[i].seq > found->seq))
			found = &s->mods[i];
	return found;
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
			 struct module *mods, size_t n)
{
	char alt[4200];
	for (size_t i = 0; i < n; i++) {
		struct module *m = &mods[i];
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
	report_range(p->dwfl, p->s->user_dir, p->mods, p->n);
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
	if (from)
		dwfl_report_begin_add(s->dwfl);
	else
		dwfl_report_begin(s->dwfl);
	report_range(s->dwfl, s->user_dir, s->mods + from, s->n - from);
	dwfl_report_end(s->dwfl, NULL, NULL);
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

int symbols_resolve(struct symbols *s, uint64_t ip, struct frame **frames,
		    size_t *n, size_t *cap)
{
	struct module *m = find_module(s, ip);
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
	Dwfl_Module *dm = s->dwfl && m ? dwfl_addrmodule(s->dwfl, a) : NULL;
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
	Dwarf_Die *scopes = NULL;
	int ns = cu ? dwarf_getscopes(cu, a - bias, &scopes) : 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	const char *file = src;
	unsigned line = lineno > 0 ? (unsigned)lineno : 0;
	size_t before = *n;
	/* innermost scope first: each inlined call is a frame whose caller
	 * is the next scope, at the call site the inlined DIE records */
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_subprogram)
			continue;
		struct frame g = f;
		const char *name = die_name(&scopes[i]);
		if (tag == DW_TAG_subprogram && symname)
			name = symname;
		g.function = demangled(s, name);
		g.file = dup_or_null(file);
		g.line = line;
		g.inlined = tag == DW_TAG_inlined_subroutine;
		if (push(frames, n, cap, g)) {
			free(scopes);
			return -1;
		}
		if (tag == DW_TAG_subprogram)
			break;
		Dwarf_Attribute at;
		Dwarf_Word cf = 0, cl = 0;
		file = NULL;
		line = 0;
		if (files &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at),
				    &cf) == 0 && cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at),
				    &cl) == 0)
			line = (unsigned)cl;
	}
	free(scopes);
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
