/* Record and header encoders: the writing half of trace_format.h, for
 * every record (records.c declares the layouts; tests/unit/test_format.c
 * checks each encoder against the table's generic encoder).  They never
 * allocate, so the recorder can call them from inside malloc. */
#ifndef HS_ENCODER_H
#define HS_ENCODER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"
#include "varint.h"

/* Upper bound of one event record's encoded size. */
#define HS_EVENT_MAX (1 + 4 * HS_VARINT_MAX)

/* Delta state of the chunk being filled; reset for every chunk. */
struct hs_enc {
	uint64_t prev_ptr;
	uint64_t prev_time;
	uint64_t tid;
};

static inline void enc_reset(struct hs_enc *e)
{
	e->prev_ptr = 0;
	e->prev_time = 0;
	e->tid = 0;
}

static inline uint8_t *enc_ptr(struct hs_enc *e, uint8_t *p, uint64_t ptr)
{
	p = svarint_put(p, (int64_t)(ptr - e->prev_ptr));
	e->prev_ptr = ptr;
	return p;
}

static inline uint8_t *enc_time(struct hs_enc *e, uint8_t *p, uint64_t t)
{
	p = svarint_put(p, (int64_t)(t - e->prev_time));
	e->prev_time = t;
	return p;
}

/* s may be NULL when n is 0 (memcpy may not be given NULL) */
static inline uint8_t *enc_str(uint8_t *p, const void *s, size_t n)
{
	p = varint_put(p, n);
	if (n)
		memcpy(p, s, n);
	return p + n;
}

static inline uint8_t *enc_alloc(struct hs_enc *e, uint8_t *p, unsigned fn,
				 uint64_t ptr, uint64_t size, uint64_t stack)
{
	*p++ = (uint8_t)(HS_REC_ALLOC | fn);
	p = varint_put(p, size);
	p = varint_put(p, stack);
	return enc_ptr(e, p, ptr);
}

static inline uint8_t *enc_free(struct hs_enc *e, uint8_t *p, unsigned fn,
				uint64_t ptr)
{
	*p++ = (uint8_t)(HS_REC_FREE | fn);
	return enc_ptr(e, p, ptr);
}

static inline uint8_t *enc_realloc(struct hs_enc *e, uint8_t *p, unsigned fn,
				   uint64_t old, uint64_t ptr, uint64_t size,
				   uint64_t stack)
{
	*p++ = (uint8_t)(HS_REC_REALLOC | fn);
	p = enc_ptr(e, p, old);
	p = enc_ptr(e, p, ptr);
	p = varint_put(p, size);
	return varint_put(p, stack);
}

static inline uint8_t *enc_fail(uint8_t *p, unsigned fn, uint64_t size,
				uint64_t stack)
{
	*p++ = (uint8_t)(HS_REC_FAIL | fn);
	p = varint_put(p, size);
	return varint_put(p, stack);
}

static inline uint8_t *enc_munmap(struct hs_enc *e, uint8_t *p, uint64_t ptr,
				  uint64_t len)
{
	*p++ = HS_REC_MUNMAP;
	p = enc_ptr(e, p, ptr);
	return varint_put(p, len);
}

static inline uint8_t *enc_stack(uint8_t *p, uint64_t id, uint64_t parent,
				 uint64_t ip)
{
	*p++ = HS_REC_STACK;
	p = varint_put(p, id);
	p = varint_put(p, parent);
	return varint_put(p, ip);
}

/* A record of one varint: THREAD, SWITCH (tid), MODULE_GONE (base),
 * EXIT (wait status). */
static inline uint8_t *enc_u64(uint8_t *p, unsigned tag, uint64_t v)
{
	*p++ = (uint8_t)tag;
	return varint_put(p, v);
}

/* A record of one string: EXEC (path), STOP (reason). */
static inline uint8_t *enc_strrec(uint8_t *p, unsigned tag, const void *s,
				  size_t n)
{
	*p++ = (uint8_t)tag;
	return enc_str(p, s, n);
}

static inline uint8_t *enc_timerec(struct hs_enc *e, uint8_t *p, uint64_t t)
{
	*p++ = HS_REC_TIME;
	return enc_time(e, p, t);
}

static inline uint8_t *enc_thread_name(uint8_t *p, uint64_t tid,
				       const char *name, size_t n)
{
	*p++ = HS_REC_THREAD_NAME;
	p = varint_put(p, tid);
	return enc_str(p, name, n);
}

#define HS_MARK_MAX(label_len) (1 + 3 * HS_VARINT_MAX + (label_len))

static inline uint8_t *enc_mark(struct hs_enc *e, uint8_t *p, uint64_t t,
				unsigned kind, const char *label, size_t n)
{
	*p++ = HS_REC_MARK;
	p = enc_time(e, p, t);
	p = varint_put(p, kind);
	return enc_str(p, label, n);
}

/* A sample: rss, then with mi (HS_MALLINFO_FIELDS values, mallinfo2's
 * arena, ordblks, hblks, hblkhd, uordblks, fordblks, keepcost) and with
 * brk (0: unknown) their fields. */
#define HS_SAMPLE_MAX (1 + (4 + HS_MALLINFO_FIELDS) * HS_VARINT_MAX)

static inline uint8_t *enc_sample(struct hs_enc *e, uint8_t *p, uint64_t t,
				  uint64_t rss, const uint64_t *mi,
				  uint64_t brk)
{
	*p++ = HS_REC_SAMPLE;
	p = enc_time(e, p, t);
	p = varint_put(p, rss);
	p = varint_put(p, (mi ? HS_SAMPLE_MALLINFO : 0) |
				  (brk ? HS_SAMPLE_BRK : 0));
	for (int i = 0; mi && i < HS_MALLINFO_FIELDS; i++)
		p = varint_put(p, mi[i]);
	return brk ? varint_put(p, brk) : p;
}

/* A module: the segments as (vaddr, memsz, offset, flags) quadruples. */
#define HS_MODULE_MAX(path_len, id_len, nseg)                                \
	(1 + 4 * HS_VARINT_MAX + (path_len) + (id_len) +                     \
	 (size_t)(nseg) * 4 * HS_VARINT_MAX)

static inline uint8_t *enc_module(uint8_t *p, uint64_t base, const char *path,
				  size_t path_len, const uint8_t *build_id,
				  size_t id_len, size_t nseg,
				  const uint64_t (*segs)[4])
{
	*p++ = HS_REC_MODULE;
	p = varint_put(p, base);
	p = enc_str(p, path, path_len);
	p = enc_str(p, build_id, id_len);
	p = varint_put(p, nseg);
	for (size_t i = 0; i < nseg; i++)
		for (int j = 0; j < 4; j++)
			p = varint_put(p, segs[i][j]);
	return p;
}

#define HS_END_MAX (1 + (2 + HS_COUNT_MAX) * HS_VARINT_MAX)

static inline uint8_t *enc_end(uint8_t *p, unsigned reason,
			       const uint64_t *counts)
{
	*p++ = HS_REC_END;
	p = varint_put(p, reason);
	p = varint_put(p, HS_COUNT_MAX);
	for (int i = 0; i < HS_COUNT_MAX; i++)
		p = varint_put(p, counts[i]);
	return p;
}

/* An extension record's tag and type; its payload's length and bytes
 * follow. */
static inline uint8_t *ext_head(uint8_t *p, uint64_t type)
{
	*p++ = HS_REC_EXT;
	return varint_put(p, type);
}

/* An extension record: older readers skip its type (trace_format.h). */
static inline uint8_t *enc_ext(uint8_t *p, uint64_t type, const void *payload,
			       size_t n)
{
	return enc_str(ext_head(p, type), payload, n);
}

/* The extensions this version writes (records.c has their fields): the
 * payload is written in place, after room for its length. */
static inline uint8_t *ext_begin(uint8_t *p, uint64_t type)
{
	return ext_head(p, type) + HS_VARINT_MAX;
}

static inline uint8_t *ext_end(uint8_t *payload, uint8_t *end)
{
	size_t n = (size_t)(end - payload);
	uint8_t *p = varint_put(payload - HS_VARINT_MAX, n);
	memmove(p, payload, n);
	return p + n;
}

/* An extension whose payload is one varint, its length known before it
 * is written: nothing moved (a Python program's stack changes, written
 * at one event in four, went through memmove). */
static inline uint8_t *ext_one(uint8_t *p, uint64_t type, uint64_t v)
{
	p = ext_head(p, type);
	*p++ = (uint8_t)varint_len(v); /* at most 10: one byte */
	return varint_put(p, v);
}

#define HS_MAP_MAX(path_len) (1 + 12 * HS_VARINT_MAX + (path_len))

static inline uint8_t *enc_map(uint8_t *p, uint64_t addr, uint64_t len,
			       uint64_t prot, uint64_t flags, unsigned kind,
			       uint64_t dev, uint64_t ino, uint64_t offset,
			       uint64_t stack, const char *path, size_t n)
{
	uint8_t *payload = ext_begin(p, HS_EXT_MAP), *q = payload;
	const uint64_t v[] = { addr, len, prot, flags, kind, dev, ino, offset,
			       stack };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		q = varint_put(q, v[i]);
	return ext_end(payload, enc_str(q, path, n));
}

#define HS_UNMAP_MAX (1 + 4 * HS_VARINT_MAX)

static inline uint8_t *enc_unmap(uint8_t *p, uint64_t addr, uint64_t len)
{
	uint8_t *payload = ext_begin(p, HS_EXT_UNMAP);
	return ext_end(payload, varint_put(varint_put(payload, addr), len));
}

#define HS_REMAP_MAX (1 + 8 * HS_VARINT_MAX)

static inline uint8_t *enc_remap(uint8_t *p, uint64_t old, uint64_t old_len,
				 uint64_t addr, uint64_t len, uint64_t flags,
				 uint64_t stack)
{
	uint8_t *payload = ext_begin(p, HS_EXT_REMAP), *q = payload;
	const uint64_t v[] = { old, old_len, addr, len, flags, stack };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		q = varint_put(q, v[i]);
	return ext_end(payload, q);
}

#define HS_EXITING_MAX (1 + 3 * HS_VARINT_MAX)

static inline uint8_t *enc_exiting(uint8_t *p, uint64_t t)
{
	return ext_one(p, HS_EXT_EXITING, t);
}

#define HS_PROTECT_MAX (1 + 5 * HS_VARINT_MAX)

static inline uint8_t *enc_protect(uint8_t *p, uint64_t addr, uint64_t len,
				   uint64_t prot)
{
	uint8_t *payload = ext_begin(p, HS_EXT_PROTECT);
	uint8_t *q = varint_put(varint_put(payload, addr), len);
	return ext_end(payload, varint_put(q, prot));
}

/* A Python code object: the strings are the caller's, of the lengths
 * given (HS_PY_CODE_MAX bounds the record). */
#define HS_PY_CODE_MAX(strings) (1 + 9 * HS_VARINT_MAX + (strings))

static inline uint8_t *enc_py_code(uint8_t *p, uint64_t code,
				   uint64_t version, uint64_t first_line,
				   const char *file, size_t file_len,
				   const char *name, size_t name_len,
				   const char *qualname, size_t qualname_len,
				   const void *lines, size_t lines_len)
{
	uint8_t *payload = ext_begin(p, HS_EXT_PY_CODE);
	uint8_t *q = varint_put(varint_put(payload, code), version);
	q = varint_put(q, first_line);
	q = enc_str(q, file, file_len);
	q = enc_str(q, name, name_len);
	q = enc_str(q, qualname, qualname_len);
	return ext_end(payload, enc_str(q, lines, lines_len));
}

#define HS_PY_FRAME_MAX (1 + 7 * HS_VARINT_MAX)

static inline uint8_t *enc_py_frame(uint8_t *p, uint64_t id, uint64_t parent,
				    uint64_t code, uint64_t offset,
				    uint64_t flags)
{
	uint8_t *payload = ext_begin(p, HS_EXT_PY_FRAME);
	uint8_t *q = varint_put(varint_put(payload, id), parent);
	q = varint_put(varint_put(q, code), offset);
	return ext_end(payload, varint_put(q, flags));
}

#define HS_PY_STACK_MAX (1 + 4 * HS_VARINT_MAX)

static inline uint8_t *enc_py_stack(uint8_t *p, uint64_t id, uint64_t python)
{
	uint8_t *payload = ext_begin(p, HS_EXT_PY_STACK);
	return ext_end(payload, varint_put(varint_put(payload, id), python));
}

#define HS_PY_AT_MAX (1 + 3 * HS_VARINT_MAX)

static inline uint8_t *enc_py_at(uint8_t *p, uint64_t python)
{
	return ext_one(p, HS_EXT_PY_AT, python);
}

#define HS_SIGNAL_MAX (1 + 3 * HS_VARINT_MAX)

static inline uint8_t *enc_signal(uint8_t *p, uint64_t sig)
{
	return ext_one(p, HS_EXT_SIGNAL, sig);
}

/* Regions (heapslope_region_begin/end): a name, once per id, then the
 * thread's begins and ends (no time of their own: a program may open one
 * around each operation, and the time records place them closely
 * enough). */
#define HS_REGION_NAME_MAX(n) (1 + 4 * HS_VARINT_MAX + (n))

static inline uint8_t *enc_region_name(uint8_t *p, uint64_t id,
				       const char *name, size_t n)
{
	uint8_t *payload = ext_begin(p, HS_EXT_REGION_NAME);
	return ext_end(payload, enc_str(varint_put(payload, id), name, n));
}

#define HS_REGION_MAX (1 + 3 * HS_VARINT_MAX)

static inline uint8_t *enc_region_begin(uint8_t *p, uint64_t id)
{
	return ext_one(p, HS_EXT_REGION_BEGIN, id);
}

static inline uint8_t *enc_region_end(uint8_t *p)
{
	return enc_ext(p, HS_EXT_REGION_END, NULL, 0);
}

/* A header under construction, in a caller-owned buffer. */
struct hs_header_buf {
	uint8_t *buf;
	size_t len, cap;
	int overflow;
};

void header_put_u64(struct hs_header_buf *h, unsigned key, uint64_t v);
void header_put_str(struct hs_header_buf *h, unsigned key, const char *s);
/* Writes preamble + body into dst; returns its length or 0 if too small. */
size_t header_write(const struct hs_header_buf *h, uint8_t *dst, size_t cap);

/* Frames n bytes of records (rows) as one chunk in dst: transposes them
 * into columns (see columns.h) in work, of chunk_work_size(n) bytes, its
 * pointers modeled, then compresses.  cap must be at least chunk_bound(n).
 * Returns the chunk's length, or 0 if the records do not parse or zstd
 * fails.  chunk_encode_plain: without the model, whose tables make
 * chunk_work_size 1.5 MiB, for a few records: work of columns_bound(n). */
struct ZSTD_CCtx_s;
size_t chunk_bound(size_t n);
size_t chunk_work_size(size_t n);
size_t chunk_encode(struct ZSTD_CCtx_s *cctx, const void *rows, size_t n,
		    void *dst, size_t cap, uint8_t *work);
size_t chunk_encode_plain(struct ZSTD_CCtx_s *cctx, const void *rows,
			  size_t n, void *dst, size_t cap, uint8_t *work);
/* The same for a payload already in columns (n bytes). */
size_t chunk_pack(struct ZSTD_CCtx_s *cctx, const void *payload, size_t n,
		   void *dst, size_t cap);

#endif
