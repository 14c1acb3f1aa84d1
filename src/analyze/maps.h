/* The memory the program maps itself (HS_EXT_MAP, HS_EXT_UNMAP,
 * HS_EXT_REMAP records; the allocator's own mappings are never in the
 * trace): a table of mapped ranges with their stack and kind, and their
 * bytes by kind and by stack (a struct stacks of its own, so mapping
 * stacks are ranked like heap stacks).
 *
 * A new mapping replaces whatever it covers (MAP_FIXED over a mapping);
 * an unmap may cut a mapping anywhere; an unmap of a range nothing maps
 * is ignored.  PROT_NONE reservations are kept (a later MAP_FIXED or
 * mprotect may commit them) but are not mapped memory: they hold no
 * pages. */
#ifndef HS_MAPS_H
#define HS_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct hs_record;
struct stacks;

/* Ranges kept at most: each record adds at most two, so past this many
 * the trace is corrupt (or absurd), and maps_record fails. */
#define MAPS_MAX (1u << 20)
#define MAPS_KINDS 6 /* enum hs_map_kind */

struct maps_state {
	uint64_t mapped;              /* bytes mapped, not PROT_NONE */
	uint64_t by_kind[MAPS_KINDS]; /* the same by enum hs_map_kind */
	uint64_t reserved;            /* PROT_NONE bytes */
	uint64_t ranges;
	uint64_t peak;                /* highest `mapped` so far */
	uint64_t maps, unmaps, remaps, protects; /* records applied */
	uint64_t ignored;             /* records about nothing mapped, or
				       * out of the address space */
};

struct maps;

/* stacks: the mapping stacks' accounting (slots from stacks_ref), kept
 * by the caller; NULL: by kind only. */
struct maps *maps_create(struct stacks *stacks);
void maps_destroy(struct maps *m);

/* A mapping of [addr, addr + len) with prot, kind and stack, made during
 * batch `batch`; -1 (hs_error) out of memory or past MAPS_MAX ranges. */
int maps_map(struct maps *m, uint64_t addr, uint64_t len, uint64_t prot,
	     uint64_t kind, uint64_t stack, uint32_t batch);
/* [addr, addr + len) given back; len 0: the whole mapping at addr
 * (shmdt). */
int maps_unmap(struct maps *m, uint64_t addr, uint64_t len, uint32_t batch);
/* mremap of [old, old + old_len) to [addr, addr + len): the mapping
 * keeps its kind and protection; grown, it takes the stack of the
 * mremap. */
int maps_remap(struct maps *m, uint64_t old, uint64_t old_len, uint64_t addr,
	       uint64_t len, uint64_t stack, uint32_t batch);
/* mprotect of [addr, addr + len): what it covers of the mappings counts
 * from then on unless prot is PROT_NONE (a reservation committed, or
 * given up); the bytes stay their mappings' stacks'. */
int maps_protect(struct maps *m, uint64_t addr, uint64_t len, uint64_t prot,
		 uint32_t batch);
/* An HS_REC_EXT record: MAP, UNMAP, REMAP, PROTECT applied, others
 * ignored. */
int maps_record(struct maps *m, const struct hs_record *rec, uint32_t batch);

void maps_state(const struct maps *m, struct maps_state *st);

/* The kind and file of the latest mapping made by the stack of `slot`
 * (path NULL: none, or no such slot). */
void maps_slot(const struct maps *m, uint32_t slot, unsigned *kind,
	       const char **path);

#endif
