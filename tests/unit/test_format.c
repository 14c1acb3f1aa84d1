/* Unit test of the trace format: varints, header, record round trips, and
 * the reader's answers to truncated, corrupt and foreign input. */
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
#include "base/bigmem.h"
#include "format/reader.h"
#include "format/varint.h"


static void test_varint(void)
{
	const uint64_t values[] = { 0, 1, 127, 128, 300, 16383, 16384,
				    UINT32_MAX, (uint64_t)1 << 56, UINT64_MAX };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint8_t buf[HS_VARINT_MAX];
		uint8_t *end = varint_put(buf, values[i]);
		const uint8_t *p = buf;
		uint64_t v = 0;
		CHECK(varint_get(&p, end, &v) == 0);
		CHECK(v == values[i]);
		CHECK(p == end);
		/* every shorter prefix is a truncated value */
		for (const uint8_t *e = buf; e < end; e++) {
			const uint8_t *q = buf;
			CHECK(varint_get(&q, e, &v) == -1);
			CHECK(q == buf);
		}
	}
	const int64_t signed_values[] = { 0, -1, 1, -64, 64, INT64_MIN,
					  INT64_MAX };
	for (size_t i = 0; i < 7; i++)
		CHECK(zigzag_decode(zigzag_encode(signed_values[i])) ==
		      signed_values[i]);
	/* an 11-byte run of continuation bits is not a varint */
	uint8_t bad[11];
	memset(bad, 0xff, sizeof(bad));
	const uint8_t *p = bad;
	uint64_t v = 0;
	CHECK(varint_get(&p, bad + sizeof(bad), &v) == -1);
}

static char dir[] = "/tmp/hs-test-format-XXXXXX";

/* Writes a trace of `chunks` copies of one chunk: recs are rows, or with
 * raw the chunk's payload as is (to test corrupt columns); cut bytes off
 * its end. */
static void write_chunks(const char *path, unsigned version,
			 const uint8_t *recs, size_t n, size_t cut, int raw,
			 int chunks)
{
	uint8_t body[256], out[256 + HS_PREAMBLE_LEN];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	header_put_u64(&h, HS_HDR_PID, 42);
	header_put_str(&h, HS_HDR_EXE, "/bin/victim");
	header_put_str(&h, HS_HDR_ARG, "victim");
	header_put_str(&h, HS_HDR_ARG, "--flag");
	header_put_u64(&h, 999, 7); /* a field from the future: skipped */
	size_t hl = header_write(&h, out, sizeof(out));
	CHECK(hl > 0);
	out[8] = (uint8_t)version;
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = chunk_bound(n);
	uint8_t *chunk = malloc(cap), *work = malloc(chunk_work_size(n));
	size_t cl = raw ? chunk_pack(c, recs, n, chunk, cap)
		       : chunk_encode(c, recs, n, chunk, cap, work);
	CHECK(cl > 0);
	FILE *f = fopen(path, "wb");
	fwrite(out, 1, hl, f);
	for (int i = 0; i < chunks; i++)
		fwrite(chunk, 1, cl, f);
	fclose(f);
	if (cut)
		CHECK(truncate(path, (off_t)(hl + cl * (size_t)chunks - cut)) ==
		      0);
	free(chunk);
	free(work);
	ZSTD_freeCCtx(c);
}

static void write_trace(const char *path, unsigned version,
			const uint8_t *recs, size_t n, size_t cut)
{
	write_chunks(path, version, recs, n, cut, 0, 1);
}

static size_t sample_records(uint8_t *buf)
{
	struct hs_enc e;
	enc_reset(&e);
	uint8_t *p = buf;
	p = enc_timerec(&e, p, 1000);
	p = enc_u64(p, HS_REC_SWITCH, 77);
	p = enc_stack(p, 1, 0, 0x401000);
	p = enc_stack(p, 2, 1, 0x402000);
	p = enc_alloc(&e, p, HS_FN_MALLOC, 0x7f0000001000, 24, 2);
	p = enc_alloc(&e, p, HS_FN_CALLOC, 0x7f0000000010, 0, 1);
	p = enc_realloc(&e, p, HS_FN_REALLOC, 0x7f0000001000, 0x5000, 100, 2);
	p = enc_free(&e, p, HS_FN_FREE, 0x5000);
	p = enc_fail(p, HS_FN_MALLOC, UINT64_MAX, 2);
	p = enc_timerec(&e, p, 500); /* time may be re-based: deltas are signed */
	return (size_t)(p - buf);
}

static void test_roundtrip(void)
{
	char path[64];
	uint8_t recs[512];
	size_t n = sample_records(recs);
	snprintf(path, sizeof(path), "%s/ok.hst", dir);
	write_trace(path, HS_FORMAT_VERSION, recs, n, 0);
	struct hs_reader *r = reader_open(path);
	CHECK(r != NULL);
	if (!r)
		return;
	const struct hs_header *h = reader_header(r);
	CHECK(h->pid == 42);
	CHECK(h->argc == 2 && !strcmp(h->argv[1], "--flag"));
	CHECK(!strcmp(h->exe, "/bin/victim"));
	struct hs_record rec;
	unsigned kinds[16];
	uint64_t ptrs[16];
	int k = 0, rc;
	while ((rc = reader_next(r, &rec)) > 0 && k < 16) {
		kinds[k] = rec.kind;
		ptrs[k] = rec.ptr;
		if (rec.kind == HS_REC_ALLOC && k == 4) {
			CHECK(rec.size == 24 && rec.stack == 2);
			CHECK(rec.tid == 77 && rec.time_ns == 1000);
		}
		if (rec.kind == HS_REC_REALLOC)
			CHECK(rec.old_ptr == 0x7f0000001000 &&
			      rec.size == 100);
		if (rec.kind == HS_REC_FAIL)
			CHECK(rec.size == UINT64_MAX);
		if (rec.kind == HS_REC_TIME && k == 9)
			CHECK(rec.time_ns == 500);
		k++;
	}
	CHECK(rc == 0);
	CHECK(k == 10);
	CHECK(kinds[4] == HS_REC_ALLOC && ptrs[4] == 0x7f0000001000);
	CHECK(kinds[5] == HS_REC_ALLOC && ptrs[5] == 0x7f0000000010);
	CHECK(kinds[6] == HS_REC_REALLOC && ptrs[6] == 0x5000);
	CHECK(kinds[7] == HS_REC_FREE && ptrs[7] == 0x5000);
	CHECK(reader_chunks(r) == 1);
	reader_destroy(r);
}

static int open_fails(const char *path, const char *expect)
{
	struct hs_reader *r = reader_open(path);
	if (r) {
		reader_destroy(r);
		return 0;
	}
	return strstr(hs_last_error(), expect) != NULL;
}

/* Reads to the end; returns reader_next's last result. */
static int read_all(const char *path)
{
	struct hs_reader *r = reader_open(path);
	struct hs_record rec;
	int rc;
	if (!r)
		return -2;
	while ((rc = reader_next(r, &rec)) > 0)
		;
	reader_destroy(r);
	return rc;
}

static void test_bad_input(void)
{
	char path[64];
	uint8_t recs[512];
	size_t n = sample_records(recs);

	snprintf(path, sizeof(path), "%s/missing.hst", dir);
	CHECK(open_fails(path, "cannot open"));

	snprintf(path, sizeof(path), "%s/future.hst", dir);
	write_trace(path, 99, recs, n, 0);
	CHECK(open_fails(path, "version 99"));

	snprintf(path, sizeof(path), "%s/text.hst", dir);
	FILE *f = fopen(path, "w");
	fputs("hello, I am not a trace\n", f);
	fclose(f);
	CHECK(open_fails(path, "not a heapslope trace"));

	snprintf(path, sizeof(path), "%s/cut-frame.hst", dir);
	write_trace(path, HS_FORMAT_VERSION, recs, n, 5);
	CHECK(read_all(path) == -1);
	CHECK(strstr(hs_last_error(), "truncated") != NULL);

	/* rows that do not parse cannot even be written */
	uint8_t cols[1024], chunk[2048];
	uint8_t *work = malloc(chunk_work_size(n));
	ZSTD_CCtx *c = ZSTD_createCCtx();
	CHECK(chunk_encode(c, recs, n - 1, chunk, sizeof(chunk), work) == 0);
	uint8_t unknown[] = { 0x7e, 1, 2 };
	CHECK(chunk_encode(c, unknown, 3, chunk, sizeof(chunk), work) == 0);
	free(work);

	/* columns cut short, inside a valid frame */
	size_t cn = columns_encode(recs, n, cols, sizeof(cols), NULL);
	CHECK(cn > 0);
	snprintf(path, sizeof(path), "%s/cut-columns.hst", dir);
	write_chunks(path, HS_FORMAT_VERSION, cols, cn - 1, 0, 1, 1);
	CHECK(read_all(path) == -1);
	CHECK(strstr(hs_last_error(), "corrupt") != NULL);

	/* an unknown record tag in the tag column */
	uint8_t bad_tag[] = { 5, 1, 0, 0, 0, 0, 0x7e };
	snprintf(path, sizeof(path), "%s/unknown.hst", dir);
	write_chunks(path, HS_FORMAT_VERSION, bad_tag, sizeof(bad_tag), 0, 1,
		     1);
	CHECK(read_all(path) == -1);
	ZSTD_freeCCtx(c);

	/* columns decode back to exactly the rows */
	uint8_t rows[1024];
	CHECK(columns_decode(cols, cn, rows, sizeof(rows)) == n);
	CHECK(memcmp(rows, recs, n) == 0);

	/* flipped bits inside the compressed frame: the checksum catches
	 * them, or the records fail to parse; never a crash */
	snprintf(path, sizeof(path), "%s/flip.hst", dir);
	for (int bit = 0; bit < 200; bit++) {
		write_trace(path, HS_FORMAT_VERSION, recs, n, 0);
		FILE *g = fopen(path, "r+b");
		fseek(g, 0, SEEK_END);
		long size = ftell(g);
		long at = size - 1 - (bit / 8) % (size - 40);
		fseek(g, at, SEEK_SET);
		int c = fgetc(g);
		fseek(g, at, SEEK_SET);
		fputc(c ^ (1 << (bit % 8)), g);
		fclose(g);
		(void)read_all(path);
	}
}

/* Kinds, pointers and times of every record, and the final result. */
static int read_trace(const char *path, int prefetch, unsigned *kinds,
		      uint64_t *vals, size_t cap, size_t *n, uint64_t *chunks,
		      int *truncated)
{
	struct hs_reader *r = reader_open(path);
	struct hs_record rec;
	int rc;
	*n = 0;
	if (!r)
		return -2;
	if (prefetch)
		reader_prefetch(r);
	/* fields a record does not set keep what the caller had */
	while ((memset(&rec, 0, sizeof(rec)), rc = reader_next(r, &rec)) > 0 &&
	       *n < cap) {
		kinds[*n] = rec.kind;
		vals[*n] = rec.ptr ^ rec.time_ns ^ rec.size << 17;
		++*n;
	}
	*chunks = reader_chunks(r);
	*truncated = reader_truncated(r);
	reader_destroy(r);
	return rc;
}

/* With prefetch, the same records, chunks and ending as without, for a
 * whole trace, a cut one, and a reader destroyed while the thread is
 * ahead of it. */
static void test_prefetch(void)
{
	enum { CHUNKS = 40, CAP = 1024 };
	static unsigned k1[CAP], k2[CAP];
	static uint64_t v1[CAP], v2[CAP];
	char path[64];
	uint8_t recs[512];
	size_t n = sample_records(recs), n1, n2;
	uint64_t c1, c2;
	int t1, t2;
	snprintf(path, sizeof(path), "%s/many.hst", dir);
	for (int cut = 0; cut <= 1; cut++) {
		write_chunks(path, HS_FORMAT_VERSION, recs, n, cut ? 7 : 0, 0,
			     CHUNKS);
		int rc1 = read_trace(path, 0, k1, v1, CAP, &n1, &c1, &t1);
		int rc2 = read_trace(path, 1, k2, v2, CAP, &n2, &c2, &t2);
		CHECK(rc1 == (cut ? -1 : 0) && rc2 == rc1);
		CHECK(n1 == (size_t)(CHUNKS - cut) * 10 && n2 == n1);
		CHECK(c1 == (uint64_t)(CHUNKS - cut) && c2 == c1);
		CHECK(t1 == cut && t2 == t1);
		CHECK(!memcmp(k1, k2, n1 * sizeof(*k1)));
		CHECK(!memcmp(v1, v2, n1 * sizeof(*v1)));
	}
	struct hs_reader *r = reader_open(path);
	struct hs_record rec;
	CHECK(r != NULL);
	if (r) {
		reader_prefetch(r);
		CHECK(reader_next(r, &rec) == 1);
		reader_destroy(r); /* the thread is stopped, not waited for */
	}
}

/* bigmem: zeroed, huge-page aligned past the threshold, and grown with
 * its contents kept and the rest zeroed, across the threshold too. */
static void test_bigmem(void)
{
	size_t sizes[] = { 1, 4096, BIGMEM_MIN - 8, BIGMEM_MIN, 3u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		uint8_t *p = bigmem_zalloc(sizes[i]);
		CHECK(p != NULL);
		if (!p)
			continue;
		size_t nonzero = 0;
		for (size_t k = 0; k < sizes[i]; k++)
			nonzero += p[k] != 0;
		CHECK(nonzero == 0);
		if (sizes[i] >= BIGMEM_MIN)
			CHECK(((uintptr_t)p & ((2u << 20) - 1)) == 0);
		memset(p, 0x5a, sizes[i]);
		bigmem_free(p, sizes[i]);
	}
	size_t cap = 1000;
	uint8_t *v = bigmem_zalloc(cap);
	CHECK(v != NULL);
	for (size_t k = 0; v && k < cap; k++)
		v[k] = (uint8_t)(k * 7);
	while (v && cap < (5u << 20)) {
		uint8_t *n = bigmem_realloc(v, cap, cap * 3);
		CHECK(n != NULL);
		if (!n)
			break;
		size_t bad = 0;
		for (size_t k = 0; k < cap; k++)
			bad += n[k] != (uint8_t)(k * 7);
		for (size_t k = cap; k < cap * 3; k++)
			bad += n[k] != 0;
		CHECK(bad == 0);
		for (size_t k = cap; k < cap * 3; k++)
			n[k] = (uint8_t)(k * 7);
		v = n;
		cap *= 3;
	}
	bigmem_free(v, cap);
}

int main(void)
{
	test_bigmem();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_varint();
	test_roundtrip();
	test_bad_input();
	test_prefetch();
	check_remove_dir(dir);
	return check_report("format");
}
