/* DWARF call-frame information (.eh_frame_hdr, .eh_frame) reduced, for one
 * code address, to the few x86_64 frame shapes the fast unwinder follows. */
#ifndef HS_UNWIND_CFI_H
#define HS_UNWIND_CFI_H

#include <stdint.h>

enum cfi_kind {
	CFI_NONE,    /* not computed (an empty cache value) */
	CFI_RSP,     /* CFA = RSP + cfa_off */
	CFI_RBP,     /* CFA = RBP + cfa_off */
	CFI_END,     /* return address undefined: the outermost frame */
	CFI_UNKNOWN, /* anything else: the caller must give up */
};

/* In every followed frame the return address is at CFA-8 and the caller's
 * RSP is the CFA; RBP is either unchanged or saved at CFA + rbp_off. */
struct cfi_rule {
	enum cfi_kind kind;
	int saves_rbp;
	int32_t cfa_off;
	int32_t rbp_off;
};

/* The rule in effect at pc, found through the module's .eh_frame_hdr. */
void cfi_rule_at(const uint8_t *eh_frame_hdr, uintptr_t pc,
		 struct cfi_rule *r);

/* A rule packed in 64 bits for the lock-free cache; 0 is CFI_NONE.
 * Bits 0-31 cfa_off, 32-35 kind, 36 saves_rbp, 48-63 rbp_off. */
uint64_t cfi_pack(const struct cfi_rule *r);

static inline void cfi_unpack(uint64_t v, struct cfi_rule *r)
{
	r->cfa_off = (int32_t)(uint32_t)v;
	r->kind = (enum cfi_kind)((v >> 32) & 0xf);
	r->saves_rbp = (int)((v >> 36) & 1);
	r->rbp_off = (int16_t)(uint16_t)(v >> 48);
}

#endif
