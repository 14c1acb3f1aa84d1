#include "regions.h"

#include <string.h>

#define INDEX_SIZE 8192           /* twice REGIONS_MAX, a power of two */
/* the names' bytes: never full before the ids run out */
#define POOL_SIZE (REGIONS_MAX * REGIONS_NAME_MAX)

static const char other[] = "(other regions)";

/* id -> its name in pool; index: open addressing over the names' hashes,
 * 0 empty, else an id */
static struct {
	uint32_t gen, count, used;
	int full; /* REGIONS_OTHER named */
	uint32_t off[REGIONS_MAX + 1];
	uint16_t len[REGIONS_MAX + 1];
	uint16_t index[INDEX_SIZE];
	char pool[POOL_SIZE];
} names;

static uint32_t hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

uint32_t regions_id(const char *name, size_t n, uint32_t gen, int *fresh)
{
	*fresh = 0;
	if (names.gen != gen) {
		memset(names.index, 0, sizeof(names.index));
		names.count = names.used = 0;
		names.full = 0;
		names.gen = gen;
	}
	size_t h = hash(name, n) & (INDEX_SIZE - 1);
	for (uint16_t id; (id = names.index[h]); h = (h + 1) & (INDEX_SIZE - 1))
		if (names.len[id] == n &&
		    !memcmp(names.pool + names.off[id], name, n))
			return id;
	if (names.full || names.count == REGIONS_MAX ||
	    POOL_SIZE - names.used < n) {
		/* the other names share one id, named once */
		*fresh = !names.full;
		names.full = 1;
		return REGIONS_OTHER;
	}
	uint32_t id = ++names.count;
	memcpy(names.pool + names.used, name, n);
	names.off[id] = names.used;
	names.len[id] = (uint16_t)n;
	names.used += (uint32_t)n;
	names.index[h] = (uint16_t)id;
	*fresh = 1;
	return id;
}

const char *regions_name(uint32_t id, size_t *n)
{
	if (id == 0 || id > REGIONS_MAX) {
		*n = sizeof(other) - 1;
		return other;
	}
	*n = names.len[id];
	return names.pool + names.off[id];
}
