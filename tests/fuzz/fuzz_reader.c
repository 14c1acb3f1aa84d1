/* libFuzzer target: the reader and the replay on arbitrary bytes.  Any
 * input must end in records or a clean error, never a crash or a leak.
 * Inputs starting with an odd byte are record bytes, wrapped here in a
 * valid header and valid zstd frames, so that mutations reach the record
 * decoder and the replay instead of dying at a frame checksum.
 * Symbolization is left out: it opens the files a trace names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/regress.h"
#include "analyze/replay.h"
#include "analyze/series.h"
#include "analyze/stacks.h"
#include "format/encoder.h"
#include "format/reader.h"

#include <zstd.h>

static char path[64];

static ZSTD_CCtx *cctx;

/* A trace whose records are the input, in two frames (the second half in
 * its own frame: delta state restarts there). */
static int write_wrapped(FILE *f, const uint8_t *data, size_t size)
{
	uint8_t body[256], pre[HS_PREAMBLE_LEN + sizeof(body)];
	struct hs_hdr_buf h = { body, 0, sizeof(body), 0 };
	hdr_put_u64(&h, HS_HDR_PID, 42);
	hdr_put_str(&h, HS_HDR_ARG, "fuzz");
	size_t n = hdr_finish(&h, pre, sizeof(pre));
	if (!n || fwrite(pre, 1, n, f) != n)
		return -1;
	if (!cctx) {
		cctx = ZSTD_createCCtx();
		if (!cctx)
			return -1;
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	}
	size_t half = size / 2, parts[2][2] = { { 0, half },
						{ half, size - half } };
	for (int i = 0; i < 2; i++) {
		size_t cap = chunk_bound(parts[i][1]);
		uint8_t *out = malloc(cap);
		/* rows that parse are transposed as the recorder does;
		 * others go in as the frame's payload, to fuzz the columns */
		uint8_t *work = out ? malloc(chunk_work_size(parts[i][1]))
				    : NULL;
		size_t c = work ? chunk_encode(cctx, data + parts[i][0],
					       parts[i][1], out, cap, work)
				: 0;
		if (!c && out)
			c = chunk_frame(cctx, data + parts[i][0], parts[i][1],
					out, cap);
		free(work);
		int ok = c && fwrite(out, 1, c, f) == c;
		free(out);
		if (!ok)
			return -1;
	}
	return 0;
}

static void remove_input(void)
{
	unlink(path);
}

static int write_input(const uint8_t *data, size_t size)
{
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/fuzz_reader.%d.hst",
			 (int)getpid());
		atexit(remove_input);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int rc;
	if (size && (data[0] & 1))
		rc = write_wrapped(f, data + 1, size - 1);
	else
		rc = fwrite(data, 1, size, f) == size ? 0 : -1;
	return fclose(f) == 0 && rc == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_record rec;
	struct series se;
	struct stacks *st = NULL;
	struct replay *rp = NULL;
	struct hs_reader *rd = NULL;
	if (write_input(data, size))
		return 0;
	series_init(&se);
	rd = reader_open(path);
	st = stacks_create(0, size & 1); /* grouping on half the inputs */
	rp = st ? replay_create(st, &se, NULL) : NULL;
	if (!rd || !rp)
		goto out;
	while (reader_next(rd, &rec) > 0) {
		if (rec.kind >= HS_REC_ALLOC) {
			if (replay_event(rp, &rec))
				break;
		} else if (rec.kind == HS_REC_STACK) {
			if (stacks_node(st, rec.id, rec.parent, rec.ip))
				break;
		} else if (rec.kind == HS_REC_MARK &&
			   rec.mark_kind == HS_MARK_BATCH) {
			if (replay_batch_end(rp, rec.time_ns, 1))
				break;
		} else if (rec.kind == HS_REC_SAMPLE) {
			series_sample(&se, &rec);
		}
	}
	uint32_t batches = (uint32_t)se.n;
	stacks_finish(st, batches);
	for (int site = 0; site < 2; site++) {
		struct stack_growth *g = NULL;
		size_t n = 0;
		uint32_t w = (uint32_t)regress_auto_warmup(batches);
		if (stacks_rank(st, w, batches, site, &g, &n) == 0) {
			uint64_t ips[64];
			for (size_t i = 0; i < n && i < 4; i++)
				stacks_ips(st, g[i].id, ips, 64);
			stacks_growth_free(g, n);
		}
	}
out:
	replay_destroy(rp);
	stacks_destroy(st);
	series_finish(&se);
	reader_destroy(rd);
	return 0;
}
