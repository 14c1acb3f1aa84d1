/* A small reader of .eh_frame (see the LSB "Exception Frames" chapter and
 * DWARF 4 section 6.4).  It runs a CIE's and an FDE's call-frame program up
 * to one address and keeps only the rules for the CFA, RBP and the return
 * address; anything it does not follow makes the rule CFI_UNKNOWN, so the
 * caller falls back to a full unwinder instead of guessing. */
#include "unwind_cfi.h"

#include <stddef.h>
#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* pointer encodings */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APP 0x70
#define PE_INDIRECT 0x80
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

enum how { HOW_SAME, HOW_UNDEF, HOW_OFFSET, HOW_OTHER };

struct reg_rule {
	enum how how;
	int64_t off;
};

struct row {
	int cfa_reg; /* -1: a DWARF expression */
	int64_t cfa_off;
	struct reg_rule rbp, ra;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	int has_aug_len;
	const uint8_t *insns, *end;
};

/* Decoding state: bad is set by any read past the end or unknown form. */
struct rd {
	const uint8_t *p, *end;
	uintptr_t datarel;
	int bad;
};

/* One LEB128 number's bits; *shift: how many, *last: its final byte. */
static uint64_t leb(struct rd *r, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	*shift = 0;
	while (r->p < r->end) {
		uint8_t b = *r->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
		if (!(b & 0x80)) {
			*last = b;
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

static uint64_t uleb(struct rd *r)
{
	unsigned shift;
	uint8_t last;
	return leb(r, &shift, &last);
}

static int64_t sleb(struct rd *r)
{
	unsigned shift;
	uint8_t last = 0;
	uint64_t v = leb(r, &shift, &last);
	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift; /* sign-extend */
	return (int64_t)v;
}

/* A ULEB128 length and that many bytes. */
static void skip_block(struct rd *r)
{
	uint64_t n = uleb(r);
	if (n > (uint64_t)(r->end - r->p))
		r->bad = 1;
	else
		r->p += n;
}

static uint64_t fixed(struct rd *r, size_t n)
{
	uint64_t v = 0;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, n); /* little endian */
	r->p += n;
	return v;
}

static uint8_t u8(struct rd *r)
{
	return (uint8_t)fixed(r, 1);
}

/* The value part of an encoded pointer, without applying its base. */
static uint64_t enc_value(struct rd *r, uint8_t enc)
{
	switch (enc & PE_FORMAT) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return fixed(r, 8);
	case PE_ULEB128:
		return uleb(r);
	case PE_SLEB128:
		return (uint64_t)sleb(r);
	case PE_UDATA2:
		return fixed(r, 2);
	case PE_SDATA2:
		return (uint64_t)(int64_t)(int16_t)fixed(r, 2);
	case PE_UDATA4:
		return fixed(r, 4);
	case PE_SDATA4:
		return (uint64_t)(int64_t)(int32_t)fixed(r, 4);
	}
	r->bad = 1;
	return 0;
}

static uintptr_t enc_pointer(struct rd *r, uint8_t enc)
{
	uintptr_t field = (uintptr_t)r->p;
	if (enc == PE_OMIT)
		return 0;
	uintptr_t v = (uintptr_t)enc_value(r, enc);
	switch (enc & PE_APP) {
	case 0:
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_DATAREL:
		v += r->datarel;
		break;
	default: /* textrel, funcrel, aligned: not used on x86_64 Linux */
		r->bad = 1;
		return 0;
	}
	if (enc & PE_INDIRECT)
		v = *(const uintptr_t *)v;
	return v;
}

static int parse_cie(const uint8_t *c, struct cie *cie)
{
	uint32_t len;
	memcpy(&len, c, 4);
	if (len == 0 || len == 0xffffffff)
		return -1;
	struct rd r = { c + 4, c + 4 + len, 0, 0 };
	if (fixed(&r, 4) != 0)
		return -1;
	uint8_t version = u8(&r);
	const char *aug = (const char *)r.p;
	size_t alen = strnlen(aug, (size_t)(r.end - r.p));
	r.p += alen + 1;
	if (version == 4)
		r.p += 2; /* address and segment selector sizes */
	cie->code_align = uleb(&r);
	cie->data_align = sleb(&r);
	uint64_t ra = version == 1 ? u8(&r) : uleb(&r);
	cie->fde_enc = PE_ABSPTR;
	cie->has_aug_len = aug[0] == 'z';
	if (ra != REG_RA || (alen && !cie->has_aug_len))
		return -1;
	if (cie->has_aug_len) {
		uint64_t n = uleb(&r);
		const uint8_t *aug_end = r.p + n;
		for (size_t i = 1; i < alen && !r.bad; i++) {
			if (aug[i] == 'R')
				cie->fde_enc = u8(&r);
			else if (aug[i] == 'L')
				(void)u8(&r);
			else if (aug[i] == 'P')
				(void)enc_value(&r, u8(&r));
			else if (aug[i] == 'S')
				return -1; /* a signal frame */
			else
				break; /* unknown: the length lets us skip it */
		}
		r.p = aug_end;
	}
	cie->insns = r.p;
	cie->end = r.end;
	return r.bad || r.p > r.end ? -1 : 0;
}

static void reg_set(struct row *row, uint64_t reg, enum how how, int64_t off)
{
	struct reg_rule rule = { how, off };
	if (reg == REG_RBP)
		row->rbp = rule;
	else if (reg == REG_RA)
		row->ra = rule;
}

static void reg_restore(struct row *row, const struct row *init, uint64_t reg)
{
	if (reg == REG_RBP)
		row->rbp = init->rbp;
	else if (reg == REG_RA)
		row->ra = init->ra;
}

#define STATE_MAX 8

/* Runs a call-frame program while its location stays <= pc.  init is the
 * row after the CIE's instructions (for DW_CFA_restore); returns -1 on an
 * instruction it does not know. */
static int run(struct rd *r, const struct cie *cie, uintptr_t loc,
	       uintptr_t pc, struct row *row, const struct row *init)
{
	struct row saved[STATE_MAX];
	int depth = 0;
	while (r->p < r->end && !r->bad) {
		uint8_t op = u8(r);
		uint64_t reg, delta = 0;
		switch (op >> 6) {
		case 1:
			delta = op & 0x3f;
			goto advance;
		case 2:
			reg_set(row, op & 0x3f, HOW_OFFSET,
				(int64_t)uleb(r) * cie->data_align);
			continue;
		case 3:
			reg_restore(row, init, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			loc = enc_pointer(r, cie->fde_enc);
			if (loc > pc)
				return 0;
			break;
		case 0x02:
			delta = fixed(r, 1);
			goto advance;
		case 0x03:
			delta = fixed(r, 2);
			goto advance;
		case 0x04:
			delta = fixed(r, 4);
			goto advance;
		case 0x05: /* offset_extended */
			reg = uleb(r);
			reg_set(row, reg, HOW_OFFSET,
				(int64_t)uleb(r) * cie->data_align);
			break;
		case 0x06: /* restore_extended */
			reg_restore(row, init, uleb(r));
			break;
		case 0x07: /* undefined */
			reg_set(row, uleb(r), HOW_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			reg_set(row, uleb(r), HOW_SAME, 0);
			break;
		case 0x09: /* register */
			reg = uleb(r);
			(void)uleb(r);
			reg_set(row, reg, HOW_OTHER, 0);
			break;
		case 0x0a: /* remember_state */
			if (depth == STATE_MAX)
				return -1;
			saved[depth++] = *row;
			break;
		case 0x0b: /* restore_state */
			if (depth == 0)
				return -1;
			*row = saved[--depth];
			break;
		case 0x0c: /* def_cfa */
			row->cfa_reg = (int)uleb(r);
			row->cfa_off = (int64_t)uleb(r);
			break;
		case 0x0d: /* def_cfa_register */
			row->cfa_reg = (int)uleb(r);
			break;
		case 0x0e: /* def_cfa_offset */
			row->cfa_off = (int64_t)uleb(r);
			break;
		case 0x0f: /* def_cfa_expression */
			row->cfa_reg = -1;
			skip_block(r);
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = uleb(r);
			skip_block(r);
			reg_set(row, reg, HOW_OTHER, 0);
			break;
		case 0x11: /* offset_extended_sf */
			reg = uleb(r);
			reg_set(row, reg, HOW_OFFSET,
				sleb(r) * cie->data_align);
			break;
		case 0x12: /* def_cfa_sf */
			row->cfa_reg = (int)uleb(r);
			row->cfa_off = sleb(r) * cie->data_align;
			break;
		case 0x13: /* def_cfa_offset_sf */
			row->cfa_off = sleb(r) * cie->data_align;
			break;
		case 0x14: /* val_offset */
			reg = uleb(r);
			(void)uleb(r);
			reg_set(row, reg, HOW_OTHER, 0);
			break;
		case 0x15: /* val_offset_sf */
			reg = uleb(r);
			(void)sleb(r);
			reg_set(row, reg, HOW_OTHER, 0);
			break;
		case 0x2e: /* GNU_args_size */
			(void)uleb(r);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = uleb(r);
			reg_set(row, reg, HOW_OFFSET,
				-(int64_t)uleb(r) * cie->data_align);
			break;
		default:
			return -1;
		}
		continue;
advance:
		loc += delta * cie->code_align;
		if (loc > pc)
			return 0;
	}
	return r->bad || r->p > r->end ? -1 : 0;
}

/* The FDE whose range may hold pc, by binary search of the sorted table
 * that the linker puts in .eh_frame_hdr. */
static const uint8_t *find_fde(const uint8_t *hdr, uintptr_t pc)
{
	if (hdr[0] != 1 || hdr[3] != (PE_DATAREL | PE_SDATA4))
		return NULL;
	struct rd r = { hdr + 4, hdr + 4 + 16, (uintptr_t)hdr, 0 };
	(void)enc_pointer(&r, hdr[1]);
	uint64_t count = enc_pointer(&r, hdr[2]);
	if (r.bad || hdr[2] == PE_OMIT || count == 0)
		return NULL;
	const int32_t *t = (const int32_t *)r.p;
	uint64_t lo = 0, hi = count;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)hdr + (intptr_t)t[2 * mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if ((uintptr_t)hdr + (intptr_t)t[2 * lo] > pc)
		return NULL;
	return hdr + t[2 * lo + 1];
}

/* Runs the CIE's and the FDE's programs; -1 when pc is not covered. */
static int row_at(const uint8_t *fde, uintptr_t pc, struct row *row)
{
	uint32_t len, cie_off;
	struct cie cie;
	memcpy(&len, fde, 4);
	memcpy(&cie_off, fde + 4, 4);
	if (len == 0 || len == 0xffffffff || cie_off == 0)
		return -1;
	if (parse_cie(fde + 4 - cie_off, &cie))
		return -1;
	struct rd r = { fde + 8, fde + 4 + len, 0, 0 };
	uintptr_t start = enc_pointer(&r, cie.fde_enc);
	uintptr_t range = (uintptr_t)enc_value(&r, cie.fde_enc & PE_FORMAT);
	if (r.bad || pc < start || pc - start >= range)
		return -1;
	if (cie.has_aug_len)
		skip_block(&r);
	struct row init = { REG_RSP, 8, { HOW_SAME, 0 }, { HOW_SAME, 0 } };
	struct rd ci = { cie.insns, cie.end, 0, 0 };
	if (run(&ci, &cie, 0, UINTPTR_MAX, &init, &init))
		return -1;
	*row = init;
	return run(&r, &cie, start, pc, row, &init);
}

static void reduce(const struct row *row, struct cfi_rule *out)
{
	out->kind = CFI_UNKNOWN;
	if (row->ra.how == HOW_UNDEF) {
		out->kind = CFI_END;
		return;
	}
	if (row->ra.how != HOW_OFFSET || row->ra.off != -8)
		return;
	if (row->cfa_reg != REG_RSP && row->cfa_reg != REG_RBP)
		return;
	if (row->cfa_off < INT32_MIN || row->cfa_off > INT32_MAX)
		return;
	if (row->rbp.how == HOW_OFFSET) {
		if (row->rbp.off < INT16_MIN || row->rbp.off > INT16_MAX)
			return;
		out->saves_rbp = 1;
		out->rbp_off = (int32_t)row->rbp.off;
	} else if (row->rbp.how != HOW_SAME) {
		return;
	}
	out->cfa_off = (int32_t)row->cfa_off;
	out->kind = row->cfa_reg == REG_RSP ? CFI_RSP : CFI_RBP;
}

void cfi_rule_at(const uint8_t *eh_frame_hdr, uintptr_t pc,
		 struct cfi_rule *r)
{
	struct row row;
	memset(r, 0, sizeof(*r));
	r->kind = CFI_UNKNOWN;
	const uint8_t *fde = eh_frame_hdr ? find_fde(eh_frame_hdr, pc) : NULL;
	if (fde && row_at(fde, pc, &row) == 0)
		reduce(&row, r);
}

uint64_t cfi_pack(const struct cfi_rule *r)
{
	return (uint64_t)(uint32_t)r->cfa_off | (uint64_t)r->kind << 32 |
	       (uint64_t)!!r->saves_rbp << 36 |
	       (uint64_t)(uint16_t)(int16_t)r->rbp_off << 48;
}
