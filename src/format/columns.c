#include "columns.h"

#include <stdlib.h>
#include <string.h>

#include "records.h"
#include "trace_format.h"
#include "varint.h"

/* The columns, named as records.h declares them. */
enum { TAGS = HS_COL_TAGS, SIZES = HS_COL_SIZES, STACKS = HS_COL_STACKS,
       PTRS = HS_COL_PTRS, REST = HS_COL_REST, NSTREAMS = HS_COLUMNS };

struct ptr_model;

struct cursor {
	const uint8_t *p, *end;
	struct ptr_model *pm; /* the pointer column of a modeled chunk */
};

/* Where a column goes; counting: nothing is written, n sums its bytes
 * (columns_encode's first pass, which sizes the columns). */
struct sink {
	uint8_t *p, *end;
	size_t n;
	int counting;
	struct ptr_model *pm; /* the pointer column of a modeled chunk */
};

static int put(struct sink *out, const uint8_t *src, size_t n)
{
	if (out->counting) {
		out->n += n;
		return 0;
	}
	if (n > (size_t)(out->end - out->p))
		return -1;
	memcpy(out->p, src, n);
	out->p += n;
	return 0;
}

/* One field moved from a source to a sink: a varint, or n raw bytes. */
static int move_varint(struct cursor *in, struct sink *out, uint64_t *v)
{
	uint64_t x;
	const uint8_t *start = in->p;
	if (varint_get(&in->p, in->end, &x))
		return -1;
	if (put(out, start, (size_t)(in->p - start)))
		return -1;
	if (v)
		*v = x;
	return 0;
}

static int move_bytes(struct cursor *in, struct sink *out, uint64_t n)
{
	if (n > (uint64_t)(in->end - in->p) || put(out, in->p, (size_t)n))
		return -1;
	in->p += n;
	return 0;
}

static int move_str(struct cursor *in, struct sink *out)
{
	uint64_t n;
	return move_varint(in, out, &n) || move_bytes(in, out, n) ? -1 : 0;
}

/* move_varint for the hot fields: one 8-byte load and store when both
 * sides have 8 bytes to spare (the length comes from the stop bits). */
static inline int copy_varint(struct cursor *in, struct sink *out)
{
	if (in->end - in->p >= 8 && out->end - out->p >= 8) {
		uint64_t w;
		memcpy(&w, in->p, 8);
		uint64_t stops = ~w & 0x8080808080808080ull;
		if (stops) {
			size_t l = ((size_t)__builtin_ctzll(stops) >> 3) + 1;
			memcpy(out->p, &w, 8);
			out->p += l;
			in->p += l;
			return 0;
		}
	}
	return move_varint(in, out, NULL);
}

/* A varint at in, read: from one 8-byte load when it fits in it. */
static inline __attribute__((always_inline)) int
get_varint(struct cursor *in, uint64_t *v)
{
	if (in->end - in->p >= 8) {
		uint64_t w;
		memcpy(&w, in->p, 8);
		uint64_t stops = ~w & 0x8080808080808080ull;
		if (stops) {
			unsigned b = (unsigned)__builtin_ctzll(stops); /* 8l-1 */
			w &= b == 63 ? ~0ull : (2ull << b) - 1;
			*v = (w & 0x7f) | (w >> 1 & 0x3f80) |
			     (w >> 2 & 0x1fc000) | (w >> 3 & 0xfe00000) |
			     (w >> 4 & 0x7f0000000ull) |
			     (w >> 5 & 0x3f800000000ull) |
			     (w >> 6 & 0x1fc0000000000ull) |
			     (w >> 7 & 0xfe000000000000ull);
			in->p += (b >> 3) + 1;
			return 0;
		}
	}
	return varint_get(&in->p, in->end, v);
}

/* An extension record after its tag (type, payload length, payload),
 * moved whole to out in one 8-byte copy when short (HS_EXT_PY_AT: one in
 * two events of a Python program); n: its length, added up. */
static inline __attribute__((always_inline)) int
ext_short(const struct cursor *in, size_t *n)
{
	const uint8_t *p = in->p;
	if (in->end - p < 8 || (p[0] | p[1]) & 0x80 || p[1] > 6)
		return 0;
	*n = 2 + (size_t)p[1];
	return 1;
}

static inline int copy_ext(struct cursor *in, struct sink *out)
{
	size_t n;
	if (out->end - out->p >= 8 && ext_short(in, &n)) {
		memcpy(out->p, in->p, 8);
		out->p += n;
		in->p += n;
		return 0;
	}
	return move_varint(in, out, NULL) || move_str(in, out);
}

/* HS_REC_STACK after its tag, moved as walk would: three varints of the
 * rest column (a new stack node: most of the records of a program whose
 * stacks keep changing, 2.1 M of them in `import torch`). */
static inline int copy_stack(struct cursor *in, struct sink *out)
{
	return copy_varint(in, out) || copy_varint(in, out) ||
	       copy_varint(in, out);
}

/* ---- the pointer model of a modeled chunk ----
 * A pointer is mostly one seen a little before: a free's, the block an
 * allocation returned; an allocation's, a block freed just before (the
 * allocator's free lists are last in, first out).  The writer numbers
 * the chunk's allocations and frees, keeps the latest of each by
 * pointer in a table, and writes a pointer found there as how many
 * allocations (frees) back it came: v = (k << 1), k from 0.  Any other
 * is the row's delta against the previous pointer: v = zigzag << 1 | 1.
 * The pointers of munmap records are the row's delta as it is.  The
 * reader keeps only the last PM_REACH pointers of each kind by number,
 * which is as far back as a reference may reach. */
enum { PM_PLAIN, PM_ALLOC, PM_FREE };
#define PM_BITS 16
#define PM_SLOTS (1u << PM_BITS)
#define PM_REACH (1u << 16)

/* A slot holds the allocation and the free whose pointers hash there:
 * one cache line to look one up and file the other. */
struct pm_slot {
	uint64_t ap, fp; /* pointers */
	uint32_t ao, fo; /* their number + 1; 0: none */
};

struct hs_ptr_tables {
	struct pm_slot s[PM_SLOTS];
};

struct ptr_model {
	uint64_t prev;  /* the previous pointer, as the rows sum it */
	uint32_t na, nf; /* allocations and frees so far */
	struct hs_ptr_tables *t;  /* writing */
	uint64_t *ra, *rf;        /* reading: rings of PM_REACH */
};

size_t columns_tables_size(void)
{
	return sizeof(struct hs_ptr_tables);
}

static inline uint32_t pm_hash(uint64_t p)
{
	return (uint32_t)((p >> 4) * 0x9e3779b97f4a7c15ull >> (64 - PM_BITS));
}

static inline int put_varint(struct sink *out, uint64_t v)
{
	uint8_t tmp[HS_VARINT_MAX];
	if (out->end - out->p >= HS_VARINT_MAX) {
		out->p = varint_put(out->p, v);
		return 0;
	}
	return put(out, tmp, (size_t)(varint_put(tmp, v) - tmp));
}

/* Row pointer (a delta) -> the modeled value in the pointer column. */
static inline __attribute__((always_inline)) int
pm_encode(struct ptr_model *m, struct cursor *in, struct sink *out, int kind)
{
	uint64_t z;
	if (get_varint(in, &z))
		return -1;
	uint64_t p = m->prev + (uint64_t)zigzag_decode(z), v = z;
	m->prev = p;
	if (kind != PM_PLAIN) {
		struct pm_slot *e = &m->t->s[pm_hash(p)];
		if (z >> 63)
			return -1; /* too wide for the flag bit: plain */
		v = z << 1 | 1;
		if (kind == PM_FREE) {
			if (e->ao && e->ap == p && m->na - e->ao < PM_REACH)
				v = (uint64_t)(m->na - e->ao) << 1;
			e->fp = p;
			e->fo = ++m->nf;
		} else {
			if (e->fo && e->fp == p && m->nf - e->fo < PM_REACH)
				v = (uint64_t)(m->nf - e->fo) << 1;
			e->ap = p;
			e->ao = ++m->na;
		}
	}
	return put_varint(out, v);
}

/* The modeled value -> the row's delta. */
static inline __attribute__((always_inline)) int
pm_decode(struct ptr_model *m, struct cursor *in, struct sink *out, int kind)
{
	uint64_t v, p;
	if (get_varint(in, &v))
		return -1;
	if (kind == PM_PLAIN) {
		p = m->prev + (uint64_t)zigzag_decode(v);
	} else if (v & 1) {
		p = m->prev + (uint64_t)zigzag_decode(v >> 1);
	} else {
		uint64_t k = v >> 1;
		uint32_t n = kind == PM_FREE ? m->na : m->nf;
		if (k >= n || k >= PM_REACH)
			return -1;
		p = (kind == PM_FREE ? m->ra : m->rf)[(n - 1 - k) &
						      (PM_REACH - 1)];
	}
	if (kind == PM_FREE)
		m->rf[m->nf++ & (PM_REACH - 1)] = p;
	else if (kind == PM_ALLOC)
		m->ra[m->na++ & (PM_REACH - 1)] = p;
	uint64_t z = zigzag_encode((int64_t)(p - m->prev));
	m->prev = p;
	return put_varint(out, z);
}

/* One pointer between a row and the column: as it is, or modeled. */
static inline __attribute__((always_inline)) int
move_ptr(struct cursor *in, struct sink *out, int encode, int kind)
{
	if (encode ? !out->pm : !in->pm)
		return copy_varint(in, out);
	return encode ? pm_encode(out->pm, in, out, kind)
		      : pm_decode(in->pm, in, out, kind);
}

/* Moves one field between the row stream and its column; v: the value
 * read, for the counts and flags that say what follows. */
static int move(const struct hs_field *f, struct cursor *row_in,
		struct sink *row_out, struct cursor *cin, struct sink *cout,
		int encode, uint64_t *v)
{
	if (f->type == HS_F_STR)
		return encode ? move_str(row_in, &cout[f->column])
			      : move_str(&cin[f->column], row_out);
	if (f->type == HS_F_PTR && f->column == PTRS)
		return encode ? move_ptr(row_in, &cout[PTRS], 1, PM_PLAIN)
			      : move_ptr(&cin[PTRS], row_out, 0, PM_PLAIN);
	return encode ? move_varint(row_in, &cout[f->column], v)
		      : move_varint(&cin[f->column], row_out, v);
}

/* Walks one record's fields (tag already moved) as records.c describes
 * them, moving each between the row stream and its column.  encode: row
 * -> columns; decode: columns -> row.  The same walk serves both
 * directions, so they cannot disagree. */
static const struct hs_field newer = { .type = HS_F_UINT,
				       .column = HS_COL_REST };

static int walk(unsigned tag, struct cursor *row_in, struct sink *row_out,
		struct cursor *cin, struct sink *cout, int encode)
{
	const struct hs_rec_desc *d = hs_rec_desc(tag);
	if (!d)
		return -1;
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		uint64_t n = 0; /* set by move(); -O3 cannot see it */
		if (move(f, row_in, row_out, cin, cout, encode, &n))
			return -1;
		if (f->type == HS_F_COUNT) {
			for (uint64_t k = 0; k < n; k++)
				for (unsigned j = 1; j <= f->group; j++)
					if (move(&f[j], row_in, row_out, cin,
						 cout, encode, NULL))
						return -1;
			i += f->group;
		} else if (f->type == HS_F_FLAGS) {
			const struct hs_field *g = f + 1;
			for (unsigned b = 0; b < 64; b++) {
				/* an unknown bit: one varint, in REST */
				unsigned size = b < f->group ? f->sizes[b] : 1;
				const struct hs_field *at =
					b < f->group ? g : &newer;
				for (unsigned j = 0; (n >> b & 1) && j < size;
				     j++)
					if (move(&at[j], row_in, row_out, cin,
						 cout, encode, NULL))
						return -1;
				if (b < f->group)
					g += size;
			}
			i += (unsigned)(g - (f + 1));
		}
	}
	return 0;
}

size_t columns_bound(size_t n)
{
	return n + 1 + NSTREAMS * HS_VARINT_MAX;
}

/* A chunk's first byte: its layout. */
#define LAYOUT_PLAIN NSTREAMS             /* five lengths, five columns */
#define LAYOUT_MODELED (0x80 | NSTREAMS)  /* see columns.h */

/* The columns of a chunk: cursors on each, and the rows' length. */
static int columns_open(const uint8_t *cols, size_t n, struct cursor *col,
			uint64_t *rows_len)
{
	struct cursor c = { cols, cols + n, NULL };
	uint64_t len[NSTREAMS];
	if (c.p == c.end)
		return -1;
	unsigned layout = *c.p++;
	if (layout != LAYOUT_PLAIN && layout != LAYOUT_MODELED)
		return -1;
	*rows_len = n;
	if (layout == LAYOUT_MODELED && varint_get(&c.p, c.end, rows_len))
		return -1;
	for (int s = 0; s < NSTREAMS; s++)
		if ((layout == LAYOUT_PLAIN || s != PTRS) &&
		    varint_get(&c.p, c.end, &len[s]))
			return -1;
	for (int s = 0; s < NSTREAMS; s++) {
		if (layout == LAYOUT_MODELED && s == PTRS)
			continue;
		if (len[s] > (uint64_t)(c.end - c.p))
			return -1;
		col[s] = (struct cursor){ c.p, c.p + len[s], NULL };
		c.p += len[s];
	}
	if (layout == LAYOUT_MODELED) /* the rest */
		col[PTRS] = (struct cursor){ c.p, c.end, NULL };
	else if (c.p != c.end)
		return -1;
	return layout == LAYOUT_MODELED;
}

size_t columns_rows_size(const uint8_t *cols, size_t n)
{
	struct cursor col[NSTREAMS];
	uint64_t rows_len;
	if (columns_open(cols, n, col, &rows_len) < 0)
		return (size_t)-1;
	return rows_len > SIZE_MAX / 2 ? (size_t)-1 : (size_t)rows_len;
}

size_t columns_decode(const uint8_t *cols, size_t n, uint8_t *rows,
		      size_t cap)
{
	struct cursor col[NSTREAMS];
	uint64_t rows_len;
	struct ptr_model pm = { 0 };
	int modeled = columns_open(cols, n, col, &rows_len);
	if (modeled < 0)
		return (size_t)-1;
	if (modeled) {
		if (rows_len > cap)
			return (size_t)-1;
		cap = (size_t)rows_len;
		/* written before they are read: never cleared */
		pm.ra = malloc(2 * PM_REACH * sizeof(*pm.ra));
		if (!pm.ra)
			return (size_t)-1;
		pm.rf = pm.ra + PM_REACH;
		col[PTRS].pm = &pm;
	}
	struct sink out = { .p = rows, .end = rows + cap };
	size_t rc = (size_t)-1;
	while (col[TAGS].p < col[TAGS].end) {
		unsigned tag = *col[TAGS].p++;
		if (out.p == out.end)
			goto out;
		*out.p++ = (uint8_t)tag;
		/* the hot records inline, as in columns_encode */
		int bad;
		switch (HS_TAG_KIND(tag)) {
		case HS_REC_ALLOC:
			bad = copy_varint(&col[SIZES], &out) ||
			      copy_varint(&col[STACKS], &out) ||
			      move_ptr(&col[PTRS], &out, 0, PM_ALLOC);
			break;
		case HS_REC_FREE:
			bad = move_ptr(&col[PTRS], &out, 0, PM_FREE);
			break;
		case HS_REC_REALLOC:
			bad = move_ptr(&col[PTRS], &out, 0, PM_FREE) ||
			      move_ptr(&col[PTRS], &out, 0, PM_ALLOC) ||
			      copy_varint(&col[SIZES], &out) ||
			      copy_varint(&col[STACKS], &out);
			break;
		default:
			if (tag == HS_REC_STACK)
				bad = copy_stack(&col[REST], &out);
			else if (tag == HS_REC_EXT)
				bad = copy_ext(&col[REST], &out);
			else
				bad = walk(tag, NULL, &out, col, NULL, 0);
		}
		if (bad)
			goto out;
	}
	for (int s = 0; s < NSTREAMS; s++)
		if (col[s].p != col[s].end)
			goto out; /* leftover bytes: corrupt */
	if (modeled && out.p != out.end)
		goto out; /* not the length it said */
	rc = (size_t)(out.p - rows);
out:
	free(pm.ra);
	return rc;
}

/* The length of the varint at in, which is moved past it. */
static inline int skip_varint(struct cursor *in, size_t *len)
{
	if (in->end - in->p >= 8) { /* the length from the stop bits */
		uint64_t w;
		memcpy(&w, in->p, 8);
		uint64_t stops = ~w & 0x8080808080808080ull;
		if (stops) {
			size_t l = ((size_t)__builtin_ctzll(stops) >> 3) + 1;
			in->p += l;
			*len += l;
			return 0;
		}
	}
	const uint8_t *start = in->p;
	uint64_t x;
	if (varint_get(&in->p, in->end, &x))
		return -1;
	*len += (size_t)(in->p - start);
	return 0;
}

/* The length of the string (length varint and bytes) at in. */
static inline int skip_str(struct cursor *in, size_t *len)
{
	const uint8_t *start = in->p;
	uint64_t n;
	if (varint_get(&in->p, in->end, &n) ||
	    n > (uint64_t)(in->end - in->p))
		return -1;
	in->p += n;
	*len += (size_t)(in->p - start);
	return 0;
}

/* The length of an HS_REC_STACK after its tag, at in (copy_stack). */
static inline int skip_stack(struct cursor *in, size_t *len)
{
	return skip_varint(in, len) || skip_varint(in, len) ||
	       skip_varint(in, len);
}

/* The length of an extension record after its tag, at in. */
static inline int skip_ext(struct cursor *in, size_t *len)
{
	size_t l;
	if (ext_short(in, &l)) {
		in->p += l;
		*len += l;
		return 0;
	}
	return skip_varint(in, len) || skip_str(in, len);
}

/* One pass over the rows: into the columns, or with counting sinks, the
 * length of each.  Returns 0, or -1 if the rows do not parse or a
 * column has no room. */
static int transpose(const uint8_t *rows, size_t n, struct sink *col)
{
	struct cursor in = { rows, rows + n, NULL };
	int counting = col[TAGS].counting;
	while (in.p < in.end) {
		unsigned tag = *in.p++;
		int bad;
		if (counting) {
			col[TAGS].n++;
			/* the hot records inline; everything else by the walk */
			switch (HS_TAG_KIND(tag)) {
			case HS_REC_ALLOC:
				bad = skip_varint(&in, &col[SIZES].n) ||
				      skip_varint(&in, &col[STACKS].n) ||
				      skip_varint(&in, &col[PTRS].n);
				break;
			case HS_REC_FREE:
				bad = skip_varint(&in, &col[PTRS].n);
				break;
			case HS_REC_REALLOC:
				bad = skip_varint(&in, &col[PTRS].n) ||
				      skip_varint(&in, &col[PTRS].n) ||
				      skip_varint(&in, &col[SIZES].n) ||
				      skip_varint(&in, &col[STACKS].n);
				break;
			default: /* stack nodes and extensions as walk */
				if (tag == HS_REC_STACK)
					bad = skip_stack(&in, &col[REST].n);
				else if (tag == HS_REC_EXT)
					bad = skip_ext(&in, &col[REST].n);
				else
					bad = walk(tag, &in, NULL, NULL, col, 1);
			}
		} else {
			if (col[TAGS].p == col[TAGS].end)
				return -1;
			*col[TAGS].p++ = (uint8_t)tag;
			switch (HS_TAG_KIND(tag)) {
			case HS_REC_ALLOC:
				bad = copy_varint(&in, &col[SIZES]) ||
				      copy_varint(&in, &col[STACKS]) ||
				      move_ptr(&in, &col[PTRS], 1, PM_ALLOC);
				break;
			case HS_REC_FREE:
				bad = move_ptr(&in, &col[PTRS], 1, PM_FREE);
				break;
			case HS_REC_REALLOC:
				bad = move_ptr(&in, &col[PTRS], 1, PM_FREE) ||
				      move_ptr(&in, &col[PTRS], 1, PM_ALLOC) ||
				      copy_varint(&in, &col[SIZES]) ||
				      copy_varint(&in, &col[STACKS]);
				break;
			default: /* stack nodes and extensions (a Python
				  * program's stack changes: one in two
				  * events) as walk would move them */
				if (tag == HS_REC_STACK)
					bad = copy_stack(&in, &col[REST]);
				else if (tag == HS_REC_EXT)
					bad = copy_ext(&in, &col[REST]);
				else
					bad = walk(tag, &in, NULL, NULL, col, 1);
			}
		}
		if (bad)
			return -1;
	}
	return 0;
}

/* Two passes, the first to size the columns, so that they are written in
 * place: no scratch of a region per column, which the recorder would
 * keep resident (five times its buffer).  With tables, the pointer column
 * is modeled and goes last, where its length needs no counting; it falls
 * back to the plain layout if the model does not fit. */
static size_t encode(const uint8_t *rows, size_t n, uint8_t *out, size_t cap,
		     struct hs_ptr_tables *t)
{
	struct sink col[NSTREAMS];
	struct ptr_model pm = { .t = t };
	for (int s = 0; s < NSTREAMS; s++)
		col[s] = (struct sink){ .counting = 1 };
	if (transpose(rows, n, col))
		return 0;
	uint8_t *o = out, *end = out + cap;
	if (cap < 2 + NSTREAMS * HS_VARINT_MAX)
		return 0;
	*o++ = t ? LAYOUT_MODELED : LAYOUT_PLAIN;
	if (t)
		o = varint_put(o, n);
	size_t total = 0;
	for (int s = 0; s < NSTREAMS; s++) {
		if (t && s == PTRS)
			continue;
		o = varint_put(o, col[s].n);
		total += col[s].n;
	}
	if (total > (size_t)(end - o))
		return 0;
	for (int s = 0; s < NSTREAMS; s++) {
		if (t && s == PTRS)
			continue;
		size_t len = col[s].n;
		col[s] = (struct sink){ o, o + len, 0, 0, NULL };
		o += len;
	}
	if (t) {
		memset(t, 0, sizeof(*t));
		col[PTRS] = (struct sink){ o, end, 0, 0, &pm };
	}
	/* each column must come out at exactly its counted length */
	if (transpose(rows, n, col))
		return 0;
	for (int s = 0; s < NSTREAMS; s++)
		if (col[s].p != col[s].end && !(t && s == PTRS))
			return 0;
	return (size_t)((t ? col[PTRS].p : o) - out);
}

size_t columns_encode(const uint8_t *rows, size_t n, uint8_t *out,
		      size_t cap, struct hs_ptr_tables *tables)
{
	size_t c = tables ? encode(rows, n, out, cap, tables) : 0;
	return c ? c : encode(rows, n, out, cap, NULL);
}
