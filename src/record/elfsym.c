/* Lookups by the GNU hash table where an object has one, else by the SysV
 * one.  Every word read is first checked to lie in one of the object's
 * loaded segments: a stripped or odd object (the vDSO's tables are not
 * relocated) is passed over, never read outside its mappings. */
#include "elfsym.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#define VERSYM_HIDDEN 0x8000
#define MAX_NAME 1024 /* longer names are not what the recorder looks up */

/* What the lookups need of an object's dynamic section. */
struct dyn {
	const struct dl_phdr_info *info;
	const ElfW(Sym) *sym;
	const char *str;
	size_t strsz;
	const uint32_t *gnu, *sysv;
	const ElfW(Versym) *versym;
	uint64_t flags_1;
};

/* [p, p + len) inside one of the object's loaded segments. */
static int loaded(const struct dl_phdr_info *info, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && a >= lo &&
		    a - lo <= ph->p_memsz && len <= ph->p_memsz - (a - lo))
			return 1;
	}
	return 0;
}

/* A dynamic entry's address: relocated by the loader already, or (the
 * vDSO's) relative to the object's base; NULL if neither is loaded. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v,
			   size_t len)
{
	if (loaded(info, (const void *)v, len))
		return (const void *)v;
	if (loaded(info, (const void *)(info->dlpi_addr + v), len))
		return (const void *)(info->dlpi_addr + v);
	return NULL;
}

/* The object's tables; 0 when it has no symbol table to read. */
static int dyn_read(const struct dl_phdr_info *info, struct dyn *d)
{
	const ElfW(Dyn) *dyn = NULL;
	size_t n = 0;
	memset(d, 0, sizeof(*d));
	d->info = info;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			dyn = (const void *)(info->dlpi_addr +
					     info->dlpi_phdr[i].p_vaddr);
			n = info->dlpi_phdr[i].p_memsz / sizeof(*dyn);
		}
	if (!dyn || !loaded(info, dyn, n * sizeof(*dyn)))
		return 0;
	ElfW(Addr) sym = 0, str = 0, gnu = 0, sysv = 0, versym = 0;
	for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
		ElfW(Addr) v = dyn[i].d_un.d_ptr;
		switch (dyn[i].d_tag) {
		case DT_SYMTAB: sym = v; break;
		case DT_STRTAB: str = v; break;
		case DT_STRSZ: d->strsz = dyn[i].d_un.d_val; break;
		case DT_GNU_HASH: gnu = v; break;
		case DT_HASH: sysv = v; break;
		case DT_VERSYM: versym = v; break;
		case DT_FLAGS_1: d->flags_1 = dyn[i].d_un.d_val; break;
		}
	}
	d->sym = dyn_ptr(info, sym, sizeof(ElfW(Sym)));
	d->str = dyn_ptr(info, str, d->strsz);
	d->gnu = gnu ? dyn_ptr(info, gnu, 4 * sizeof(uint32_t)) : NULL;
	d->sysv = sysv ? dyn_ptr(info, sysv, 2 * sizeof(uint32_t)) : NULL;
	d->versym = versym ? dyn_ptr(info, versym, sizeof(ElfW(Versym)))
			   : NULL;
	return d->sym && d->str && d->strsz && (d->gnu || d->sysv);
}

/* Symbol i, or NULL if it lies outside the object. */
static const ElfW(Sym) *sym_at(const struct dyn *d, uint32_t i)
{
	const ElfW(Sym) *s = d->sym + i;
	return loaded(d->info, s, sizeof(*s)) ? s : NULL;
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
		if (!loaded(d->info, v, sizeof(*v)) || (*v & VERSYM_HIDDEN))
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
	       loaded(d->info, *buckets, *nbuckets * sizeof(uint32_t));
}

/* Entry i of the GNU table's chains (which start at symbol first), or 1
 * (the end of a chain) if it lies outside the object. */
static uint32_t gnu_chain(const struct dyn *d, const uint32_t *chain,
			  uint32_t first, uint32_t i)
{
	const uint32_t *c = chain + (i - first);
	return loaded(d->info, c, sizeof(*c)) ? *c : 1;
}

static void *dyn_lookup(const struct dyn *d, const char *name)
{
	size_t len = strnlen(name, MAX_NAME);
	uintptr_t base = d->info->dlpi_addr;
	if (d->gnu) {
		uint32_t nb, first, h = gnu_hash(name);
		const uint32_t *buckets, *chain;
		if (!gnu_table(d, &nb, &first, &buckets, &chain))
			return NULL;
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
	uint32_t nb = h[0], nchain = h[1];
	const uint32_t *bucket = h + 2, *chain = bucket + nb;
	if (!nb || !loaded(d->info, bucket, ((size_t)nb + nchain) * 4))
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
	if (!d->gnu)
		return loaded(d->info, d->sysv, 8) ? d->sysv[1] : 0;
	uint32_t nb, first, last = 0;
	const uint32_t *buckets, *chain;
	if (!gnu_table(d, &nb, &first, &buckets, &chain))
		return 0;
	for (uint32_t b = 0; b < nb; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < first)
		return first;
	while (!(gnu_chain(d, chain, first, last) & 1))
		last++;
	return last + 1;
}

static int holds(const struct dl_phdr_info *info, const void *addr)
{
	return addr && loaded(info, addr, 1);
}

struct find {
	const char *name;
	const void *first, *skip;
	int pass; /* 0: the object holding first; 1: all in order */
	void *found;
};

static int find_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	struct dyn d;
	(void)size;
	if (holds(info, f->skip) || (f->pass == 0 && !holds(info, f->first)))
		return 0;
	if (dyn_read(info, &d))
		f->found = dyn_lookup(&d, f->name);
	/* the first object looked at on its own: no further */
	return f->found != NULL || f->pass == 0;
}

void *elfsym_find(const char *name, const void *first, const void *skip)
{
	struct find f = { name, first, skip, 0, NULL };
	if (first)
		dl_iterate_phdr(find_in, &f);
	if (!f.found) {
		f.pass = 1;
		dl_iterate_phdr(find_in, &f);
	}
	return f.found;
}

struct permanent {
	const void *addr;
	int index, answer; /* answer: -1 not found yet */
};

static int permanent_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct permanent *p = arg;
	struct dyn d;
	(void)size;
	if (!holds(info, p->addr)) {
		p->index++;
		return 0;
	}
	p->answer = p->index == 0; /* the main program */
	if (!p->answer && dyn_read(info, &d)) {
		p->answer = (d.flags_1 & DF_1_NODELETE) != 0;
		uint32_t n = p->answer ? 0 : dyn_count(&d);
		for (uint32_t i = 1; i < n && !p->answer; i++) {
			const ElfW(Sym) *s = sym_at(&d, i);
			if (!s)
				break;
			p->answer = ELF64_ST_BIND(s->st_info) ==
					    STB_GNU_UNIQUE &&
				    s->st_shndx != SHN_UNDEF;
		}
	}
	return 1;
}

int elfsym_permanent(const void *addr)
{
	struct permanent p = { addr, 0, -1 };
	dl_iterate_phdr(permanent_in, &p);
	return p.answer == 1;
}
