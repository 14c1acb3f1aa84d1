/* Unit test of the record table (src/format/records.c) against every
 * hand-written path beside it: each encoder of encoder.h against the
 * table's generic encoder, the reader's event fast path (reader_events)
 * and the transpose's fast path (columns.c) against the table, for every
 * record kind and every varint width; records a newer writer adds
 * (extension records, sample flags) are skipped; the reader reads from a
 * descriptor and from memory. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "format/columns.h"
#include "format/encoder.h"
#include "base/error.h"
#include "format/reader.h"
#include "format/records.h"
#include "format/varint.h"

/* Values whose varints take 1 to 10 bytes, and the edges between. */
static uint64_t width_value(unsigned i)
{
	static const uint64_t v[] = {
		0, 1, 127, 128, 16383, 16384, 2097151, 2097152,
		268435455, 268435456, (1ull << 35) - 1, 1ull << 35,
		(1ull << 42) - 1, 1ull << 42, (1ull << 49) - 1, 1ull << 49,
		(1ull << 56) - 1, 1ull << 56, (1ull << 63) - 1, 1ull << 63,
		UINT64_MAX,
	};
	return v[i % (sizeof(v) / sizeof(v[0]))];
}
#define WIDTHS 21

/* The table's description of every tag it names agrees with its index. */
static void test_table(void)
{
	size_t n;
	const struct hs_rec_desc *all = hs_rec_descs(&n);
	CHECK(n >= 19);
	for (unsigned tag = 0; tag < 256; tag++) {
		const struct hs_rec_desc *d = hs_rec_desc(tag);
		unsigned kind = tag >= HS_REC_ALLOC ? HS_TAG_KIND(tag) : tag;
		int known = 0;
		for (size_t i = 0; i < n; i++)
			known |= all[i].kind == kind;
		CHECK(!!d == known);
		if (d)
			CHECK(d->kind == kind);
	}
	for (size_t i = 0; i < n; i++) {
		CHECK(all[i].nfields <= HS_FIELDS_MAX);
		for (unsigned j = 0; j < all[i].nfields; j++)
			CHECK(all[i].f[j].column < HS_COLUMNS);
	}
	/* extension payloads: absolute values only, no deltas */
	all = hs_ext_descs(&n);
	CHECK(n >= 4);
	for (size_t i = 0; i < n; i++) {
		CHECK(hs_ext_desc(all[i].kind) == &all[i]);
		for (unsigned j = 0; j < all[i].nfields; j++)
			CHECK(all[i].f[j].type == HS_F_UINT ||
			      all[i].f[j].type == HS_F_STR);
	}
	CHECK(hs_ext_desc(0) == NULL && hs_ext_desc(999) == NULL);
}

/* The record decoded from rows (generic decoder). */
static int decode_one(const uint8_t *p, const uint8_t *end,
		      struct hs_dec *st, struct hs_record *r,
		      const uint8_t **next)
{
	memset(r, 0, sizeof(*r));
	r->tag = *p++;
	r->kind = r->tag >= HS_REC_ALLOC ? HS_TAG_KIND(r->tag) : r->tag;
	r->fn = r->tag >= HS_REC_ALLOC ? HS_TAG_FN(r->tag) : 0;
	const struct hs_rec_desc *d = hs_rec_desc(r->tag);
	if (!d || hs_rec_decode(d, st, &p, end, r))
		return -1;
	*next = p;
	return 0;
}

/* One record of each kind written by its encoder in encoder.h, with
 * field values of width w; the same record through the table's generic
 * encoder must give the same bytes, and decode to the same values. */
static void test_encoders(void)
{
	static const char path[] = "/usr/lib/x86_64-linux-gnu/libexample.so";
	static const uint8_t id[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
	for (unsigned w = 0; w < WIDTHS; w++) {
		uint64_t a = width_value(w), b = width_value(w + 3),
			 c = width_value(w + 7);
		uint8_t mine[4096], table[4096];
		struct hs_enc e;
		enc_reset(&e);
		uint8_t *p = mine;
		uint64_t mi[HS_MALLINFO_FIELDS], counts[HS_COUNT_MAX];
		uint64_t segs[2][4] = { { a, b, c, 5 }, { c, a, b, 6 } };
		for (int i = 0; i < HS_MALLINFO_FIELDS; i++)
			mi[i] = width_value(w + (unsigned)i);
		for (int i = 0; i < HS_COUNT_MAX; i++)
			counts[i] = width_value(w + (unsigned)i);
		p = enc_alloc(&e, p, HS_FN_CALLOC, a, b, c);
		p = enc_free(&e, p, HS_FN_FREE, b);
		p = enc_realloc(&e, p, HS_FN_REALLOC, a, c, b, a);
		p = enc_fail(p, HS_FN_MALLOC, c, b);
		p = enc_munmap(&e, p, c, a);
		p = enc_stack(p, a, b, c);
		p = enc_module(p, a, path, sizeof(path) - 1, id, sizeof(id), 2,
			       segs);
		p = enc_u64(p, HS_REC_MODULE_GONE, b);
		p = enc_u64(p, HS_REC_THREAD, c);
		p = enc_thread_name(p, a, "worker", 6);
		p = enc_u64(p, HS_REC_SWITCH, b);
		p = enc_mark(&e, p, a >> 2, HS_MARK_LABEL, "epoch", 5);
		p = enc_sample(&e, p, b >> 2, c, mi, a);
		p = enc_sample(&e, p, c >> 2, a, NULL, 0);
		p = enc_timerec(&e, p, a >> 1);
		p = enc_end(p, HS_END_EXEC, counts);
		p = enc_u64(p, HS_REC_EXIT, c);
		p = enc_strrec(p, HS_REC_EXEC, "/bin/true", 9);
		p = enc_strrec(p, HS_REC_STOP, "disk full", 9);
		/* a type this version does not know, then the known ones */
		p = enc_ext(p, a < 100 ? a + 100 : a, "\x01\x02\x03", 3);
		p = enc_map(p, a, b, 3, 0x22, HS_MAP_SHM, c, a, b, c,
			    "/dev/shm/x", 10);
		p = enc_unmap(p, b, c);
		p = enc_remap(p, a, b, c, a, 1, b);
		p = enc_exiting(p, c);
		p = enc_protect(p, a, b, 5);
		p = enc_region_name(p, b, "forward", 7);
		p = enc_region_begin(p, b);
		p = enc_region_end(p);
		p = enc_py_at(p, a);
		p = enc_signal(p, c);
		size_t n = (size_t)(p - mine);

		/* decode with the table, encode again with it */
		struct hs_dec in = { 0 }, out = { 0 };
		const uint8_t *q = mine, *end = mine + n;
		uint8_t *t = table;
		int kinds = 0;
		while (q < end) {
			struct hs_record r;
			const uint8_t *next;
			if (decode_one(q, end, &in, &r, &next)) {
				CHECK(!"decodes");
				break;
			}
			CHECK(hs_rec_bound(&r) >= (size_t)(next - q));
			t = hs_rec_encode(&out, t, &r);
			q = next;
			kinds++;
			if (r.kind == HS_REC_ALLOC)
				CHECK(r.size == b && r.stack == c &&
				      r.ptr == a && r.fn == HS_FN_CALLOC);
			if (r.kind == HS_REC_REALLOC)
				CHECK(r.old_ptr == a && r.ptr == c &&
				      r.size == b && r.stack == a);
			if (r.kind == HS_REC_MODULE)
				CHECK(r.nseg == 2 && r.segs[1].vaddr == c &&
				      r.segs[1].flags == 6 &&
				      r.str_len == sizeof(path) - 1 &&
				      r.build_id_len == sizeof(id) &&
				      r.base == a);
			if (r.kind == HS_REC_SAMPLE && r.rss == c)
				CHECK(r.mi_keepcost == mi[6] && r.brk == a &&
				      r.time_ns == b >> 2);
			if (r.kind == HS_REC_END)
				CHECK(r.end_reason == HS_END_EXEC &&
				      r.counts[HS_COUNT_MAX - 1] ==
					      counts[HS_COUNT_MAX - 1]);
			if (r.kind == HS_REC_EXT && r.ext_type >= 100)
				CHECK(r.ext_len == 3);
			if (r.kind == HS_REC_EXT && r.ext_type == HS_EXT_MAP)
				CHECK(r.ptr == a && r.size == b &&
				      r.map.prot == 3 && r.map.flags == 0x22 &&
				      r.map.kind == HS_MAP_SHM &&
				      r.map.dev == c && r.map.ino == a &&
				      r.map.offset == b && r.stack == c &&
				      r.str_len == 10);
			if (r.kind == HS_REC_EXT && r.ext_type == HS_EXT_REMAP)
				CHECK(r.old_ptr == a && r.map.old_size == b &&
				      r.ptr == c && r.size == a &&
				      r.map.flags == 1 && r.stack == b);
			if (r.kind == HS_REC_EXT && r.ext_type == HS_EXT_UNMAP)
				CHECK(r.ptr == b && r.size == c);
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_EXITING)
				CHECK(r.time_ns == c);
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_PROTECT)
				CHECK(r.ptr == a && r.size == b &&
				      r.map.prot == 5);
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_REGION_NAME)
				CHECK(r.id == b && r.str_len == 7 &&
				      !memcmp(r.str, "forward", 7));
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_REGION_BEGIN)
				CHECK(r.id == b);
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_REGION_END)
				CHECK(r.ext_len == 0);
			if (r.kind == HS_REC_EXT && r.ext_type == HS_EXT_PY_AT)
				CHECK(r.py.python == a);
			if (r.kind == HS_REC_EXT &&
			    r.ext_type == HS_EXT_SIGNAL)
				CHECK(r.signal == c);
		}
		CHECK(kinds == 30);
		CHECK((size_t)(t - table) == n);
		CHECK(memcmp(mine, table, n) == 0);
	}
}

/* The columns the table puts each field of the rows in, built here field
 * by field with the generic decoder's help: columns_encode (whose
 * allocations, frees and stack nodes take hand-written paths) must
 * agree. */
static void test_columns(void)
{
	uint8_t rows[1 << 16], *p = rows;
	struct hs_enc e;
	enc_reset(&e);
	for (unsigned w = 0; w < WIDTHS; w++) {
		uint64_t a = width_value(w), b = width_value(w + 5);
		p = enc_alloc(&e, p, w % 9, a, b, width_value(w + 9));
		p = enc_free(&e, p, HS_FN_FREE, b);
		p = enc_free(&e, p, HS_FN_REALLOC, a);
		p = enc_realloc(&e, p, HS_FN_REALLOCARRAY, b, a, a, b);
		p = enc_fail(p, HS_FN_POSIX_MEMALIGN, a, b);
		p = enc_munmap(&e, p, a, b);
		p = enc_u64(p, HS_REC_SWITCH, a);
		p = enc_stack(p, b, a, width_value(w + 9));
	}
	size_t n = (size_t)(p - rows);
	/* the reference: each field's varint bytes appended to its column */
	static uint8_t ref[HS_COLUMNS][1 << 16];
	size_t len[HS_COLUMNS] = { 0 };
	for (const uint8_t *q = rows; q < rows + n;) {
		const struct hs_rec_desc *d = hs_rec_desc(*q);
		ref[HS_COL_TAGS][len[HS_COL_TAGS]++] = *q++;
		for (unsigned i = 0; i < d->nfields; i++) {
			const uint8_t *s = q;
			uint64_t v;
			CHECK(varint_get(&q, rows + n, &v) == 0);
			unsigned c = d->f[i].column;
			memcpy(ref[c] + len[c], s, (size_t)(q - s));
			len[c] += (size_t)(q - s);
		}
	}
	uint8_t *cols = malloc(columns_bound(n));
	uint8_t *back = malloc(n + 64);
	size_t c = columns_encode(rows, n, cols, columns_bound(n), NULL);
	CHECK(c > 0);
	const uint8_t *q = cols, *end = cols + c;
	CHECK(*q++ == HS_COLUMNS);
	uint64_t got[HS_COLUMNS];
	for (int s = 0; s < HS_COLUMNS; s++)
		CHECK(varint_get(&q, end, &got[s]) == 0);
	for (int s = 0; s < HS_COLUMNS; s++) {
		CHECK(got[s] == len[s]);
		if (got[s] == len[s])
			CHECK(memcmp(q, ref[s], len[s]) == 0);
		q += got[s];
	}
	CHECK(columns_decode(cols, c, back, n + 64) == n);
	CHECK(memcmp(back, rows, n) == 0);
	/* modeled, the same rows come back (widths to 2^64 - 1: pointers
	 * whose delta cannot take the model's flag bit fall back to the
	 * plain layout) */
	struct hs_ptr_tables *t = malloc(columns_tables_size());
	c = columns_encode(rows, n, cols, columns_bound(n), t);
	CHECK(c > 0);
	CHECK(columns_rows_size(cols, c) >= n);
	memset(back, 0, n + 64);
	CHECK(columns_decode(cols, c, back, n + 64) == n);
	CHECK(memcmp(back, rows, n) == 0);
	free(t);
	free(cols);
	free(back);
}

/* The pointer model by hand: which pointers become references, and what
 * their values are (columns.h). */
static void test_pointer_model(void)
{
	uint8_t rows[256], *p = rows;
	struct hs_enc e;
	enc_reset(&e);
	const uint64_t A = 0x10000, B = 0x10040, C = 0x20000;
	p = enc_alloc(&e, p, HS_FN_MALLOC, A, 48, 1);  /* new: delta */
	p = enc_alloc(&e, p, HS_FN_MALLOC, B, 48, 1);  /* new: delta */
	p = enc_free(&e, p, HS_FN_FREE, A);            /* 2nd alloc back: 1 */
	p = enc_alloc(&e, p, HS_FN_MALLOC, A, 40, 2);  /* last free: 0 */
	p = enc_realloc(&e, p, HS_FN_REALLOC, B, B, 64, 3); /* 1st alloc
							      * back, then
							      * the free */
	p = enc_munmap(&e, p, C, 4096);                /* as it is */
	p = enc_free(&e, p, HS_FN_FREE, C);            /* never allocated */
	size_t n = (size_t)(p - rows);
	struct hs_ptr_tables *t = malloc(columns_tables_size());
	uint8_t cols[512], back[512];
	size_t c = columns_encode(rows, n, cols, sizeof(cols), t);
	CHECK(c > 0);
	CHECK(cols[0] == (0x80 | HS_COLUMNS));
	/* the pointer column is the end: 7 pointers of known values */
	uint64_t want[] = {
		zigzag_encode((int64_t)A) << 1 | 1,
		zigzag_encode((int64_t)(B - A)) << 1 | 1,
		1 << 1, /* free A: allocated 2 allocations back (k = 1) */
		0 << 1, /* alloc A: freed by the last free */
		1 << 1, /* realloc's old B: 2 allocations back */
		0 << 1, /* its new B: the free just before */
		zigzag_encode((int64_t)(C - B)), /* munmap: plain */
		zigzag_encode((int64_t)(C - C)) << 1 | 1, /* free C */
	};
	size_t nw = sizeof(want) / sizeof(want[0]), len = 0, third = 0;
	uint8_t tail[128];
	for (size_t i = 0; i < nw; i++) {
		if (i == 2)
			third = len;
		len = (size_t)(varint_put(tail + len, want[i]) - tail);
	}
	CHECK(c > len && memcmp(cols + c - len, tail, len) == 0);
	CHECK(columns_decode(cols, c, back, sizeof(back)) == n);
	CHECK(memcmp(back, rows, n) == 0);
	/* a reference to before the chunk's first free: corrupt */
	cols[c - len + third] = 3 << 1; /* "free A": 4 allocations back */
	CHECK(columns_decode(cols, c, back, sizeof(back)) == (size_t)-1);
	free(t);
}

/* Many blocks, freed and reused in a random order, past the model's
 * reach and across its table's collisions: the rows come back exactly. */
static void test_pointer_model_random(void)
{
	enum { EVENTS = 400000, LIVE = 1 << 17 };
	uint8_t *rows = malloc(EVENTS * 16), *p = rows;
	uint64_t *live = calloc(LIVE, sizeof(*live)), *freed = NULL;
	uint64_t x = 88172645463325252ull, top = 0x55550000;
	size_t nfreed = 0;
	freed = calloc(EVENTS, sizeof(*freed));
	struct hs_enc e;
	enc_reset(&e);
	for (int i = 0; i < EVENTS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t *slot = &live[x % LIVE];
		if (*slot) {
			p = enc_free(&e, p, HS_FN_FREE, *slot);
			freed[nfreed++] = *slot;
			*slot = 0;
		} else {
			/* mostly the latest freed block, as free lists do */
			uint64_t a = nfreed && (x >> 20) % 4 ? freed[--nfreed]
							     : (top += 48);
			p = enc_alloc(&e, p, HS_FN_MALLOC, a, 40, x >> 40 & 7);
			*slot = a;
		}
	}
	size_t n = (size_t)(p - rows);
	struct hs_ptr_tables *t = malloc(columns_tables_size());
	uint8_t *plain = malloc(columns_bound(n)), *cols = malloc(columns_bound(n));
	uint8_t *back = malloc(n);
	size_t cp = columns_encode(rows, n, plain, columns_bound(n), NULL);
	size_t c = columns_encode(rows, n, cols, columns_bound(n), t);
	CHECK(cp > 0 && c > 0);
	CHECK(cols[0] == (0x80 | HS_COLUMNS));
	CHECK(c < cp); /* frees at random: only a little (zstd does more) */
	CHECK(columns_decode(cols, c, back, n) == n);
	CHECK(memcmp(back, rows, n) == 0);
	/* too little room for the rows it says it holds: corrupt */
	CHECK(columns_decode(cols, c, back, n - 1) == (size_t)-1);
	free(t), free(plain), free(cols), free(back);
	free(rows), free(live), free(freed);
}

/* A whole trace in memory: header, then rows as one chunk per call. */
struct trace {
	uint8_t buf[1 << 18];
	size_t len;
	ZSTD_CCtx *cctx;
};

static void trace_begin(struct trace *t)
{
	uint8_t body[256];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	header_put_u64(&h, HS_HDR_PID, 42);
	header_put_str(&h, HS_HDR_ARG, "prog");
	/* a header field no reader knows yet: skipped */
	header_put_str(&h, 999, "from a newer writer");
	t->len = header_write(&h, t->buf, sizeof(t->buf));
	t->cctx = ZSTD_createCCtx();
}

static void trace_chunk(struct trace *t, const uint8_t *rows, size_t n)
{
	uint8_t *work = malloc(chunk_work_size(n));
	size_t c = chunk_encode(t->cctx, rows, n, t->buf + t->len,
				sizeof(t->buf) - t->len, work);
	CHECK(c > 0);
	t->len += c;
	free(work);
}

/* reader_events (hand-written) and reader_next (the table) read the same
 * events from the same trace, at every varint width and pointer delta. */
static void test_events(void)
{
	static struct trace t;
	uint8_t rows[1 << 15], *p = rows;
	struct hs_enc e;
	enc_reset(&e);
	trace_begin(&t);
	for (unsigned w = 0; w < WIDTHS; w++) {
		uint64_t a = width_value(w), b = width_value(w + 1),
			 c = width_value(w + 2);
		p = enc_alloc(&e, p, HS_FN_MALLOC, a, b, c);
		p = enc_realloc(&e, p, HS_FN_REALLOC, a, c, b, c);
		p = enc_free(&e, p, HS_FN_FREE, c);
		p = enc_fail(p, HS_FN_CALLOC, b, a);
		p = enc_munmap(&e, p, b, c);
		if (w % 4 == 3) /* a non-event between runs of events */
			p = enc_timerec(&e, p, w);
	}
	trace_chunk(&t, rows, (size_t)(p - rows));
	struct hs_record want[256];
	size_t nwant = 0;
	struct hs_reader *r = reader_open_mem(t.buf, t.len, "mem");
	CHECK(r != NULL);
	if (!r)
		return;
	while (nwant < 256 && reader_next(r, &want[nwant]) == 1)
		if (want[nwant].kind >= HS_REC_ALLOC)
			nwant++;
	reader_destroy(r);
	CHECK(nwant == 5 * WIDTHS);

	r = reader_open_mem(t.buf, t.len, "mem");
	size_t i = 0;
	struct hs_record rec;
	struct hs_event ev[4];
	for (;;) {
		size_t k = reader_events(r, ev, 4);
		for (size_t j = 0; j < k && i < nwant; j++, i++) {
			const struct hs_record *x = &want[i];
			CHECK(ev[j].kind == x->kind && ev[j].fn == x->fn);
			if (x->kind != HS_REC_FREE)
				CHECK(ev[j].size == x->size);
			if (x->kind != HS_REC_FREE && x->kind != HS_REC_MUNMAP)
				CHECK(ev[j].stack == x->stack);
			if (x->kind != HS_REC_FAIL)
				CHECK(ev[j].ptr == x->ptr);
			if (x->kind == HS_REC_REALLOC)
				CHECK(ev[j].old_ptr == x->old_ptr);
		}
		if (k)
			continue;
		int rc = reader_next(r, &rec);
		if (rc <= 0)
			break;
		if (rec.kind >= HS_REC_ALLOC)
			i++; /* read by reader_next: compared above */
	}
	CHECK(i == nwant);
	reader_destroy(r);
}

/* What a newer writer may add is skipped: extension records, sample flag
 * bits past the known ones (one varint each), header fields. */
static void test_newer(void)
{
	static struct trace t;
	uint8_t rows[256], *p = rows;
	struct hs_enc e;
	enc_reset(&e);
	trace_begin(&t);
	p = enc_ext(p, 77, "payload", 7);
	p = enc_ext(p, HS_EXT_UNMAP, "\x80\xe0\x01\x80\x20\x05", 6);
	*p++ = HS_REC_SAMPLE;
	p = enc_time(&e, p, 1000);
	p = varint_put(p, 4096);
	p = varint_put(p, HS_SAMPLE_BRK | 4 | 16);
	p = varint_put(p, 0x5000); /* brk */
	p = varint_put(p, 300);    /* bit 2's field */
	p = varint_put(p, 1u << 20); /* bit 4's field */
	p = enc_alloc(&e, p, HS_FN_MALLOC, 0x1000, 24, 3);
	trace_chunk(&t, rows, (size_t)(p - rows));

	int fd = open(".", O_TMPFILE | O_RDWR, 0600);
	if (fd < 0) {
		char name[] = "/tmp/hs-test-records-XXXXXX";
		fd = mkstemp(name);
		unlink(name);
	}
	CHECK(fd >= 0 && write(fd, t.buf, t.len) == (ssize_t)t.len);
	lseek(fd, 0, SEEK_SET); /* read from where the descriptor is */
	struct hs_reader *rs[2] = { reader_open_mem(t.buf, t.len, "mem"),
				    reader_open_fd(fd, "fd") };
	for (int k = 0; k < 2; k++) {
		struct hs_reader *r = rs[k];
		struct hs_record rec;
		CHECK(r != NULL);
		if (!r)
			continue;
		CHECK(reader_header(r)->pid == 42);
		CHECK(reader_next(r, &rec) == 1 && rec.kind == HS_REC_EXT &&
		      rec.ext_type == 77 && rec.ext_len == 7);
		/* a known extension with fields a newer writer appended */
		CHECK(reader_next(r, &rec) == 1 && rec.kind == HS_REC_EXT &&
		      rec.ext_type == HS_EXT_UNMAP && rec.ptr == 0x7000 &&
		      rec.size == 4096);
		char line[128] = "";
		FILE *m = fmemopen(line, sizeof(line) - 1, "w");
		hs_rec_print(m, &rec);
		fclose(m);
		CHECK(!strcmp(line, "unmap addr=0x7000 len=4096"));
		CHECK(reader_next(r, &rec) == 1 && rec.kind == HS_REC_SAMPLE &&
		      rec.rss == 4096 && rec.brk == 0x5000 &&
		      !rec.has_mallinfo && rec.time_ns == 1000);
		CHECK(reader_next(r, &rec) == 1 && rec.kind == HS_REC_ALLOC &&
		      rec.size == 24 && rec.ptr == 0x1000 && rec.stack == 3);
		CHECK(reader_next(r, &rec) == 0);
		reader_destroy(r);
	}
	close(fd);
	/* reader_open_fd read a duplicate: fd itself was closed once */
	CHECK(reader_open_mem("", 0, "empty") == NULL);
	CHECK(strstr(hs_last_error(), "empty") != NULL);
}

/* Appends n bytes of s to the string dst, of cap bytes, if they fit. */
static void add(char *dst, size_t cap, const char *s, size_t n)
{
	size_t l = strlen(dst);
	if (l + n < cap) {
		memcpy(dst + l, s, n);
		dst[l + n] = 0;
	}
}

/* The rows of the manual's table under the heading section (T{ T}
 * blocks joined), into man. */
static void manual_table(const char *path, const char *section, char *man,
			 size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int in = 0, block = 0, header = 0;
	*man = 0;
	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, section, strlen(section)))
			in = 1;
		else if (in == 1 && !strncmp(line, ".TS", 3))
			in = 2, header = 2; /* the format line, the titles */
		else if (in == 2 && !strncmp(line, ".TE", 3))
			break;
		else if (in == 2 && header)
			header--;
		else if (in == 2 && !strcmp(line, "T}\n"))
			block = 0, add(man, cap, "\n", 1);
		else if (in == 2 && block)
			add(man, cap, line, strcspn(line, "\n"));
		else if (in == 2 && strstr(line, "T{\n"))
			block = 1, add(man, cap, line, strlen(line) - 3);
		else if (in == 2)
			add(man, cap, line, strlen(line));
	}
	fclose(f);
}

/* heapslope-trace(5)'s tables of records and of extension records are
 * the code's. */
static void test_manual(const char *path)
{
	static char man[8192], want[8192];
	for (int ext = 0; ext < 2; ext++) {
		size_t n;
		const struct hs_rec_desc *d = ext ? hs_ext_descs(&n)
						  : hs_rec_descs(&n);
		manual_table(path, ext ? ".SS Extension records"
				       : ".SS Records", man, sizeof(man));
		FILE *m = fmemopen(want, sizeof(want) - 1, "w");
		for (size_t i = 0; i < n; i++)
			(ext ? hs_ext_layout : hs_rec_layout)(m, &d[i]);
		fclose(m);
		CHECK(strlen(want) > (ext ? 50 : 200));
		if (strcmp(man, want) != 0) {
			fprintf(stderr, "heapslope-trace(5):\n%s\nthe "
					"code:\n%s", man, want);
			CHECK(!"the manual's table is the code's");
		}
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		test_manual(argv[1]);
	test_table();
	test_encoders();
	test_columns();
	test_pointer_model();
	test_pointer_model_random();
	test_events();
	test_newer();
	return check_report("records");
}
