/* Unit test of the trace summary (format/summary.c): whose trace it is
 * and its counts, from the END record of its last chunks (not from the
 * records before, which it does not read), or counted when there is no
 * END; the exit status record appends after it; traces cut short;
 * files that are not traces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "base/error.h"
#include "format/append.h"
#include "format/encoder.h"
#include "format/summary.h"

static char dir[] = "/tmp/hs-test-summary-XXXXXX";

#define CHUNKS 5
#define ALLOCS 3 /* per chunk */
#define END_EVENTS 1234 /* what the END record says (not what is there) */
#define END_MARKS 77

static FILE *out;

static void put_chunk(ZSTD_CCtx *c, const uint8_t *rows, size_t n)
{
	size_t cap = chunk_bound(n);
	uint8_t *chunk = malloc(cap), *work = malloc(chunk_work_size(n));
	size_t cl = chunk_encode(c, rows, n, chunk, cap, work);
	CHECK(cl > 0);
	fwrite(chunk, 1, cl, out);
	free(chunk);
	free(work);
}

/* A trace of CHUNKS chunks of ALLOCS allocations and a mark each, then
 * (with_end) a chunk with an END record; returns the file's size. */
static long write_trace(const char *path, int with_end)
{
	uint8_t body[256], pre[256 + HS_PREAMBLE_LEN], rows[512];
	struct hs_header_buf h = { body, 0, sizeof(body), 0 };
	header_put_u64(&h, HS_HDR_PID, 4242);
	header_put_u64(&h, HS_HDR_PPID, 4200);
	header_put_str(&h, HS_HDR_EXE, "/usr/bin/python3.11");
	header_put_str(&h, HS_HDR_ARG, "/usr/bin/python3");
	header_put_str(&h, HS_HDR_ARG, "train.py");
	size_t hl = header_write(&h, pre, sizeof(pre));
	CHECK(hl > 0);
	out = fopen(path, "wb");
	CHECK(out != NULL);
	fwrite(pre, 1, hl, out);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	for (int k = 0; k < CHUNKS; k++) {
		struct hs_enc e;
		enc_reset(&e);
		uint8_t *p = rows;
		p = enc_timerec(&e, p, 1000 + (uint64_t)k);
		p = enc_u64(p, HS_REC_SWITCH, 1);
		for (int i = 0; i < ALLOCS; i++)
			p = enc_alloc(&e, p, HS_FN_MALLOC,
				      0x10000 + (uint64_t)(k * 64 + i * 16), 16,
				      0);
		p = enc_mark(&e, p, 2000, HS_MARK_BATCH, "", 0);
		put_chunk(c, rows, (size_t)(p - rows));
	}
	if (with_end) {
		uint64_t counts[HS_COUNT_MAX] = { 0 };
		counts[HS_COUNT_EVENTS] = END_EVENTS;
		counts[HS_COUNT_MARKS] = END_MARKS;
		uint8_t *p = enc_end(rows, HS_END_EXIT, counts);
		put_chunk(c, rows, (size_t)(p - rows));
	}
	ZSTD_freeCCtx(c);
	long size = ftell(out);
	fclose(out);
	return size;
}

static void test_complete(void)
{
	char path[64];
	struct hs_summary s;
	snprintf(path, sizeof(path), "%s/end.hst", dir);
	long size = write_trace(path, 1);
	CHECK(summary_read(path, UINT64_MAX, &s) == 0);
	CHECK(s.pid == 4242 && s.ppid == 4200);
	CHECK(s.command && !strcmp(s.command, "python3 train.py"));
	CHECK(s.bytes == (uint64_t)size);
	CHECK(s.complete && s.end_reason == HS_END_EXIT && s.counted);
	/* the END record's counters, not a count of the records */
	CHECK(s.events == END_EVENTS && s.marks == END_MARKS);
	CHECK(!s.has_exit);
	summary_finish(&s);

	CHECK(trace_append_exit(path, 3 << 8) == 0);
	CHECK(summary_read(path, 0, &s) == 0);
	CHECK(s.complete && s.events == END_EVENTS && s.has_exit);
	CHECK(WIFEXITED((int)s.wait_status) &&
	      WEXITSTATUS((int)s.wait_status) == 3);
	summary_finish(&s);
}

static void test_incomplete(void)
{
	char path[64];
	struct hs_summary s;
	snprintf(path, sizeof(path), "%s/noend.hst", dir);
	long size = write_trace(path, 0);
	CHECK(summary_read(path, UINT64_MAX, &s) == 0);
	CHECK(!s.complete && s.counted);
	CHECK(s.events == CHUNKS * ALLOCS && s.marks == CHUNKS);
	summary_finish(&s);
	CHECK(!s.partial);
	summary_finish(&s);
	/* asked to count the first 100 bytes only: the first chunk, then at
	 * least what was counted */
	CHECK(summary_read(path, 100, &s) == 0);
	CHECK(!s.complete && s.counted && s.partial);
	CHECK(s.events == ALLOCS && s.marks == 1);
	summary_finish(&s);
	/* not asked to count: unknown */
	CHECK(summary_read(path, 0, &s) == 0);
	CHECK(!s.complete && !s.counted);
	summary_finish(&s);
	/* cut inside the last chunk: the whole chunks before are counted */
	CHECK(truncate(path, size - 3) == 0);
	CHECK(summary_read(path, UINT64_MAX, &s) == 0);
	CHECK(!s.complete && s.events == (CHUNKS - 1) * ALLOCS &&
	      s.marks == CHUNKS - 1);
	summary_finish(&s);
	/* cut inside the END chunk: no END */
	snprintf(path, sizeof(path), "%s/cutend.hst", dir);
	size = write_trace(path, 1);
	CHECK(truncate(path, size - 2) == 0);
	CHECK(summary_read(path, UINT64_MAX, &s) == 0);
	CHECK(!s.complete && s.events == CHUNKS * ALLOCS);
	summary_finish(&s);
}

static void test_not_traces(void)
{
	char path[64];
	struct hs_summary s;
	snprintf(path, sizeof(path), "%s/missing.hst", dir);
	CHECK(summary_read(path, UINT64_MAX, &s) == -1);
	CHECK(strstr(hs_last_error(), "missing.hst") != NULL);
	summary_finish(&s);
	snprintf(path, sizeof(path), "%s/text", dir);
	FILE *f = fopen(path, "w");
	fputs("not a trace at all\n", f);
	fclose(f);
	CHECK(summary_read(path, UINT64_MAX, &s) == -1);
	CHECK(s.command == NULL);
	summary_finish(&s);
	f = fopen(path, "w"); /* empty */
	fclose(f);
	CHECK(summary_read(path, UINT64_MAX, &s) == -1);
	summary_finish(&s);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_complete();
	test_incomplete();
	test_not_traces();
	check_remove_dir(dir);
	return check_report("summary");
}
