#include "modules.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "../format/encoder.h"
#include "../base/rmem.h"

#define MAX_MODULES 8192
#define POOL_BYTES (2u << 20)

int modlist_init(struct modlist *l)
{
	memset(l, 0, sizeof(*l));
	l->mods = rmem_map(MAX_MODULES * sizeof(struct module));
	l->pool = rmem_map(POOL_BYTES);
	if (!l->mods || !l->pool) {
		modlist_finish(l);
		return -1;
	}
	l->cap = MAX_MODULES;
	l->pool_cap = POOL_BYTES;
	return 0;
}

void modlist_finish(struct modlist *l)
{
	rmem_unmap(l->mods, MAX_MODULES * sizeof(struct module));
	rmem_unmap(l->pool, POOL_BYTES);
	memset(l, 0, sizeof(*l));
}

void modlist_clear(struct modlist *l)
{
	l->count = 0;
	l->pool_len = 0;
}

static void read_build_id(struct module *m, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr +
						     ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			size_t name = (n->n_namesz + 3) & ~3u;
			size_t desc = (n->n_descsz + 3) & ~3u;
			const uint8_t *d = p + sizeof(*n) + name;
			if (d + desc > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(p + sizeof(*n), "GNU", 4) == 0 &&
			    n->n_descsz <= MOD_BUILD_ID_MAX) {
				memcpy(m->build_id, d, n->n_descsz);
				m->build_id_len = n->n_descsz;
				return;
			}
			p = d + desc;
		}
	}
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct modlist *l = data;
	static char exe[4096];
	if (l->count == l->cap)
		return 1;
	const char *path = info->dlpi_name;
	if (!path || !*path) {
		if (l->count != 0)
			return 0; /* nameless and not first: nothing to resolve */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
	}
	size_t len = strlen(path);
	if (l->pool_len + len > l->pool_cap)
		return 1;
	struct module *m = &l->mods[l->count];
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	m->path_off = l->pool_len;
	m->path_len = (uint32_t)len;
	memcpy(l->pool + l->pool_len, path, len);
	l->pool_len += (uint32_t)len;
	for (int i = 0; i < info->dlpi_phnum && m->nseg < MOD_MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		m->segs[m->nseg].vaddr = ph->p_vaddr;
		m->segs[m->nseg].memsz = ph->p_memsz;
		m->segs[m->nseg].offset = ph->p_offset;
		m->segs[m->nseg].flags = ph->p_flags;
		m->nseg++;
	}
	read_build_id(m, info);
	l->count++;
	return 0;
}

int modlist_collect(struct modlist *l)
{
	modlist_clear(l);
	dl_iterate_phdr(add_module, l);
	return 0;
}

static int read_generation(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uint64_t *)data = modules_generation_of(info, size);
	return 1;
}

uint64_t modules_generation(void)
{
	uint64_t g = 0;
	dl_iterate_phdr(read_generation, &g);
	return g;
}

int modlist_contains(const struct modlist *l, const struct module *m,
		     const char *pool)
{
	for (uint32_t i = 0; i < l->count; i++) {
		const struct module *k = &l->mods[i];
		if (k->base == m->base && k->path_len == m->path_len &&
		    memcmp(l->pool + k->path_off, pool + m->path_off,
			   m->path_len) == 0)
			return 1;
	}
	return 0;
}
