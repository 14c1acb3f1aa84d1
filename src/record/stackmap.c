/* The nodes are dense arrays indexed by id, found through an index of
 * 4-byte slots: an interpreter's native stacks make millions of nodes
 * (2.1 M for `import torch`), and 16-byte slots at half load took 128 MiB
 * there.  A node is (parent, address number), 8 bytes: the distinct
 * return addresses are few (85,000 there) and numbered by a second table
 * of the same kind.  Grown arrays are remapped, not copied; an index is
 * rebuilt from its keys, the only table mapped anew.
 *
 * A node made under the newest node, the rest of a new stack, gets the
 * next id: it is found as its parent's id plus one and has no slot in
 * the index (more than half of `import torch`'s nodes).  Its parent
 * being its id less one tells it from the others: a node the index has
 * was made under an older node. */
#include "stackmap.h"

#include <string.h>

#include "../base/mix.h"
#include "../base/rmem.h"

/* 64-bit keys numbered densely from 1 in the order they came, keys[id],
 * found through slots holding the id in their low bits (idmask) and more
 * bits of the key's hash above them (0: empty): probes that cannot match
 * read no key.  The slots grow by half, not double: at 3.4 M nodes a
 * power of two would be 8 M slots filled to 0.41. */
struct dict {
	uint64_t *keys;
	uint32_t n;        /* keys so far */
	uint32_t used;     /* of them in the slots */
	uint32_t keys_cap; /* entries mapped, keys[0] unused */
	uint32_t *slots;
	/* the nodes' index: a node's hash is of its parent and return
	 * address, read from here, not of its address number, so that its
	 * slot can be fetched while the number is looked up */
	const struct dict *addrs;
	uint32_t cap;      /* slots */
	/* ids' bits in a slot: 2^k - 1 >= keys_cap - 1, not cap - 1 (the
	 * slots hold fewer keys than there are: first children are not
	 * there) */
	uint32_t idmask;
	uint32_t rebuilds; /* of the slots, so far */
};

/* Recently used nodes, in front of the tables: a lookup answered here
 * needs neither the address number nor the index.  Direct-mapped. */
#define FRONT (1u << 14)

struct front {
	uintptr_t ip;
	uint32_t parent;
	uint32_t id; /* 0: empty */
};

/* Recent return addresses' numbers, in front of their table: a new
 * node's address is mostly one of a few (the inner frames a new stack
 * shares with others: operator new, a string's constructor), found here
 * in a line the cache keeps, not in two of a table of 85,000.
 * Direct-mapped; a 0: empty. */
#define ADDR_FRONT (1u << 12)

struct addr_front {
	uintptr_t ip;
	uint32_t a;
};

struct stackmap {
	struct dict nodes; /* parent << 32 | address number */
	struct dict addrs; /* return addresses */
	struct front front[FRONT];
	struct addr_front addr_front[ADDR_FRONT];
};

/* small enough to stay in cache: most programs have a few thousand nodes */
#define INITIAL_SLOTS (1u << 12)
#define INITIAL_KEYS (1u << 11)
/* slots filled at most 4/5: linear probing stays short with the tags */
#define FULL(n, slots) ((uint64_t)(n) * 5 > (uint64_t)(slots) * 4)
#define MAX_SLOTS (1u << 31) /* one tag bit at least */

/* A node's hash: by its return address, not its address number (see
 * struct dict's addrs). */
static inline uint64_t node_hash(uint32_t parent, uintptr_t ip)
{
	return hs_mix64((uint64_t)ip ^
			(uint64_t)parent * 0x9e3779b97f4a7c15ull);
}

static inline uint64_t key_hash(const struct dict *d, uint64_t key)
{
	return d->addrs ? node_hash((uint32_t)(key >> 32),
				    d->addrs->keys[(uint32_t)key])
			: hs_mix64(key);
}

/* Whether node id, key, is its parent's first child, not in the slots. */
static inline int first_child(uint32_t id, uint64_t key)
{
	return (uint32_t)(key >> 32) == id - 1 && id > 1;
}

static inline uint32_t tag_of(const struct dict *d, uint64_t h)
{
	return (uint32_t)(h >> 32) & ~d->idmask;
}

/* The first slot to probe: the low half of the hash scaled to cap. */
static inline uint32_t home(const struct dict *d, uint64_t h)
{
	return (uint32_t)((h & 0xffffffffu) * d->cap >> 32);
}

static uint32_t idmask_for(uint32_t cap)
{
	return (uint32_t)(((uint64_t)1 << (32 - __builtin_clz(cap - 1))) - 1);
}

static int dict_init(struct dict *d)
{
	memset(d, 0, sizeof(*d));
	d->keys = rmem_map(INITIAL_KEYS * sizeof(*d->keys));
	d->slots = rmem_map(INITIAL_SLOTS * sizeof(*d->slots));
	if (!d->keys || !d->slots) {
		rmem_unmap(d->keys, INITIAL_KEYS * sizeof(*d->keys));
		rmem_unmap(d->slots, INITIAL_SLOTS * sizeof(*d->slots));
		d->keys = NULL;
		d->slots = NULL;
		return -1;
	}
	d->keys_cap = INITIAL_KEYS;
	d->cap = INITIAL_SLOTS;
	d->idmask = idmask_for(INITIAL_SLOTS);
	return 0;
}

static void dict_finish(struct dict *d)
{
	rmem_unmap(d->keys, (size_t)d->keys_cap * sizeof(*d->keys));
	rmem_unmap(d->slots, (size_t)d->cap * sizeof(*d->slots));
	d->keys = NULL;
	d->slots = NULL;
}

/* The id of key, or 0 with *at the empty slot where it goes. */
static inline uint32_t dict_find(const struct dict *d, uint64_t key,
				 uint64_t h, uint32_t **at)
{
	uint32_t tag = tag_of(d, h), idmask = d->idmask;
	for (uint32_t i = home(d, h);;) {
		uint32_t s = d->slots[i];
		if (!s) {
			*at = &d->slots[i];
			return 0;
		}
		if ((s & ~idmask) == tag && d->keys[s & idmask] == key)
			return s & idmask;
		if (++i == d->cap)
			i = 0;
	}
}

/* Fills the first empty slot from key's home on. */
static void put(struct dict *d, uint64_t h, uint32_t id)
{
	uint32_t i = home(d, h);
	while (d->slots[i])
		if (++i == d->cap)
			i = 0;
	d->slots[i] = tag_of(d, h) | id;
}

/* Keys' slots fetched this many keys ahead when the index is rebuilt:
 * its slots are far apart, and waited for one by one they made the
 * rebuilds a quarter of the table's time (`import torch`). */
#define AHEAD 16

/* Slots mapped anew, cap of them, with idmask, filled from the keys
 * alone. */
static int dict_rebuild(struct dict *d, uint32_t cap, uint32_t idmask)
{
	uint32_t *fresh = rmem_map_table((size_t)cap * sizeof(*fresh));
	if (!fresh)
		return -1;
	rmem_unmap(d->slots, (size_t)d->cap * sizeof(*d->slots));
	d->slots = fresh;
	d->cap = cap;
	d->idmask = idmask;
	d->rebuilds++;
	uint64_t hs[AHEAD];
	uint32_t ids[AHEAD];
	unsigned k = 0; /* keys of slots fetched, waiting */
	for (uint32_t id = 1; id <= d->n; id++) {
		uint64_t key = d->keys[id];
		if (d->addrs && first_child(id, key))
			continue;
		if (k >= AHEAD)
			put(d, hs[k % AHEAD], ids[k % AHEAD]);
		uint64_t h = key_hash(d, key);
		hs[k % AHEAD] = h;
		ids[k % AHEAD] = id;
		k++;
		__builtin_prefetch(&d->slots[home(d, h)], 1);
	}
	for (unsigned j = k > AHEAD ? k - AHEAD : 0; j < k; j++)
		put(d, hs[j % AHEAD], ids[j % AHEAD]);
	return 0;
}

/* Half as many slots again. */
static int dict_grow_slots(struct dict *d)
{
	if (d->cap > MAX_SLOTS / 3 * 2 - 1024)
		return -1;
	/* whole pages */
	return dict_rebuild(d, (d->cap + d->cap / 2 + 1023) & ~1023u,
			    d->idmask);
}

/* Room for key number n + 1 in keys, and in the slots if in_slots; -1
 * if there is none. */
static int dict_room(struct dict *d, int in_slots)
{
	if (d->n + 1 >= d->keys_cap) {
		size_t old = (size_t)d->keys_cap * sizeof(*d->keys);
		if (d->keys_cap > UINT32_MAX / 2)
			return -1;
		/* ids the slots' bits cannot hold: the same slots, with bits
		 * for ids to 16 times the keys so far (fewer of tag), not to
		 * be rebuilt again for each of the next three doublings */
		if (2 * d->keys_cap - 1 > d->idmask &&
		    dict_rebuild(d, d->cap,
				 d->keys_cap >= 1u << 27
					 ? (uint32_t)(MAX_SLOTS - 1)
					 : idmask_for(16 * d->keys_cap)))
			return -1;
		uint64_t *k = rmem_remap_table(d->keys, old, 2 * old);
		if (!k)
			return -1;
		d->keys = k;
		d->keys_cap *= 2;
	}
	if (in_slots && FULL(d->used + 1, d->cap) && dict_grow_slots(d))
		return -1;
	return 0;
}

/* Adds key, not there, at *at as dict_find left it; its id, or 0. */
static uint32_t dict_add(struct dict *d, uint64_t key, uint64_t h,
			 uint32_t *at)
{
	/* counted, not told by the slots' address: two rebuilds in one
	 * dict_room can map the second where the first unmapped */
	uint32_t rebuilds = d->rebuilds;
	if (dict_room(d, 1))
		return 0;
	if (d->rebuilds != rebuilds) /* the slot it goes to now */
		dict_find(d, key, h, &at);
	uint32_t id = ++d->n;
	d->used++;
	d->keys[id] = key;
	*at = tag_of(d, h) | id;
	return id;
}

/* Adds node key, its parent's first child (the newest node's), with no
 * slot; its id, or 0. */
static uint32_t dict_add_first(struct dict *d, uint64_t key)
{
	if (dict_room(d, 0))
		return 0;
	uint32_t id = ++d->n;
	d->keys[id] = key;
	return id;
}

struct stackmap *stackmap_create(void)
{
	struct stackmap *m = rmem_map(sizeof(*m));
	if (!m)
		return NULL;
	if (dict_init(&m->nodes) || dict_init(&m->addrs)) {
		stackmap_destroy(m);
		return NULL;
	}
	m->nodes.addrs = &m->addrs;
	return m;
}

void stackmap_destroy(struct stackmap *m)
{
	if (!m)
		return;
	dict_finish(&m->nodes);
	dict_finish(&m->addrs);
	rmem_unmap(m, sizeof(*m));
}

int stackmap_reset(struct stackmap *m)
{
	struct dict nodes, addrs;
	if (dict_init(&nodes))
		return -1;
	if (dict_init(&addrs)) {
		dict_finish(&nodes);
		return -1;
	}
	dict_finish(&m->nodes);
	dict_finish(&m->addrs);
	m->nodes = nodes;
	m->addrs = addrs;
	m->nodes.addrs = &m->addrs;
	memset(m->front, 0, sizeof(m->front));
	memset(m->addr_front, 0, sizeof(m->addr_front));
	return 0;
}

/* The address number of ip (hash h), added if new; 0 when the table
 * cannot grow. */
static inline uint32_t addr_of(struct stackmap *m, uintptr_t ip, uint64_t h)
{
	struct addr_front *f = &m->addr_front[h >> 40 & (ADDR_FRONT - 1)];
	if (f->a && f->ip == ip)
		return f->a;
	uint32_t *at = NULL;
	uint32_t a = dict_find(&m->addrs, ip, h, &at);
	if (!a)
		a = dict_add(&m->addrs, ip, h, at);
	*f = (struct addr_front){ ip, a };
	return a;
}

uint32_t stackmap_intern(struct stackmap *m, uint32_t parent, uintptr_t ip,
			 int *is_new)
{
	*is_new = 0;
	/* the lines this lookup may read, all asked for at once: far apart
	 * in tables of millions of nodes, each waited for in turn, they made
	 * the table two fifths of the recorder's time in `import torch` */
	uint64_t h = node_hash(parent, ip), ha = hs_mix64(ip);
	__builtin_prefetch(&m->addrs.slots[home(&m->addrs, ha)]);
	if (parent && parent == m->nodes.n) {
		/* the newest node has no children yet: no lookup, not even
		 * in the front (a child of a new node, the rest of a new
		 * stack, is most of the new nodes; the front's line is far) */
		uint32_t a = addr_of(m, ip, ha);
		if (!a)
			return 0;
		uint32_t id = dict_add_first(&m->nodes,
					     (uint64_t)parent << 32 | a);
		*is_new = id != 0;
		return id;
	}
	/* its place if it is the parent's first child, and in the index */
	if (parent && parent < m->nodes.n)
		__builtin_prefetch(&m->nodes.keys[parent + 1]);
	__builtin_prefetch(&m->nodes.slots[home(&m->nodes, h)]);
	struct front *f = &m->front[h >> 32 & (FRONT - 1)];
	if (f->id && f->ip == ip && f->parent == parent)
		return f->id;
	uint32_t *at = NULL;
	uint32_t a = addr_of(m, ip, ha);
	if (!a)
		return 0;
	uint64_t key = (uint64_t)parent << 32 | a;
	uint32_t id = parent && parent < m->nodes.n &&
				      m->nodes.keys[parent + 1] == key
			      ? parent + 1
			      : dict_find(&m->nodes, key, h, &at);
	if (!id) {
		if (!(id = dict_add(&m->nodes, key, h, at)))
			return 0;
		*is_new = 1;
	}
	*f = (struct front){ ip, parent, id };
	return id;
}

uint32_t stackmap_count(const struct stackmap *m)
{
	return m->nodes.n;
}
