#include "maps.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "format/reader.h"
#include "replay.h"
#include "stacks.h"

#define PROT_NONE_VALUE 0 /* PROT_NONE: no access */
#define NO_SLOT UINT32_MAX

struct range {
	uint64_t addr, end;
	uint32_t slot; /* in the stacks, NO_SLOT without */
	uint8_t kind;
	uint8_t counted; /* not PROT_NONE */
};

/* What the stacks' latest mapping was: kind and path. */
struct slot_info {
	uint8_t kind, seen;
	char *path;
};

/* Paths kept per stack at most this long (the rest is cut). */
#define PATH_MAX_KEPT 512

struct maps {
	struct range *v; /* sorted by address, disjoint */
	size_t n, cap;
	struct slot_info *slots;
	size_t nslots;
	struct stacks *stacks;
	struct maps_state st;
};

struct maps *maps_create(struct stacks *stacks)
{
	struct maps *m = calloc(1, sizeof(*m));
	if (!m) {
		hs_error("out of memory");
		return NULL;
	}
	m->stacks = stacks;
	return m;
}

void maps_destroy(struct maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nslots; i++)
		free(m->slots[i].path);
	free(m->slots);
	free(m->v);
	free(m);
}

void maps_state(const struct maps *m, struct maps_state *st)
{
	*st = m->st;
	st->ranges = m->n;
}

/* The first range that ends after addr. */
static size_t first_after(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int room(struct maps *m, size_t more)
{
	if (m->n + more > MAPS_MAX)
		return hs_error("corrupt trace: more than %u mappings at once",
				MAPS_MAX);
	if (m->n + more <= m->cap)
		return 0;
	size_t cap = m->cap ? m->cap * 2 : 64;
	while (cap < m->n + more)
		cap *= 2;
	struct range *v = realloc(m->v, cap * sizeof(*v));
	if (!v)
		return hs_error("out of memory for %zu mappings", m->n);
	m->v = v;
	m->cap = cap;
	return 0;
}

/* Bytes of r added (+) or taken away (-).  Each call counts one range
 * more (+) or less (-) for r's stack; pieces: ranges to count back, so
 * that a trim (pieces 1) leaves the count alone and a split (2) adds
 * one. */
static void account(struct maps *m, const struct range *r, uint64_t bytes,
		    int add, int pieces, uint32_t batch)
{
	if (!r->counted) {
		m->st.reserved += add ? bytes : -bytes;
		return;
	}
	if (add) {
		m->st.mapped += bytes;
		m->st.by_kind[r->kind] += bytes;
		if (m->st.mapped > m->st.peak)
			m->st.peak = m->st.mapped;
	} else {
		m->st.mapped -= bytes;
		m->st.by_kind[r->kind] -= bytes;
	}
	if (!m->stacks || r->slot == NO_SLOT)
		return;
	if (add)
		stacks_add(m->stacks, r->slot, bytes, batch, 1);
	else
		stacks_sub(m->stacks, r->slot, bytes, batch);
	/* the stack's count of ranges follows the table's */
	for (; pieces > 0; pieces--)
		stacks_add(m->stacks, r->slot, 0, batch, 0);
}

/* Takes [addr, end) out of every range; returns the bytes taken. */
static uint64_t cut(struct maps *m, uint64_t addr, uint64_t end,
		    uint32_t batch)
{
	uint64_t taken = 0;
	size_t i = first_after(m, addr);
	while (i < m->n && m->v[i].addr < end) {
		struct range *r = &m->v[i];
		if (r->addr < addr && r->end > end) { /* a hole in the middle */
			if (room(m, 1))
				return taken; /* past MAPS_MAX: left whole */
			r = &m->v[i];
			memmove(r + 1, r, (m->n - i) * sizeof(*r));
			m->n++;
			r[1].addr = end;
			r->end = addr;
			account(m, r, end - addr, 0, 2, batch);
			return taken + (end - addr);
		}
		if (r->addr < addr) { /* its tail */
			account(m, r, r->end - addr, 0, 1, batch);
			taken += r->end - addr;
			r->end = addr;
			i++;
		} else if (r->end > end) { /* its head */
			account(m, r, end - r->addr, 0, 1, batch);
			taken += end - r->addr;
			r->addr = end;
			i++;
		} else { /* all of it */
			account(m, r, r->end - r->addr, 0, 0, batch);
			taken += r->end - r->addr;
			memmove(r, r + 1, (m->n - i - 1) * sizeof(*r));
			m->n--;
		}
	}
	return taken;
}

static int valid(uint64_t addr, uint64_t len)
{
	return len && addr < REPLAY_ADDR_END && len <= REPLAY_ADDR_END - addr;
}

static int insert(struct maps *m, struct range r, uint32_t batch)
{
	cut(m, r.addr, r.end, batch); /* MAP_FIXED replaces what it covers */
	if (room(m, 1))
		return -1;
	size_t i = first_after(m, r.addr);
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(r));
	m->v[i] = r;
	m->n++;
	account(m, &r, r.end - r.addr, 1, 0, batch);
	return 0;
}

static uint32_t slot_of(struct maps *m, uint64_t stack)
{
	return m->stacks ? stacks_ref(m->stacks, stack) : NO_SLOT;
}

int maps_map(struct maps *m, uint64_t addr, uint64_t len, uint64_t prot,
	     uint64_t kind, uint64_t stack, uint32_t batch)
{
	if (!valid(addr, len)) {
		m->st.ignored++;
		return 0;
	}
	uint32_t slot = slot_of(m, stack);
	if (m->stacks && slot == NO_SLOT)
		return hs_error("out of memory for stacks");
	m->st.maps++;
	struct range r = {
		.addr = addr, .end = addr + len, .slot = slot,
		.kind = kind < MAPS_KINDS ? (uint8_t)kind : HS_MAP_OTHER,
		.counted = prot != PROT_NONE_VALUE,
	};
	return insert(m, r, batch);
}

int maps_unmap(struct maps *m, uint64_t addr, uint64_t len, uint32_t batch)
{
	if (!len) { /* shmdt: the mapping that starts at addr */
		size_t i = first_after(m, addr);
		if (i < m->n && m->v[i].addr == addr)
			len = m->v[i].end - addr;
	}
	if (!valid(addr, len) || !cut(m, addr, addr + len, batch)) {
		m->st.ignored++;
		return 0;
	}
	m->st.unmaps++;
	return 0;
}

int maps_remap(struct maps *m, uint64_t old, uint64_t old_len, uint64_t addr,
	       uint64_t len, uint64_t stack, uint32_t batch)
{
	size_t i = valid(old, old_len) ? first_after(m, old) : m->n;
	if (!valid(addr, len) || i == m->n || m->v[i].addr >= old + old_len) {
		m->st.ignored++; /* not a mapping of the program's */
		return 0;
	}
	struct range r = m->v[i];
	cut(m, old, old + old_len, batch);
	if (len > old_len) {
		uint32_t slot = slot_of(m, stack);
		if (m->stacks && slot == NO_SLOT)
			return hs_error("out of memory for stacks");
		r.slot = slot;
	}
	r.addr = addr;
	r.end = addr + len;
	m->st.remaps++;
	return insert(m, r, batch);
}

int maps_protect(struct maps *m, uint64_t addr, uint64_t len, uint64_t prot,
		 uint32_t batch)
{
	if (!valid(addr, len)) {
		m->st.ignored++;
		return 0;
	}
	const uint64_t end = addr + len;
	const uint8_t counted = prot != PROT_NONE_VALUE;
	int touched = 0;
	for (uint64_t at = addr; at < end;) {
		size_t i = first_after(m, at);
		if (i == m->n || m->v[i].addr >= end)
			break;
		struct range r = m->v[i];
		r.addr = r.addr > at ? r.addr : at;
		r.end = r.end < end ? r.end : end;
		at = r.end;
		touched = 1;
		if (r.counted == counted)
			continue;
		/* the piece changes: taken out, put back with its new state */
		r.counted = counted;
		cut(m, r.addr, r.end, batch);
		if (insert(m, r, batch))
			return -1;
	}
	if (touched)
		m->st.protects++;
	else
		m->st.ignored++;
	return 0;
}

void maps_slot(const struct maps *m, uint32_t slot, unsigned *kind,
	       const char **path)
{
	*kind = HS_MAP_OTHER;
	*path = NULL;
	if (slot < m->nslots && m->slots[slot].seen) {
		*kind = m->slots[slot].kind;
		*path = m->slots[slot].path;
	}
}

/* Remembers the kind and path of the mapping stack's slot just made. */
static int note_slot(struct maps *m, uint64_t stack, uint64_t kind,
		     const char *path, size_t len)
{
	if (!m->stacks)
		return 0;
	uint32_t slot = stacks_ref(m->stacks, stack);
	if (slot == NO_SLOT)
		return hs_error("out of memory for stacks");
	if (slot >= m->nslots) {
		size_t n = m->nslots ? m->nslots : 16;
		while (n <= slot)
			n *= 2;
		struct slot_info *v = realloc(m->slots, n * sizeof(*v));
		if (!v)
			return hs_error("out of memory");
		memset(v + m->nslots, 0, (n - m->nslots) * sizeof(*v));
		m->slots = v;
		m->nslots = n;
	}
	struct slot_info *si = &m->slots[slot];
	si->seen = 1;
	si->kind = kind < MAPS_KINDS ? (uint8_t)kind : HS_MAP_OTHER;
	if (len > PATH_MAX_KEPT)
		len = PATH_MAX_KEPT;
	if (!path || !len)
		return 0;
	char *p = realloc(si->path, len + 1);
	if (!p)
		return hs_error("out of memory");
	memcpy(p, path, len);
	p[len] = 0;
	si->path = p;
	return 0;
}

int maps_record(struct maps *m, const struct hs_record *rec, uint32_t batch)
{
	switch (rec->ext_type) {
	case HS_EXT_MAP:
		if (valid(rec->ptr, rec->size) &&
		    note_slot(m, rec->stack, rec->map.kind, rec->str,
			      rec->str_len))
			return -1;
		return maps_map(m, rec->ptr, rec->size, rec->map.prot,
				rec->map.kind, rec->stack, batch);
	case HS_EXT_UNMAP:
		return maps_unmap(m, rec->ptr, rec->size, batch);
	case HS_EXT_REMAP:
		return maps_remap(m, rec->old_ptr, rec->map.old_size,
				  rec->ptr, rec->size, rec->stack, batch);
	case HS_EXT_PROTECT:
		return maps_protect(m, rec->ptr, rec->size, rec->map.prot,
				    batch);
	default:
		return 0;
	}
}
