/* The loaded modules (executable, shared objects, vdso) with their
 * build-ids and segments, so that stacks can be symbolized offline
 * (their records: records.h). */
#ifndef HS_MODULES_H
#define HS_MODULES_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define MOD_MAX_SEGS 8
#define MOD_BUILD_ID_MAX 64

struct module {
	uintptr_t base;
	uint32_t path_off, path_len;
	uint8_t build_id[MOD_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint32_t nseg;
	struct {
		uint64_t vaddr, memsz, offset, flags;
	} segs[MOD_MAX_SEGS];
};

struct modlist {
	struct module *mods;
	uint32_t count, cap;
	char *pool;
	uint32_t pool_len, pool_cap;
};

int modlist_init(struct modlist *l);
void modlist_finish(struct modlist *l);
void modlist_clear(struct modlist *l);
/* Fills l with the modules loaded now.  No malloc; may take the loader's
 * lock, so never call it with the recorder lock held. */
int modlist_collect(struct modlist *l);
/* Loader generation: changes whenever a module is loaded or unloaded. */
uint64_t modules_generation(void);
/* The same from a dl_iterate_phdr callback's arguments (0: not known). */
static inline uint64_t modules_generation_of(const struct dl_phdr_info *info,
					     size_t size)
{
	if (size < offsetof(struct dl_phdr_info, dlpi_subs) +
			   sizeof(info->dlpi_subs))
		return 0;
	return info->dlpi_adds * 1000003ull + info->dlpi_subs;
}
int modlist_contains(const struct modlist *l, const struct module *m,
		     const char *pool);

#endif
