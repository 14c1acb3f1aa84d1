#include "records.h"

#include <inttypes.h>
#include <string.h>

#include "reader.h"
#include "varint.h"

#define AT(field) ((uint16_t)offsetof(struct hs_record, field))
#define SEG_AT(field) ((uint16_t)offsetof(struct hs_segment, field))

/* A field of width w at offset at, stored as type in column col. */
#define FIELD(n, ty, col, pr, w, off)                                        \
	{ .name = n, .type = ty, .column = col, .print = pr, .width = w,     \
	  .at = off }
#define U64(n, col, pr, field) FIELD(n, HS_F_UINT, col, pr, 8, AT(field))
#define U32(n, col, pr, field) FIELD(n, HS_F_UINT, col, pr, 4, AT(field))
#define PTR(n, field) FIELD(n, HS_F_PTR, HS_COL_PTRS, HS_P_HEX, 8, AT(field))
#define TIME() FIELD("time", HS_F_TIME, HS_COL_REST, HS_P_NONE, 0, 0)
#define STR(n, field, len)                                                   \
	{ .name = n, .type = HS_F_STR, .column = HS_COL_REST,                \
	  .print = HS_P_STR, .width = 8, .at = AT(field), .len_at = AT(len) }
#define REST(n, pr, field) U64(n, HS_COL_REST, pr, field)
#define ORDER_STORED { 0xff }

static const char *const mark_kinds[] = { "batch", NULL };

static const struct hs_rec_desc descs[] = {
	{ HS_REC_STACK, "stack", 0, 3, {
		REST("id", HS_P_DEC, id),
		REST("parent", HS_P_DEC, parent),
		REST("ip", HS_P_HEX, ip),
	  }, ORDER_STORED },
	{ HS_REC_MODULE, "module", 0, 8, {
		REST("base", HS_P_HEX, base),
		STR("path", str, str_len),
		{ .name = "build_id", .type = HS_F_STR, .column = HS_COL_REST,
		  .print = HS_P_BYTES, .width = 8, .at = AT(build_id),
		  .len_at = AT(build_id_len) },
		{ .name = "seg", .type = HS_F_COUNT, .column = HS_COL_REST,
		  .print = HS_P_SEG, .width = 4, .at = AT(segs),
		  .len_at = AT(nseg), .group = 4,
		  .stride = sizeof(struct hs_segment), .max = HS_MAX_SEGS },
		FIELD("vaddr", HS_F_UINT, HS_COL_REST, HS_P_NONE, 8,
		      SEG_AT(vaddr)),
		FIELD("memsz", HS_F_UINT, HS_COL_REST, HS_P_NONE, 8,
		      SEG_AT(memsz)),
		FIELD("offset", HS_F_UINT, HS_COL_REST, HS_P_NONE, 8,
		      SEG_AT(offset)),
		FIELD("flags", HS_F_UINT, HS_COL_REST, HS_P_NONE, 8,
		      SEG_AT(flags)),
	  }, ORDER_STORED },
	{ HS_REC_MODULE_GONE, "module-gone", 0, 1, {
		REST("base", HS_P_HEX, base),
	  }, ORDER_STORED },
	{ HS_REC_THREAD, "thread", 0, 1, { REST("tid", HS_P_DEC, tid) },
	  ORDER_STORED },
	{ HS_REC_THREAD_NAME, "thread-name", 0, 2, {
		REST("tid", HS_P_DEC, tid),
		STR("name", str, str_len),
	  }, ORDER_STORED },
	{ HS_REC_SWITCH, "switch", 0, 1, { REST("tid", HS_P_DEC, tid) },
	  ORDER_STORED },
	{ HS_REC_MARK, "mark", 0, 3, {
		TIME(),
		{ .name = "kind", .type = HS_F_UINT, .column = HS_COL_REST,
		  .print = HS_P_ENUM, .width = 4, .at = AT(mark_kind),
		  .names = mark_kinds },
		STR("label", str, str_len),
	  }, ORDER_STORED },
	{ HS_REC_SAMPLE, "sample", 0, 11, {
		TIME(),
		REST("rss", HS_P_DEC, rss),
		{ .name = "flags", .type = HS_F_FLAGS, .column = HS_COL_REST,
		  .print = HS_P_NONE, .width = 8, .at = AT(flags), .group = 2,
		  .sizes = { HS_MALLINFO_FIELDS, 1 } },
		REST("arena", HS_P_DEC, mi_arena),
		REST("ordblks", HS_P_DEC, mi_ordblks),
		REST("hblks", HS_P_DEC, mi_hblks),
		REST("hblkhd", HS_P_DEC, mi_hblkhd),
		REST("uordblks", HS_P_DEC, mi_uordblks),
		REST("fordblks", HS_P_DEC, mi_fordblks),
		REST("keepcost", HS_P_DEC, mi_keepcost),
		REST("brk", HS_P_HEXNZ, brk),
	  }, ORDER_STORED },
	{ HS_REC_TIME, "time", 0, 1, { TIME() }, ORDER_STORED },
	{ HS_REC_END, "end", 0, 3, {
		{ .name = "reason", .type = HS_F_UINT, .column = HS_COL_REST,
		  .print = HS_P_ENUM, .width = 4, .at = AT(end_reason),
		  .names = hs_end_reasons },
		{ .name = "counts", .type = HS_F_COUNT, .column = HS_COL_REST,
		  .print = HS_P_BARE, .width = 0, .at = AT(counts),
		  .group = 1, .stride = 8, .max = HS_COUNT_MAX },
		FIELD("count", HS_F_UINT, HS_COL_REST, HS_P_BARE, 8, 0),
	  }, ORDER_STORED },
	{ HS_REC_EXIT, "exit", 0, 1, { REST("status", HS_P_HEX, wait_status) },
	  ORDER_STORED },
	{ HS_REC_EXEC, "exec", 0, 1, { STR("path", str, str_len) },
	  ORDER_STORED },
	{ HS_REC_STOP, "stop", 0, 1, { STR("reason", str, str_len) },
	  ORDER_STORED },
	{ HS_REC_EXT, "ext", 0, 2, {
		REST("type", HS_P_DEC, ext_type),
		{ .name = "payload", .type = HS_F_STR, .column = HS_COL_REST,
		  .print = HS_P_NONE, .width = 8, .at = AT(ext),
		  .len_at = AT(ext_len) },
	  }, ORDER_STORED },
	{ HS_REC_ALLOC, "alloc", 1, 3, {
		U64("size", HS_COL_SIZES, HS_P_DEC, size),
		U64("stack", HS_COL_STACKS, HS_P_DEC, stack),
		PTR("ptr", ptr),
	  }, { 2, 0, 1, 0xff } },
	{ HS_REC_FREE, "free", 1, 1, { PTR("ptr", ptr) }, ORDER_STORED },
	{ HS_REC_REALLOC, "realloc", 1, 4, {
		PTR("old", old_ptr),
		PTR("ptr", ptr),
		U64("size", HS_COL_SIZES, HS_P_DEC, size),
		U64("stack", HS_COL_STACKS, HS_P_DEC, stack),
	  }, ORDER_STORED },
	{ HS_REC_FAIL, "failed", 1, 2, {
		U64("size", HS_COL_SIZES, HS_P_DEC, size),
		U64("stack", HS_COL_STACKS, HS_P_DEC, stack),
	  }, ORDER_STORED },
	{ HS_REC_MUNMAP, "munmap", 0, 2, {
		PTR("ptr", ptr),
		U64("size", HS_COL_SIZES, HS_P_DEC, size),
	  }, ORDER_STORED },
};

/* The payloads of the extension records this version knows, by type.
 * Their fields are absolute (no deltas: a reader that skips the record
 * must not lose track of the chunk's pointers and times).  A payload may
 * hold more than its fields: a newer writer's, skipped. */
static const char *const map_kinds[] = { "anon", "file", "shm", "memfd",
					 "sysv", "other", NULL };

static const struct hs_rec_desc ext_descs[] = {
	{ HS_EXT_MAP, "map", 0, 10, {
		REST("addr", HS_P_HEX, ptr),
		REST("len", HS_P_DEC, size),
		REST("prot", HS_P_HEX, map.prot),
		REST("flags", HS_P_HEX, map.flags),
		{ .name = "kind", .type = HS_F_UINT, .column = HS_COL_REST,
		  .print = HS_P_ENUM, .width = 8, .at = AT(map.kind),
		  .names = map_kinds },
		REST("dev", HS_P_DEC, map.dev),
		REST("ino", HS_P_DEC, map.ino),
		REST("offset", HS_P_HEX, map.offset),
		REST("stack", HS_P_DEC, stack),
		STR("path", str, str_len),
	  }, ORDER_STORED },
	{ HS_EXT_UNMAP, "unmap", 0, 2, {
		REST("addr", HS_P_HEX, ptr),
		REST("len", HS_P_DEC, size),
	  }, ORDER_STORED },
	{ HS_EXT_REMAP, "remap", 0, 6, {
		REST("old", HS_P_HEX, old_ptr),
		REST("old_len", HS_P_DEC, map.old_size),
		REST("addr", HS_P_HEX, ptr),
		REST("len", HS_P_DEC, size),
		REST("flags", HS_P_HEX, map.flags),
		REST("stack", HS_P_DEC, stack),
	  }, ORDER_STORED },
	{ HS_EXT_EXITING, "exiting", 0, 1, {
		REST("time", HS_P_NONE, time_ns),
	  }, ORDER_STORED },
	{ HS_EXT_PROTECT, "protect", 0, 3, {
		REST("addr", HS_P_HEX, ptr),
		REST("len", HS_P_DEC, size),
		REST("prot", HS_P_HEX, map.prot),
	  }, ORDER_STORED },
	{ HS_EXT_PY_CODE, "pycode", 0, 7, {
		REST("code", HS_P_DEC, py.code),
		REST("version", HS_P_HEX, py.version),
		REST("first_line", HS_P_DEC, py.first_line),
		STR("file", str, str_len),
		STR("name", py.name, py.name_len),
		STR("qualname", py.qualname, py.qualname_len),
		{ .name = "lines", .type = HS_F_STR, .column = HS_COL_REST,
		  .print = HS_P_BYTES, .width = 8, .at = AT(py.lines),
		  .len_at = AT(py.lines_len) },
	  }, ORDER_STORED },
	{ HS_EXT_PY_FRAME, "pyframe", 0, 5, {
		REST("id", HS_P_DEC, id),
		REST("parent", HS_P_DEC, parent),
		REST("code", HS_P_DEC, py.code),
		REST("offset", HS_P_DEC, py.offset),
		REST("flags", HS_P_DEC, py.flags),
	  }, ORDER_STORED },
	{ HS_EXT_PY_STACK, "pystack", 0, 2, {
		REST("id", HS_P_DEC, id),
		REST("python", HS_P_DEC, py.python),
	  }, ORDER_STORED },
	{ HS_EXT_REGION_NAME, "region-name", 0, 2, {
		REST("id", HS_P_DEC, id),
		STR("name", str, str_len),
	  }, ORDER_STORED },
	{ HS_EXT_REGION_BEGIN, "region-begin", 0, 1, {
		REST("id", HS_P_DEC, id),
	  }, ORDER_STORED },
	{ HS_EXT_REGION_END, "region-end", 0, 0, { }, ORDER_STORED },
	{ HS_EXT_PY_AT, "pyat", 0, 1, {
		REST("python", HS_P_DEC, py.python),
	  }, ORDER_STORED },
	{ HS_EXT_SIGNAL, "signal", 0, 1, {
		REST("signal", HS_P_DEC, signal),
	  }, ORDER_STORED },
};

#define NEXT_DESCS (sizeof(ext_descs) / sizeof(ext_descs[0]))

const struct hs_rec_desc *hs_ext_desc(uint64_t type)
{
	for (size_t i = 0; i < NEXT_DESCS; i++)
		if (ext_descs[i].kind == type)
			return &ext_descs[i];
	return NULL;
}

const struct hs_rec_desc *hs_ext_descs(size_t *n)
{
	*n = NEXT_DESCS;
	return ext_descs;
}

#define NDESCS (sizeof(descs) / sizeof(descs[0]))

/* tag -> index + 1 in descs: kinds below 0x10 by their tag, events by
 * their kind whatever the function in the low nibble */
static const uint8_t index_of[256] = {
	[HS_REC_STACK] = 1,
	[HS_REC_MODULE] = 2,
	[HS_REC_MODULE_GONE] = 3,
	[HS_REC_THREAD] = 4,
	[HS_REC_THREAD_NAME] = 5,
	[HS_REC_SWITCH] = 6,
	[HS_REC_MARK] = 7,
	[HS_REC_SAMPLE] = 8,
	[HS_REC_TIME] = 9,
	[HS_REC_END] = 10,
	[HS_REC_EXIT] = 11,
	[HS_REC_EXEC] = 12,
	[HS_REC_STOP] = 13,
	[HS_REC_EXT] = 14,
	[HS_REC_ALLOC ... HS_REC_ALLOC + 15] = 15,
	[HS_REC_FREE ... HS_REC_FREE + 15] = 16,
	[HS_REC_REALLOC ... HS_REC_REALLOC + 15] = 17,
	[HS_REC_FAIL ... HS_REC_FAIL + 15] = 18,
	[HS_REC_MUNMAP ... HS_REC_MUNMAP + 15] = 19,
};

const struct hs_rec_desc *hs_rec_desc(unsigned tag)
{
	return tag < 256 && index_of[tag] ? &descs[index_of[tag] - 1] : NULL;
}

const struct hs_rec_desc *hs_rec_descs(size_t *n)
{
	*n = NDESCS;
	return descs;
}

static void store(void *base, const struct hs_field *f, uint64_t v)
{
	uint8_t *dst = (uint8_t *)base + f->at;
	if (f->width == 8)
		memcpy(dst, &v, 8);
	else if (f->width == 4)
		memcpy(dst, &(uint32_t){ (uint32_t)v }, 4);
}

/* Zeroes the destinations of fields [f, f + n): groups absent from a
 * record read as 0. */
static void clear(void *base, const struct hs_field *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		store(base, &f[i], 0);
}

/* One scalar field (UINT, PTR, TIME) from the rows into base. */
static int get_scalar(const struct hs_field *f, struct hs_dec *st,
		      const uint8_t **p, const uint8_t *end, void *base,
		      struct hs_record *rec)
{
	uint64_t v;
	if (varint_get(p, end, &v))
		return -1;
	switch (f->type) {
	case HS_F_PTR:
		st->prev_ptr += (uint64_t)zigzag_decode(v);
		v = st->prev_ptr;
		break;
	case HS_F_TIME:
		st->time += (uint64_t)zigzag_decode(v);
		st->has_time = 1;
		rec->time_ns = st->time;
		return 0;
	default:
		break;
	}
	store(base, f, v);
	return 0;
}

int hs_rec_decode(const struct hs_rec_desc *d, struct hs_dec *st,
		  const uint8_t **pp, const uint8_t *end, struct hs_record *rec)
{
	const uint8_t *p = *pp;
	struct hs_dec saved = *st;
	st->has_time = 0;
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		uint64_t n;
		switch (f->type) {
		case HS_F_STR:
			if (varint_get(&p, end, &n) || n > (uint64_t)(end - p))
				goto bad;
			memcpy((uint8_t *)rec + f->at, &(const void *){ p },
			       sizeof(void *));
			memcpy((uint8_t *)rec + f->len_at, &(size_t){ n },
			       sizeof(size_t));
			p += n;
			break;
		case HS_F_COUNT: {
			const struct hs_field *g = f + 1;
			uint8_t *arr = (uint8_t *)rec + f->at;
			if (varint_get(&p, end, &n))
				goto bad;
			memset(arr, 0, (size_t)f->stride * f->max);
			unsigned kept = 0;
			for (uint64_t k = 0; k < n; k++) {
				uint8_t scratch[64];
				void *el = k < f->max ? arr + k * f->stride
						      : scratch;
				for (unsigned j = 0; j < f->group; j++)
					if (get_scalar(&g[j], st, &p, end, el,
						       rec))
						goto bad;
				kept += k < f->max;
			}
			if (f->width)
				memcpy((uint8_t *)rec + f->len_at, &kept, 4);
			i += f->group;
			break;
		}
		case HS_F_FLAGS: {
			const struct hs_field *g = f + 1;
			if (varint_get(&p, end, &n))
				goto bad;
			store(rec, f, n);
			for (unsigned b = 0; b < f->group; b++) {
				if (n & (1ull << b)) {
					for (unsigned j = 0; j < f->sizes[b];
					     j++)
						if (get_scalar(&g[j], st, &p,
							       end, rec, rec))
							goto bad;
				} else {
					clear(rec, g, f->sizes[b]);
				}
				g += f->sizes[b];
			}
			/* a newer writer's fields: one varint each */
			for (unsigned b = f->group; b < 64; b++) {
				uint64_t skip;
				if ((n >> b & 1) && varint_get(&p, end, &skip))
					goto bad;
			}
			i += (unsigned)(g - (f + 1));
			break;
		}
		default:
			if (get_scalar(f, st, &p, end, rec, rec))
				goto bad;
		}
	}
	/* a known extension's fields, from its payload (deltas untouched) */
	const struct hs_rec_desc *e;
	if (d->kind == HS_REC_EXT && (e = hs_ext_desc(rec->ext_type))) {
		struct hs_dec local = { 0 };
		const uint8_t *q = rec->ext;
		if (hs_rec_decode(e, &local, &q, rec->ext + rec->ext_len, rec))
			goto bad;
	}
	*pp = p;
	return 0;
bad:
	*st = saved;
	return -1;
}

static uint8_t *put_scalar(const struct hs_field *f, struct hs_dec *st,
			   uint8_t *p, const void *base,
			   const struct hs_record *rec)
{
	uint64_t v = hs_field_get(base, f);
	switch (f->type) {
	case HS_F_PTR:
		p = svarint_put(p, (int64_t)(v - st->prev_ptr));
		st->prev_ptr = v;
		return p;
	case HS_F_TIME:
		p = svarint_put(p, (int64_t)(rec->time_ns - st->time));
		st->time = rec->time_ns;
		return p;
	default:
		return varint_put(p, v);
	}
}


/* The fields of d from rec, at p. */
static uint8_t *put_fields(const struct hs_rec_desc *d, struct hs_dec *st,
			   uint8_t *p, const struct hs_record *rec)
{
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		switch (f->type) {
		case HS_F_STR: {
			const char *s;
			size_t n = hs_field_str(rec, f, &s);
			p = varint_put(p, n);
			if (n)
				memcpy(p, s, n);
			p += n;
			break;
		}
		case HS_F_COUNT: {
			const uint8_t *arr = (const uint8_t *)rec + f->at;
			unsigned n = hs_field_count(rec, f);
			p = varint_put(p, n);
			for (unsigned k = 0; k < n; k++)
				for (unsigned j = 0; j < f->group; j++)
					p = put_scalar(&f[1 + j], st, p,
						       arr + k * f->stride, rec);
			i += f->group;
			break;
		}
		case HS_F_FLAGS: {
			uint64_t bits = hs_field_get(rec, f) &
					((1ull << f->group) - 1);
			const struct hs_field *g = f + 1;
			p = varint_put(p, bits);
			for (unsigned b = 0; b < f->group; b++) {
				for (unsigned j = 0; j < f->sizes[b]; j++)
					if (bits >> b & 1)
						p = put_scalar(&g[j], st, p,
							       rec, rec);
				g += f->sizes[b];
			}
			i += (unsigned)(g - (f + 1));
			break;
		}
		default:
			p = put_scalar(f, st, p, rec, rec);
		}
	}
	return p;
}

uint8_t *hs_rec_encode(struct hs_dec *st, uint8_t *p,
		       const struct hs_record *rec)
{
	const struct hs_rec_desc *d = hs_rec_desc(rec->tag), *e;
	if (!d)
		return p;
	*p++ = (uint8_t)rec->tag;
	if (d->kind != HS_REC_EXT || !(e = hs_ext_desc(rec->ext_type)))
		return put_fields(d, st, p, rec);
	/* a known extension: its payload from the fields, after room for
	 * the type and the length, then moved behind them */
	struct hs_dec local = { 0 };
	uint8_t *q = p + 2 * HS_VARINT_MAX, *end = put_fields(e, &local, q, rec);
	size_t n = (size_t)(end - q);
	p = varint_put(p, rec->ext_type);
	p = varint_put(p, n);
	memmove(p, q, n);
	return p + n;
}

/* Bytes the fields of d take at most for rec. */
static size_t fields_bound(const struct hs_rec_desc *d,
			   const struct hs_record *rec)
{
	size_t n = 0;
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		const char *s;
		if (f->type == HS_F_STR)
			n += HS_VARINT_MAX + hs_field_str(rec, f, &s);
		else if (f->type == HS_F_COUNT)
			n += HS_VARINT_MAX * (1 + (size_t)f->max * f->group);
		else
			n += HS_VARINT_MAX;
	}
	return n;
}

size_t hs_rec_bound(const struct hs_record *rec)
{
	const struct hs_rec_desc *d = hs_rec_desc(rec->tag), *e;
	if (!d)
		return 1;
	if (d->kind == HS_REC_EXT && (e = hs_ext_desc(rec->ext_type)))
		return 1 + 2 * HS_VARINT_MAX + fields_bound(e, rec);
	return 1 + fields_bound(d, rec);
}

