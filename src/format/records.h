/* The layout of every record, declared once.  The column transpose
 * (columns.c), the reader (reader_next), the generic encoder and dump's
 * printer all walk these descriptions; the hand-written fast paths (the
 * recorder's event encoders, reader_events, the transpose of allocations
 * and frees) are checked against them by tests/unit/test_format.c. */
#ifndef HS_RECORDS_H
#define HS_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trace_format.h"

struct hs_record;

/* How a field is stored in the rows. */
enum hs_field_type {
	HS_F_UINT,  /* varint */
	HS_F_PTR,   /* zigzag varint, delta against the chunk's last pointer */
	HS_F_TIME,  /* zigzag varint, delta against the chunk's last time */
	HS_F_STR,   /* varint length, then the bytes */
	HS_F_COUNT, /* varint n, then n groups of the fields that follow */
	HS_F_FLAGS, /* varint bits: each known bit adds its group of the
		     * fields that follow, in bit order; each unknown bit one
		     * varint after them (see heapslope-trace(5)) */
};

/* The column of a chunk a field is kept in (columns.h). */
enum hs_column { HS_COL_TAGS, HS_COL_SIZES, HS_COL_STACKS, HS_COL_PTRS,
		 HS_COL_REST, HS_COLUMNS };

/* How dump prints a field, after a space: name=value. */
enum hs_field_print {
	HS_P_NONE,  /* not printed */
	HS_P_DEC,   /* name=123 */
	HS_P_HEX,   /* name=0x7b */
	HS_P_HEXNZ, /* name=0x7b, only when not 0 */
	HS_P_STR,   /* name="text" (escaped) */
	HS_P_BYTES, /* name=0a1b2c (hex digits) */
	HS_P_ENUM,  /* name=word, from the field's names */
	HS_P_BARE,  /* 123 (no name) */
	HS_P_SEG,   /* a module segment: seg=0xVADDR+0xMEMSZ:rwx */
};

/* Where a decoded field lands in struct hs_record. */
struct hs_field {
	const char *name;
	uint8_t type;   /* HS_F_* */
	uint8_t column; /* HS_COL_* */
	uint8_t print;  /* HS_P_* */
	uint8_t width;  /* bytes of the destination: 4 or 8; 0: none */
	uint16_t at;    /* offset of the destination in struct hs_record */
	/* HS_F_STR: offset of its length (size_t); HS_F_COUNT: offset of
	 * the element count (unsigned), elements of `stride` bytes from
	 * `at`, at most `max` kept (the rest read and dropped); the group's
	 * fields' `at` are offsets within an element.  HS_F_FLAGS: offset
	 * of the bits (uint64_t) */
	uint16_t len_at;
	uint8_t group;  /* HS_F_COUNT: fields per element; HS_F_FLAGS:
			 * groups (one per known bit) */
	uint8_t sizes[4]; /* HS_F_FLAGS: fields of each bit's group */
	uint16_t stride, max;
	const char *const *names; /* HS_P_ENUM, NULL-terminated */
};

#define HS_FIELDS_MAX 12

struct hs_rec_desc {
	unsigned kind; /* the tag, or its kind (high nibble) for events */
	const char *title; /* its name in heapslope-trace(5) and dump */
	int with_fn;       /* the tag's low nibble is the function (dump
			    * prints the function's name instead) */
	unsigned nfields;
	struct hs_field f[HS_FIELDS_MAX];
	/* the order dump prints the top-level fields in, when it is not
	 * the stored order (an index list ending in 0xff) */
	uint8_t print_order[6];
};

/* A scalar field's value at base (a record, or an element of a group). */
static inline uint64_t hs_field_get(const void *base, const struct hs_field *f)
{
	const uint8_t *src = (const uint8_t *)base + f->at;
	uint64_t v = 0;
	uint32_t w;
	if (f->width == 8) {
		memcpy(&v, src, 8);
	} else if (f->width == 4) {
		memcpy(&w, src, 4);
		v = w;
	}
	return v;
}

/* A string field's bytes in rec (*s) and their length. */
static inline size_t hs_field_str(const struct hs_record *rec,
				  const struct hs_field *f, const char **s)
{
	size_t n;
	memcpy(s, (const uint8_t *)rec + f->at, sizeof(*s));
	memcpy(&n, (const uint8_t *)rec + f->len_at, sizeof(n));
	return n;
}

/* A group's elements in rec: the count it holds, or every element it
 * has room for when it keeps no count. */
static inline unsigned hs_field_count(const struct hs_record *rec,
				      const struct hs_field *f)
{
	unsigned n = f->max;
	if (f->width)
		memcpy(&n, (const uint8_t *)rec + f->len_at, 4);
	return n < f->max ? n : f->max;
}

/* The description of a tag, or NULL when the tag is not a record. */
const struct hs_rec_desc *hs_rec_desc(unsigned tag);
/* Every description, for tests and the manual's table. */
const struct hs_rec_desc *hs_rec_descs(size_t *n);
/* The same for the payloads of extension records (HS_EXT_*): kind is
 * the type; NULL for a type this version does not know. */
const struct hs_rec_desc *hs_ext_desc(uint64_t type);
const struct hs_rec_desc *hs_ext_descs(size_t *n);

/* Delta state of one chunk: pointers and times are deltas against the
 * previous one in the chunk, both 0 at its start. */
struct hs_dec {
	uint64_t prev_ptr;
	uint64_t time; /* the chunk's latest time field */
	int has_time;  /* the record just decoded had a time field */
};

/* Decodes the fields of one record whose tag byte was read (rec->tag,
 * kind and fn set by the caller) from [*p, end) into rec; -1 when
 * malformed (rec partly written, *p unchanged). */
int hs_rec_decode(const struct hs_rec_desc *d, struct hs_dec *st,
		  const uint8_t **p, const uint8_t *end, struct hs_record *rec);
/* Encodes rec (tag and fields, as described) at p, which has room for
 * hs_rec_bound(rec) bytes; advances the delta state. */
uint8_t *hs_rec_encode(struct hs_dec *st, uint8_t *p,
		       const struct hs_record *rec);
size_t hs_rec_bound(const struct hs_record *rec);
/* dump's line for rec, without time and thread: "malloc ptr=0x... ". */
void hs_rec_print(FILE *out, const struct hs_record *rec);
/* The description's row of heapslope-trace(5)'s table of records:
 * "0x10+F<TAB>alloc<TAB>size, stack, ptr (signed)". */
void hs_rec_layout(FILE *out, const struct hs_rec_desc *d);
/* The same for an extension's payload: "1<TAB>map<TAB>addr, len, ...". */
void hs_ext_layout(FILE *out, const struct hs_rec_desc *d);
/* A string as dump prints it: quoted, escaped. */
void hs_print_str(FILE *out, const char *s, size_t n);

#endif
