/* Lookups by the GNU hash table where an object has one, else by the SysV
 * one.  Every word read is first checked to lie, aligned, in one of the
 * object's readable loaded segments: a stripped or odd object (the vDSO's
 * tables are not relocated) is passed over, never read outside its
 * mappings.  The objects are listed, and searched, inside one call of
 * dl_iterate_phdr, which holds the loader's list lock meanwhile: none of
 * them can be unloaded under the search. */
#include "elfsym.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "../base/rmem.h"

#define VERSYM_HIDDEN 0x8000
#define MAX_NAME 1024 /* longer names are not what the recorder looks up */
#define MAX_OBJECTS 4096 /* searched; more loaded objects are left out */

/* What the lookups need of an object's dynamic section. */
struct dyn {
	const struct dl_phdr_info *info;
	const ElfW(Sym) *sym;
	const char *str;
	size_t strsz;
	const uint32_t *gnu, *sysv;
	const ElfW(Versym) *versym;
	uint64_t flags_1;
	const ElfW(Dyn) *dyn; /* the dynamic section, ndyn entries */
	size_t ndyn;
	const char *soname; /* DT_SONAME's, or NULL */
};

/* [p, p + len) inside one of the object's loaded segments (readable
 * ones, if readable). */
static int in_segment(const struct dl_phdr_info *info, const void *p,
		      size_t len, int readable)
{
	uintptr_t a = (uintptr_t)p;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD &&
		    (!readable || (ph->p_flags & PF_R)) && a >= lo &&
		    a - lo <= ph->p_memsz && len <= ph->p_memsz - (a - lo))
			return 1;
	}
	return 0;
}

/* [p, p + len) readable, p aligned to align. */
static int loaded(const struct dl_phdr_info *info, const void *p, size_t len,
		  size_t align)
{
	return !((uintptr_t)p & (align - 1)) && in_segment(info, p, len, 1);
}

/* A dynamic entry's address: relocated by the loader already, or (the
 * vDSO's) relative to the object's base; NULL if neither is loaded (and
 * aligned to align).  NULL for 0. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v,
			   size_t len, size_t align)
{
	if (!v)
		return NULL;
	if (loaded(info, (const void *)v, len, align))
		return (const void *)v;
	if (loaded(info, (const void *)(info->dlpi_addr + v), len, align))
		return (const void *)(info->dlpi_addr + v);
	return NULL;
}

/* The string at offset off of the object's string table, or NULL. */
static const char *dyn_str(const struct dyn *d, ElfW(Xword) off)
{
	if (off >= d->strsz || !memchr(d->str + off, 0, d->strsz - off))
		return NULL;
	return d->str + off;
}

/* The object's tables; 0 when it has no symbol table to read. */
static int dyn_read(const struct dl_phdr_info *info, struct dyn *d)
{
	memset(d, 0, sizeof(*d));
	d->info = info;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			d->dyn = (const void *)(info->dlpi_addr +
						info->dlpi_phdr[i].p_vaddr);
			d->ndyn = info->dlpi_phdr[i].p_memsz / sizeof(*d->dyn);
		}
	if (!d->dyn || !loaded(info, d->dyn, d->ndyn * sizeof(*d->dyn),
			       _Alignof(ElfW(Dyn)))) {
		d->dyn = NULL;
		return 0;
	}
	ElfW(Addr) sym = 0, str = 0, gnu = 0, sysv = 0, versym = 0;
	ElfW(Xword) soname = 0;
	for (size_t i = 0; i < d->ndyn && d->dyn[i].d_tag != DT_NULL; i++) {
		ElfW(Addr) v = d->dyn[i].d_un.d_ptr;
		switch (d->dyn[i].d_tag) {
		case DT_SYMTAB: sym = v; break;
		case DT_STRTAB: str = v; break;
		case DT_STRSZ: d->strsz = d->dyn[i].d_un.d_val; break;
		case DT_GNU_HASH: gnu = v; break;
		case DT_HASH: sysv = v; break;
		case DT_VERSYM: versym = v; break;
		case DT_FLAGS_1: d->flags_1 = d->dyn[i].d_un.d_val; break;
		case DT_SONAME: soname = d->dyn[i].d_un.d_val; break;
		}
	}
	d->sym = dyn_ptr(info, sym, sizeof(ElfW(Sym)), _Alignof(ElfW(Sym)));
	d->str = dyn_ptr(info, str, d->strsz, 1);
	d->gnu = dyn_ptr(info, gnu, 4 * sizeof(uint32_t), 4);
	d->sysv = dyn_ptr(info, sysv, 2 * sizeof(uint32_t), 4);
	d->versym = dyn_ptr(info, versym, sizeof(ElfW(Versym)), 2);
	d->soname = d->str && soname ? dyn_str(d, soname) : NULL;
	return d->sym && d->str && d->strsz && (d->gnu || d->sysv);
}

/* Symbol i, or NULL if it lies outside the object. */
static const ElfW(Sym) *sym_at(const struct dyn *d, uint32_t i)
{
	const ElfW(Sym) *s = d->sym + i;
	return loaded(d->info, s, sizeof(*s), 1) ? s : NULL;
}

/* Symbol i's name is name (len bytes and a NUL). */
static int named(const struct dyn *d, const ElfW(Sym) *s, const char *name,
		 size_t len)
{
	return s->st_name < d->strsz && d->strsz - s->st_name > len &&
	       memcmp(d->str + s->st_name, name, len + 1) == 0;
}

/* Symbol i is a definition a reference from elsewhere binds to. */
static int defines(const struct dyn *d, const ElfW(Sym) *s, uint32_t i)
{
	int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
	int vis = ELF64_ST_VISIBILITY(s->st_other);
	if (s->st_shndx == SHN_UNDEF || !s->st_value ||
	    (type != STT_FUNC && type != STT_OBJECT) ||
	    (bind != STB_GLOBAL && bind != STB_WEAK &&
	     bind != STB_GNU_UNIQUE) ||
	    (vis != STV_DEFAULT && vis != STV_PROTECTED))
		return 0;
	if (d->versym) {
		const ElfW(Versym) *v = d->versym + i;
		if (!loaded(d->info, v, sizeof(*v), 1) ||
		    (*v & VERSYM_HIDDEN))
			return 0;
	}
	return 1;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0;
	for (; *s; s++) {
		h = (h << 4) + (uint8_t)*s;
		h ^= (h >> 24) & 0xf0;
	}
	return h & 0x0fffffff;
}

/* The GNU table's buckets and chains (bloom words skipped), or 0. */
static int gnu_table(const struct dyn *d, uint32_t *nbuckets, uint32_t *first,
		     const uint32_t **buckets, const uint32_t **chain)
{
	const uint32_t *h = d->gnu;
	*nbuckets = h[0];
	*first = h[1];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	*buckets = (const uint32_t *)(bloom + h[2]);
	*chain = *buckets + *nbuckets;
	return *nbuckets && h[2] < (1u << 24) && *nbuckets < (1u << 28) &&
	       loaded(d->info, *buckets, *nbuckets * sizeof(uint32_t), 1);
}

/* Entry i of the GNU table's chains (which start at symbol first), or 1
 * (the end of a chain) if it lies outside the object. */
static uint32_t gnu_chain(const struct dyn *d, const uint32_t *chain,
			  uint32_t first, uint32_t i)
{
	const uint32_t *c = chain + (i - first);
	return loaded(d->info, c, sizeof(*c), 1) ? *c : 1;
}

static void *dyn_lookup(const struct dyn *d, const char *name)
{
	size_t len = strnlen(name, MAX_NAME);
	uintptr_t base = d->info->dlpi_addr;
	uint32_t nb, first;
	const uint32_t *buckets, *chain;
	if (len == MAX_NAME)
		return NULL;
	if (d->gnu && gnu_table(d, &nb, &first, &buckets, &chain)) {
		uint32_t h = gnu_hash(name);
		for (uint32_t i = buckets[h % nb]; i >= first; i++) {
			uint32_t c = gnu_chain(d, chain, first, i);
			const ElfW(Sym) *s = sym_at(d, i);
			if (!s)
				return NULL;
			if ((c | 1) == (h | 1) && named(d, s, name, len) &&
			    defines(d, s, i))
				return (void *)(base + s->st_value);
			if (c & 1)
				return NULL;
		}
		return NULL;
	}
	const uint32_t *h = d->sysv;
	if (!h)
		return NULL;
	uint32_t nchain = h[1];
	nb = h[0];
	const uint32_t *bucket = h + 2;
	chain = bucket + nb;
	if (!nb || !loaded(d->info, bucket, ((size_t)nb + nchain) * 4, 1))
		return NULL;
	uint32_t i = bucket[sysv_hash(name) % nb];
	for (uint32_t steps = 0; i && i < nchain && steps < nchain;
	     steps++, i = chain[i]) {
		const ElfW(Sym) *s = sym_at(d, i);
		if (s && named(d, s, name, len) && defines(d, s, i))
			return (void *)(base + s->st_value);
	}
	return NULL;
}

/* How many symbols the table has: the SysV table says; the GNU one's is
 * one past the end of its last chain.  0 if unknown. */
static uint32_t dyn_count(const struct dyn *d)
{
	uint32_t nb, first, last = 0;
	const uint32_t *buckets, *chain;
	if (!d->gnu || !gnu_table(d, &nb, &first, &buckets, &chain))
		return d->sysv ? d->sysv[1] : 0;
	for (uint32_t b = 0; b < nb; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < first)
		return first;
	while (!(gnu_chain(d, chain, first, last) & 1))
		last++;
	return last + 1;
}

/* ---- the loaded objects, listed under the loader's list lock ---- */

struct object {
	struct dl_phdr_info info;
	struct dyn d; /* d.dyn NULL: no dynamic section read */
	const char *base; /* dlpi_name's last part */
	int queued;
};

struct objects {
	struct object *o;
	int n;
	/* the search's question and answer */
	const char *name;
	const void *first, *skip, *addr;
	int skipped; /* the object holding skip, or -1 */
	void *found;
	int permanent;
};

static int startup_objects; /* elfsym_note_startup's count */

static int holds(const struct dl_phdr_info *info, const void *addr)
{
	return addr && in_segment(info, addr, 1, 0);
}

static int list_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects *l = arg;
	(void)size;
	if (l->n == MAX_OBJECTS)
		return 1;
	struct object *o = &l->o[l->n++];
	o->info = *info;
	dyn_read(&o->info, &o->d);
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *slash = strrchr(name, '/');
	o->base = slash ? slash + 1 : name;
	return 0;
}

/* The object holding addr, or -1. */
static int holding(const struct objects *l, const void *addr)
{
	for (int i = 0; i < l->n; i++)
		if (holds(&l->o[i].info, addr))
			return i;
	return -1;
}

/* The loaded object a DT_NEEDED entry names, the first in load order
 * whose soname or file name it is; -1 if none. */
static int needed_object(const struct objects *l, const char *needed)
{
	const char *slash = strrchr(needed, '/');
	const char *base = slash ? slash + 1 : needed;
	for (int i = 0; i < l->n; i++) {
		const struct object *o = &l->o[i];
		if ((o->d.soname && !strcmp(o->d.soname, base)) ||
		    !strcmp(o->base, base))
			return i;
	}
	return -1;
}

/* Object i's definition of the name asked, unless it is to be skipped. */
static void *look_in(struct objects *l, int i)
{
	struct object *o = &l->o[i];
	if (!o->d.dyn || !o->d.sym || i == l->skipped)
		return NULL;
	return dyn_lookup(&o->d, l->name);
}

/* The group of object i, breadth first from it by DT_NEEDED, as the
 * loader's local scope of an object is: the first definition there. */
static void *look_in_group(struct objects *l, int from)
{
	/* the queue: the objects' indexes, each queued once */
	int *queue = rmem_map((size_t)l->n * sizeof(*queue));
	int head = 0, tail = 0;
	void *found = NULL;
	if (!queue)
		return NULL;
	queue[tail++] = from;
	l->o[from].queued = 1;
	while (head < tail && !found) {
		struct object *o = &l->o[queue[head++]];
		if ((found = look_in(l, (int)(o - l->o))))
			break;
		for (size_t i = 0; o->d.dyn && o->d.str && i < o->d.ndyn &&
				   o->d.dyn[i].d_tag != DT_NULL;
		     i++) {
			if (o->d.dyn[i].d_tag != DT_NEEDED)
				continue;
			const char *s = dyn_str(&o->d, o->d.dyn[i].d_un.d_val);
			int j = s ? needed_object(l, s) : -1;
			if (j >= 0 && !l->o[j].queued) {
				l->o[j].queued = 1;
				queue[tail++] = j;
			}
		}
	}
	rmem_unmap(queue, (size_t)l->n * sizeof(*queue));
	return found;
}

static void find_listed(struct objects *l)
{
	int from = holding(l, l->first);
	l->skipped = holding(l, l->skip);
	if (from >= 0)
		l->found = look_in_group(l, from);
	for (int i = 0; i < l->n && !l->found; i++)
		l->found = look_in(l, i);
}

static void permanent_listed(struct objects *l)
{
	int i = holding(l, l->addr);
	if (i < 0)
		return;
	/* glibc never unloads what was loaded at start-up */
	if (i < (startup_objects ? startup_objects : 1)) {
		l->permanent = 1;
		return;
	}
	const struct dyn *d = &l->o[i].d;
	if (!d->dyn || !d->sym)
		return;
	l->permanent = (d->flags_1 & DF_1_NODELETE) != 0;
	uint32_t n = l->permanent ? 0 : dyn_count(d);
	for (uint32_t k = 1; k < n && !l->permanent; k++) {
		const ElfW(Sym) *s = sym_at(d, k);
		if (!s)
			break;
		l->permanent = ELF64_ST_BIND(s->st_info) == STB_GNU_UNIQUE &&
			       s->st_shndx != SHN_UNDEF;
	}
}

/* Runs on the first object: lists them all (the lock is the loader's,
 * recursive, and held until the outer walk returns), then does the work
 * l->found or l->permanent asks for. */
static int with_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects *l = arg;
	(void)info, (void)size;
	size_t bytes = MAX_OBJECTS * sizeof(*l->o);
	l->o = rmem_map(bytes);
	if (!l->o)
		return 1;
	dl_iterate_phdr(list_one, l);
	if (l->name)
		find_listed(l);
	else
		permanent_listed(l);
	rmem_unmap(l->o, bytes);
	l->o = NULL;
	return 1;
}

void *elfsym_find(const char *name, const void *first, const void *skip)
{
	struct objects l = { .name = name, .first = first, .skip = skip };
	dl_iterate_phdr(with_objects, &l);
	return l.found;
}

int elfsym_permanent(const void *addr)
{
	struct objects l = { .addr = addr };
	dl_iterate_phdr(with_objects, &l);
	return l.permanent;
}

static int count_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size;
	++*(int *)arg;
	return 0;
}

void elfsym_note_startup(void)
{
	int n = 0;
	if (startup_objects)
		return;
	dl_iterate_phdr(count_one, &n);
	__atomic_store_n(&startup_objects, n, __ATOMIC_RELAXED);
}
