#include "unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* The recorder's own code, whose frames never appear in a stack. */
static uintptr_t self_lo, self_hi;
static enum unwind_method method = UNWIND_LIBUNWIND;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t target = (uintptr_t)data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (target >= lo && target < hi) {
		self_lo = lo;
		self_hi = hi;
		return 1;
	}
	return 0;
}

int unwind_init(const char *name)
{
	if (name && *name && strcmp(name, "libunwind") != 0)
		return -1;
	method = UNWIND_LIBUNWIND;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&unwind_capture);
	return 0;
}

const char *unwind_name(void)
{
	return "libunwind";
}

int unwind_capture(uintptr_t *ips, int max)
{
	void *raw[HS_DEPTH_MAX + 16];
	if (max > HS_DEPTH_MAX)
		max = HS_DEPTH_MAX;
	int n = unw_backtrace(raw, max + 16);
	int i = 0, out = 0;
	while (i < n && (uintptr_t)raw[i] >= self_lo &&
	       (uintptr_t)raw[i] < self_hi)
		i++;
	for (; i < n && out < max; i++)
		ips[out++] = (uintptr_t)raw[i];
	return out;
}
