#include "columns.h"

#include <string.h>

#include "records.h"
#include "trace_format.h"
#include "varint.h"

/* The columns, named as records.h declares them. */
enum { TAGS = HS_COL_TAGS, SIZES = HS_COL_SIZES, STACKS = HS_COL_STACKS,
       PTRS = HS_COL_PTRS, REST = HS_COL_REST, NSTREAMS = HS_COLUMNS };

struct cursor {
	const uint8_t *p, *end;
};

/* Where a column goes; counting: nothing is written, n sums its bytes
 * (columns_encode's first pass, which sizes the columns). */
struct sink {
	uint8_t *p, *end;
	size_t n;
	int counting;
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

/* Moves one field between the row stream and its column; v: the value
 * read, for the counts and flags that say what follows. */
static int move(const struct hs_field *f, struct cursor *row_in,
		struct sink *row_out, struct cursor *cin, struct sink *cout,
		int encode, uint64_t *v)
{
	if (f->type == HS_F_STR)
		return encode ? move_str(row_in, &cout[f->column])
			      : move_str(&cin[f->column], row_out);
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

size_t columns_decode(const uint8_t *cols, size_t n, uint8_t *rows,
		      size_t cap)
{
	struct cursor c = { cols, cols + n };
	struct cursor col[NSTREAMS];
	uint64_t len[NSTREAMS];
	if (c.p == c.end || *c.p++ != NSTREAMS)
		return (size_t)-1;
	for (int s = 0; s < NSTREAMS; s++)
		if (varint_get(&c.p, c.end, &len[s]))
			return (size_t)-1;
	for (int s = 0; s < NSTREAMS; s++) {
		if (len[s] > (uint64_t)(c.end - c.p))
			return (size_t)-1;
		col[s] = (struct cursor){ c.p, c.p + len[s] };
		c.p += len[s];
	}
	struct sink out = { .p = rows, .end = rows + cap };
	while (col[TAGS].p < col[TAGS].end) {
		unsigned tag = *col[TAGS].p++;
		if (out.p == out.end)
			return (size_t)-1;
		*out.p++ = (uint8_t)tag;
		/* the hot records inline, as in columns_encode */
		int bad;
		switch (HS_TAG_KIND(tag)) {
		case HS_REC_ALLOC:
			bad = copy_varint(&col[SIZES], &out) ||
			      copy_varint(&col[STACKS], &out) ||
			      copy_varint(&col[PTRS], &out);
			break;
		case HS_REC_FREE:
			bad = copy_varint(&col[PTRS], &out);
			break;
		case HS_REC_REALLOC:
			bad = copy_varint(&col[PTRS], &out) ||
			      copy_varint(&col[PTRS], &out) ||
			      copy_varint(&col[SIZES], &out) ||
			      copy_varint(&col[STACKS], &out);
			break;
		default:
			bad = tag == HS_REC_EXT
				      ? copy_varint(&col[REST], &out) ||
						move_str(&col[REST], &out)
				      : walk(tag, NULL, &out, col, NULL, 0);
		}
		if (bad)
			return (size_t)-1;
	}
	for (int s = 0; s < NSTREAMS; s++)
		if (col[s].p != col[s].end)
			return (size_t)-1; /* leftover bytes: corrupt */
	return (size_t)(out.p - rows);
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

/* One pass over the rows: into the columns, or with counting sinks, the
 * length of each.  Returns 0, or -1 if the rows do not parse or a
 * column has no room. */
static int transpose(const uint8_t *rows, size_t n, struct sink *col)
{
	struct cursor in = { rows, rows + n };
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
			default: /* an extension: type and payload, as walk */
				bad = tag == HS_REC_EXT
					      ? skip_varint(&in, &col[REST].n) ||
							skip_str(&in, &col[REST].n)
					      : walk(tag, &in, NULL, NULL, col, 1);
			}
		} else {
			if (col[TAGS].p == col[TAGS].end)
				return -1;
			*col[TAGS].p++ = (uint8_t)tag;
			switch (HS_TAG_KIND(tag)) {
			case HS_REC_ALLOC:
				bad = copy_varint(&in, &col[SIZES]) ||
				      copy_varint(&in, &col[STACKS]) ||
				      copy_varint(&in, &col[PTRS]);
				break;
			case HS_REC_FREE:
				bad = copy_varint(&in, &col[PTRS]);
				break;
			case HS_REC_REALLOC:
				bad = copy_varint(&in, &col[PTRS]) ||
				      copy_varint(&in, &col[PTRS]) ||
				      copy_varint(&in, &col[SIZES]) ||
				      copy_varint(&in, &col[STACKS]);
				break;
			default: /* extensions (a Python program's stack
				  * changes: one in two events) as walk would */
				bad = tag == HS_REC_EXT
					      ? copy_varint(&in, &col[REST]) ||
							move_str(&in, &col[REST])
					      : walk(tag, &in, NULL, NULL, col, 1);
			}
		}
		if (bad)
			return -1;
	}
	return 0;
}

/* Two passes, the first to size the columns, so that they are written in
 * place: no scratch of a region per column, which the recorder would
 * keep resident (five times its buffer). */
size_t columns_encode(const uint8_t *rows, size_t n, uint8_t *out,
		      size_t cap)
{
	struct sink col[NSTREAMS];
	for (int s = 0; s < NSTREAMS; s++)
		col[s] = (struct sink){ .counting = 1 };
	if (transpose(rows, n, col))
		return 0;
	uint8_t *o = out, *end = out + cap;
	if (cap < 1 + NSTREAMS * HS_VARINT_MAX)
		return 0;
	*o++ = NSTREAMS;
	size_t total = 0;
	for (int s = 0; s < NSTREAMS; s++) {
		o = varint_put(o, col[s].n);
		total += col[s].n;
	}
	if (total > (size_t)(end - o))
		return 0;
	for (int s = 0; s < NSTREAMS; s++) {
		size_t len = col[s].n;
		col[s] = (struct sink){ o, o + len, 0, 0 };
		o += len;
	}
	/* each column must come out at exactly its counted length */
	if (transpose(rows, n, col))
		return 0;
	for (int s = 0; s < NSTREAMS; s++)
		if (col[s].p != col[s].end)
			return 0;
	return (size_t)(o - out);
}
