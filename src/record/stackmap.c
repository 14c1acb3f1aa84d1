#include "stackmap.h"

#include <string.h>

#include "../base/rmem.h"

struct slot {
	uintptr_t ip;
	uint32_t parent;
	uint32_t id; /* 0: empty */
};

/* Recently used nodes, in front of the table: once the table outgrows
 * the CPU caches (millions of nodes when recording a PyTorch import),
 * most lookups are answered here.  A direct-mapped copy, 256 KiB. */
#define FRONT (1u << 14)

struct stackmap {
	struct slot *slots;
	uint32_t mask; /* capacity - 1 */
	uint32_t count;
	struct slot front[FRONT];
};

/* small enough to stay in cache: most programs have a few thousand nodes */
#define INITIAL_CAPACITY (1u << 12)

static inline uint32_t hash(uint32_t parent, uintptr_t ip)
{
	uint64_t h = (uint64_t)ip * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)parent * 0xc2b2ae3d27d4eb4full;
	return (uint32_t)(h ^ h >> 29);
}

static size_t table_bytes(uint32_t capacity)
{
	return (size_t)capacity * sizeof(struct slot);
}

struct stackmap *stackmap_create(void)
{
	struct stackmap *m = rmem_map(sizeof(*m));
	if (!m)
		return NULL;
	m->slots = rmem_map(table_bytes(INITIAL_CAPACITY));
	if (!m->slots) {
		rmem_unmap(m, sizeof(*m));
		return NULL;
	}
	m->mask = INITIAL_CAPACITY - 1;
	return m;
}

void stackmap_destroy(struct stackmap *m)
{
	if (!m)
		return;
	rmem_unmap(m->slots, table_bytes(m->mask + 1));
	rmem_unmap(m, sizeof(*m));
}

int stackmap_reset(struct stackmap *m)
{
	struct slot *fresh = rmem_map(table_bytes(INITIAL_CAPACITY));
	if (!fresh)
		return -1;
	rmem_unmap(m->slots, table_bytes(m->mask + 1));
	m->slots = fresh;
	m->mask = INITIAL_CAPACITY - 1;
	m->count = 0;
	memset(m->front, 0, sizeof(m->front));
	return 0;
}

static void insert(struct slot *slots, uint32_t mask, struct slot s)
{
	uint32_t i = hash(s.parent, s.ip) & mask;
	while (slots[i].id)
		i = (i + 1) & mask;
	slots[i] = s;
}

static int grow(struct stackmap *m)
{
	uint32_t cap = (m->mask + 1) * 2;
	if (cap == 0)
		return -1;
	struct slot *fresh = rmem_map_table(table_bytes(cap));
	if (!fresh)
		return -1;
	for (uint32_t i = 0; i <= m->mask; i++)
		if (m->slots[i].id)
			insert(fresh, cap - 1, m->slots[i]);
	rmem_unmap(m->slots, table_bytes(m->mask + 1));
	m->slots = fresh;
	m->mask = cap - 1;
	return 0;
}

uint32_t stackmap_intern(struct stackmap *m, uint32_t parent, uintptr_t ip,
			 int *is_new)
{
	uint32_t h = hash(parent, ip), i = h & m->mask;
	struct slot *f = &m->front[(h >> 18 ^ h) & (FRONT - 1)];
	*is_new = 0;
	if (f->id && f->ip == ip && f->parent == parent)
		return f->id;
	for (;;) {
		struct slot *s = &m->slots[i];
		if (!s->id)
			break;
		if (s->ip == ip && s->parent == parent) {
			*f = *s;
			return s->id;
		}
		i = (i + 1) & m->mask;
	}
	if ((m->count + 1) * 2 > m->mask + 1) {
		if (grow(m))
			return 0;
		return stackmap_intern(m, parent, ip, is_new);
	}
	struct slot s = { ip, parent, ++m->count };
	m->slots[i] = s;
	*f = s;
	*is_new = 1;
	return s.id;
}

uint32_t stackmap_count(const struct stackmap *m)
{
	return m->count;
}
