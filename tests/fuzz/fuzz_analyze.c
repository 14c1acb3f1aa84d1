/* libFuzzer target: the analyzer on arbitrary input, through
 * analysis_create, the walk `heapslope analyze` makes (the reader's prefetch and
 * reader_events, the replay and its consumers: the stacks, the heap map,
 * the series; symbols), then every report format, for one trace and for
 * two side by side; and the walk `heapslope dump` makes, record by
 * record.  Any input must end in a report or a clean error, never a
 * crash, a leak, or memory or time without bound.
 *
 * Inputs that start with the trace magic are traces.  Other inputs
 * starting with an odd byte are record bytes, wrapped here in a valid
 * header and valid zstd frames, so that mutations reach the record
 * decoder; the rest are files as they are.  The custom mutator
 * (mutate.h) decodes a trace, or wrapped records, into records and
 * encodes them again with absurd values, so that half the mutations pass
 * the framing and test how values are handled. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "analyze/analysis.h"
#include "analyze/walk.h"
#include "format/encoder.h"
#include "mutate.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

static char path[64];

static ZSTD_CCtx *cctx;

static int is_trace(const uint8_t *data, size_t size)
{
	return size >= HS_MAGIC_LEN && !memcmp(data, HS_MAGIC, HS_MAGIC_LEN);
}

/* A trace whose records are the input, in two chunks (the second half in
 * its own chunk: delta state restarts there). */
static int write_wrapped(FILE *f, const uint8_t *data, size_t size)
{
	uint8_t body[256], pre[HS_PREAMBLE_LEN + sizeof(body)];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	header_put_u64(&h, HS_HDR_PID, 42);
	header_put_str(&h, HS_HDR_ARG, "fuzz");
	size_t n = header_write(&h, pre, sizeof(pre));
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
		 * others go in as the chunk's payload, to fuzz the columns */
		uint8_t *work = out ? malloc(chunk_work_size(parts[i][1]))
				    : NULL;
		size_t c = work ? chunk_encode(cctx, data + parts[i][0],
					       parts[i][1], out, cap, work)
				: 0;
		if (!c && out)
			c = chunk_pack(cctx, data + parts[i][0], parts[i][1],
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
		snprintf(path, sizeof(path), "/tmp/fuzz_analyze.%d.hst",
			 (int)getpid());
		atexit(remove_input);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int rc;
	if (size && (data[0] & 1) && !is_trace(data, size))
		rc = write_wrapped(f, data + 1, size - 1);
	else
		rc = fwrite(data, 1, size, f) == size ? 0 : -1;
	return fclose(f) == 0 && rc == 0 ? 0 : -1;
}

/* dump's walk: every record through reader_next, none skipped. */
static int count_record(void *ctx, const struct hs_record *rec)
{
	(void)rec;
	++*(size_t *)ctx;
	return 0;
}

static const struct walk_sink records = { .record = count_record };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the options of `heapslope analyze`, grouping by site on half the
	 * inputs; a trace without marks is analyzed again in time windows.
	 * (Fixed windows are left out: the number a trace's duration makes
	 * of them, up to 10 M, is what --batches time:DURATION asks for.) */
	struct analysis_opts o = {
		.batches = BATCHES_AUTO,
		.warmup = -1,
		.top = 10,
		.group_by_site = size & 1,
	};
	const struct report_opts ro = { .utf8 = (size & 8) != 0 };
	size_t n = 0;
	if (write_input(data, size))
		return 0;
	walk(path, &records, &n);
	struct analysis *a = analysis_create(path, &o);
	struct analysis *const two[] = { a, a };
	size_t nformats;
	const struct report_format *f = report_formats(&nformats);
	for (size_t i = 0; a && i < nformats; i++) {
		report_write(&f[i], two, 1, "/dev/null", &ro);
		report_write(&f[i], two, 2, "/dev/null", &ro);
	}
	analysis_destroy(a);
	return 0;
}

/* The input as a trace: itself, or the trace its records are wrapped in;
 * NULL for other bytes. */
static uint8_t *as_trace(const uint8_t *data, size_t size, size_t *n)
{
	if (is_trace(data, size)) {
		uint8_t *t = malloc(size ? size : 1);
		if (t)
			memcpy(t, data, size);
		*n = size;
		return t;
	}
	if (!size || !(data[0] & 1))
		return NULL;
	char *t = NULL;
	FILE *f = open_memstream(&t, n);
	if (!f)
		return NULL;
	int rc = write_wrapped(f, data + 1, size - 1);
	if (fclose(f) || rc) {
		free(t);
		return NULL;
	}
	return (uint8_t *)t;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	size_t n, outn = 0;
	uint8_t *out = NULL;
	/* half the time libFuzzer's own mutations, on the bytes */
	if (seed % 2)
		return LLVMFuzzerMutate(data, size, max);
	uint8_t *t = as_trace(data, size, &n);
	if (!t || mutate_random(t, n, seed, &out, &outn) || outn > max) {
		free(t);
		free(out);
		return LLVMFuzzerMutate(data, size, max);
	}
	memcpy(data, out, outn);
	free(t);
	free(out);
	return outn;
}
