#include "columns.h"

#include <string.h>

#include "trace_format.h"
#include "varint.h"

/* Where each field of a record goes. */
enum { TAGS, SIZES, STACKS, PTRS, REST, NSTREAMS };

struct cursor {
	const uint8_t *p, *end;
};

struct sink {
	uint8_t *p, *end;
};

static int put(struct sink *out, const uint8_t *src, size_t n)
{
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

/* Walks one record's fields (tag already moved), moving each between the
 * row stream and its column.  encode: row -> columns; decode: columns ->
 * row.  The same walk serves both directions, so they cannot disagree. */
static int walk(unsigned tag, struct cursor *row_in, struct sink *row_out,
		struct cursor *cin, struct sink *cout, int encode)
{
#define F(stream)                                                            \
	(encode ? move_varint(row_in, &cout[stream], NULL)                    \
		: move_varint(&cin[stream], row_out, NULL))
#define FV(stream, v)                                                        \
	(encode ? move_varint(row_in, &cout[stream], v)                       \
		: move_varint(&cin[stream], row_out, v))
#define STR(stream)                                                          \
	(encode ? move_str(row_in, &cout[stream])                             \
		: move_str(&cin[stream], row_out))
	uint64_t n;
	unsigned kind = tag >= HS_REC_ALLOC ? HS_TAG_KIND(tag) : tag;
	switch (kind) {
	case HS_REC_ALLOC:
		return F(SIZES) || F(STACKS) || F(PTRS);
	case HS_REC_FREE:
		return F(PTRS);
	case HS_REC_REALLOC:
		return F(PTRS) || F(PTRS) || F(SIZES) || F(STACKS);
	case HS_REC_FAIL:
		return F(SIZES) || F(STACKS);
	case HS_REC_MUNMAP:
		return F(PTRS) || F(SIZES);
	case HS_REC_STACK:
		return F(REST) || F(REST) || F(REST);
	case HS_REC_MODULE:
		if (F(REST) || STR(REST) || STR(REST) || FV(REST, &n))
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (F(REST) || F(REST) || F(REST) || F(REST))
				return -1;
		return 0;
	case HS_REC_MODULE_GONE:
	case HS_REC_THREAD:
	case HS_REC_SWITCH:
	case HS_REC_TIME:
	case HS_REC_EXIT:
		return F(REST);
	case HS_REC_THREAD_NAME:
		return F(REST) || STR(REST);
	case HS_REC_MARK:
		return F(REST) || F(REST) || STR(REST);
	case HS_REC_SAMPLE:
		if (F(REST) || F(REST) || FV(REST, &n))
			return -1;
		if (n & ~HS_SAMPLE_KNOWN)
			return -1;
		for (int i = 0; (n & HS_SAMPLE_MALLINFO) && i < HS_MALLINFO_FIELDS;
		     i++)
			if (F(REST))
				return -1;
		if ((n & HS_SAMPLE_BRK) && F(REST))
			return -1;
		return 0;
	case HS_REC_END:
		if (F(REST) || FV(REST, &n))
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (F(REST))
				return -1;
		return 0;
	case HS_REC_EXEC:
	case HS_REC_STOP:
		return STR(REST);
	default:
		return -1;
	}
#undef F
#undef FV
#undef STR
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
	struct sink out = { rows, rows + cap };
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
		default:
			bad = walk(tag, NULL, &out, col, NULL, 0);
		}
		if (bad)
			return (size_t)-1;
	}
	for (int s = 0; s < NSTREAMS; s++)
		if (col[s].p != col[s].end)
			return (size_t)-1; /* leftover bytes: corrupt */
	return (size_t)(out.p - rows);
}

size_t columns_encode(const uint8_t *rows, size_t n, uint8_t *out,
		      size_t cap, uint8_t *scratch)
{
	struct cursor in = { rows, rows + n };
	struct sink col[NSTREAMS];
	const size_t region = n + 16;
	for (int s = 0; s < NSTREAMS; s++)
		col[s] = (struct sink){ scratch + (size_t)s * region,
					scratch + (size_t)s * region + n };
	while (in.p < in.end) {
		unsigned tag = *in.p++;
		*col[TAGS].p++ = (uint8_t)tag;
		/* the hot records inline; everything else by the walk */
		switch (HS_TAG_KIND(tag)) {
		case HS_REC_ALLOC:
			if (copy_varint(&in, &col[SIZES]) ||
			    copy_varint(&in, &col[STACKS]) ||
			    copy_varint(&in, &col[PTRS]))
				return 0;
			continue;
		case HS_REC_FREE:
			if (copy_varint(&in, &col[PTRS]))
				return 0;
			continue;
		default:
			if (walk(tag, &in, NULL, NULL, col, 1))
				return 0;
		}
	}
	uint8_t *o = out, *end = out + cap;
	if (cap < 1 + NSTREAMS * HS_VARINT_MAX)
		return 0;
	*o++ = NSTREAMS;
	for (int s = 0; s < NSTREAMS; s++)
		o = varint_put(o, (uint64_t)(col[s].p -
					     (scratch + (size_t)s * region)));
	for (int s = 0; s < NSTREAMS; s++) {
		size_t len = (size_t)(col[s].p - (scratch + (size_t)s * region));
		if (len > (size_t)(end - o))
			return 0;
		memcpy(o, scratch + (size_t)s * region, len);
		o += len;
	}
	return (size_t)(o - out);
}
