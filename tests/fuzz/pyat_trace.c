/* pyat_trace OUT: a small trace of two threads with Python frames as the
 * recorder writes them (HS_EXT_PY_AT), for python-frames-synthetic and as
 * the fuzz corpus's trace_pyat.bin.  Four batches; in each:
 *   thread 100, under Python node 2 (f at a.py:13, called from f at
 *   a.py:11): malloc 100 B at stack 2, malloc 200 B at stack 3, an
 *   anonymous 64 KiB mmap at stack 3;
 *   thread 200, no Python record yet: malloc 300 B at stack 2 (native);
 *   then under node 1 (f at a.py:11): calloc 400 B at stack 3; then under
 *   node 999, never defined (none): malloc 50 B at stack 2; then under 0:
 *   malloc 60 B at stack 7, never defined;
 *   thread 100 again, still under node 2: malloc 100 B at stack 2, a free
 *   of thread 200's 400 B block, an mremap of the batch's mapping to
 *   128 KiB at stack 2;
 *   a batch mark. */
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>
#include <string.h>
#include "format/encoder.h"
#include "format/trace_format.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fputs("usage: pyat_trace OUT\n", stderr);
		return 2;
	}
	static uint8_t buf[1 << 16];
	struct hs_enc e;
	enc_reset(&e);
	uint8_t *p = buf;
	*p++ = 1; /* odd: records, wrapped by the target */
	static const uint8_t lines[] = { 0xe8, 0x02, 0xe8, 0x02, 0xe8, 0x02,
					 0xe8, 0x02 };
	p = enc_u64(p, HS_REC_THREAD, 100);
	p = enc_u64(p, HS_REC_SWITCH, 100);
	p = enc_stack(p, 1, 0, 0x401000);
	p = enc_stack(p, 2, 1, 0x401100);
	p = enc_stack(p, 3, 1, 0x401200);
	p = enc_py_code(p, 1, 0x030b02f0, 10, "a.py", 4, "f", 1, "f", 1,
			lines, sizeof(lines));
	p = enc_py_frame(p, 1, 0, 1, 0, HS_PY_ENTRY);
	p = enc_py_frame(p, 2, 1, 1, 2, 0);
	uint64_t ptr = 0x10000;
	for (int batch = 0; batch < 4; batch++) {
		p = enc_u64(p, HS_REC_SWITCH, 100);
		p = enc_py_at(p, 2);
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 100, 2);
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 200, 3);
		p = enc_map(p, 0x7f0000000000 + batch * 0x10000, 0x10000, 3,
			    0x22, HS_MAP_ANON, 0, 0, 0, 3, "", 0);
		p = enc_u64(p, HS_REC_THREAD, 200);
		p = enc_u64(p, HS_REC_SWITCH, 200);
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 300, 2);
		p = enc_py_at(p, 1);
		p = enc_alloc(&e, p, HS_FN_CALLOC, ptr += 0x100, 400, 3);
		p = enc_py_at(p, 999); /* never defined: none */
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 50, 2);
		p = enc_py_at(p, 0);
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 60, 7);
		p = enc_u64(p, HS_REC_SWITCH, 100);
		p = enc_alloc(&e, p, HS_FN_MALLOC, ptr += 0x100, 100, 2);
		p = enc_free(&e, p, HS_FN_FREE, ptr - 0x300);
		p = enc_remap(p, 0x7f0000000000 + batch * 0x10000, 0x10000,
			      0x7f1000000000 + batch * 0x20000, 0x20000, 1, 2);
		p = enc_mark(&e, p, (uint64_t)(batch + 1) * 1000000, HS_MARK_BATCH,
			     "", 0);
	}
	uint64_t counts[HS_COUNT_MAX] = { 0 };
	p = enc_end(p, HS_END_EXIT, counts);
	/* a whole trace: header, one chunk */
	uint8_t body[256], pre[HS_PREAMBLE_LEN + sizeof(body)];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	header_put_u64(&h, HS_HDR_PID, 42);
	header_put_u64(&h, HS_HDR_OPTIONS, HS_OPT_MAPS);
	header_put_str(&h, HS_HDR_ARG, "pyat");
	size_t hn = header_write(&h, pre, sizeof(pre));
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	size_t n = (size_t)(p - buf) - 1;
	uint8_t *out = malloc(chunk_bound(n)), *work = malloc(chunk_work_size(n));
	size_t cn = chunk_encode(c, buf + 1, n, out, chunk_bound(n), work);
	FILE *f = fopen(argv[1], "wb");
	int bad = !f || !hn || !cn || fwrite(pre, 1, hn, f) != hn ||
		  fwrite(out, 1, cn, f) != cn;
	if (f)
		bad |= fclose(f) != 0;
	free(out);
	free(work);
	ZSTD_freeCCtx(c);
	if (bad)
		fprintf(stderr, "pyat_trace: cannot write %s\n", argv[1]);
	return bad;
}
