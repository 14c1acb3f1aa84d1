#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "../base/bigmem.h"
#include "columns.h"
#include "../base/error.h"
#include "records.h"
#include "varint.h"

/* One chunk read, decompressed and turned back into rows. */
struct chunk {
	uint8_t *cbuf, *ubuf, *rbuf; /* compressed, columns, rows */
	size_t ccap, ucap, rcap;
	size_t rows;
	uint64_t size;  /* header + compressed bytes in the file */
	int status;     /* 1: a chunk; 0: end of file; -1: err */
	int truncated;  /* the error is a cut-off file */
	char err[384];
};

/* With prefetch, a thread decodes the chunks ahead of the reader into a
 * ring: the reader holds one, the thread fills the others. */
#define SLOTS 3

struct prefetch {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t filled_cv, free_cv;
	struct chunk slot[SLOTS];
	unsigned head;   /* next slot to take */
	unsigned filled; /* slots decoded and not taken */
	int held;        /* the reader holds the slot before head */
	int stop;
	uint64_t offset; /* the thread's position in the file */
};

struct hs_reader {
	FILE *f;
	char *path;
	struct hs_header hdr;
	ZSTD_DCtx *dctx;
	struct chunk one;      /* without prefetch */
	struct prefetch *pf;   /* NULL: chunks decoded on demand */
	int want_prefetch;
	const uint8_t *p, *end; /* undecoded records of the current chunk */
	uint64_t offset, chunks;
	int truncated;
	int done, done_rc;   /* the end or an error was reached */
	char done_err[384];  /* ... and its message, for later calls */
	struct hs_dec dec;   /* delta state, reset at every chunk */
	uint64_t time_ns;    /* kept across chunks until a time field */
	uint64_t tid;
};

/* Takes f (closed by reader_destroy, also on failure); path is how
 * messages call the trace. */
static struct hs_reader *open_stream(FILE *f, const char *path)
{
	struct hs_reader *r = calloc(1, sizeof(*r));
	uint8_t pre[HS_PREAMBLE_LEN], *body = NULL;
	if (!r) {
		if (f)
			fclose(f);
		hs_error("out of memory");
		return NULL;
	}
	r->f = f;
	if (!r->f) {
		hs_error("cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	r->path = strdup(path);
	size_t got = fread(pre, 1, sizeof(pre), r->f);
	if (got < HS_MAGIC_LEN || memcmp(pre, HS_MAGIC, HS_MAGIC_LEN) != 0) {
		if (ferror(r->f))
			hs_error("cannot read %s: %s", path, strerror(errno));
		else if (got == 0)
			hs_error("%s is empty: not a heapslope trace (nothing "
				 "was written to it)", path);
		else
			hs_error("%s is not a heapslope trace (bad magic)", path);
		goto fail;
	}
	if (got < sizeof(pre)) {
		hs_error("%s: truncated trace header", path);
		goto fail;
	}
	unsigned version = pre[8] | pre[9] << 8;
	uint32_t blen = le32_get(pre + 12);
	if (version < HS_FORMAT_VERSION_MIN || version > HS_FORMAT_VERSION) {
		hs_error("%s: trace format version %u is not supported (this "
			 "heapslope reads versions %u to %u)",
			 path, version, HS_FORMAT_VERSION_MIN, HS_FORMAT_VERSION);
		goto fail;
	}
	if (blen > HS_HEADER_MAX) {
		hs_error("%s: corrupt trace header (length %u)", path, blen);
		goto fail;
	}
	body = malloc(blen ? blen : 1);
	if (!body) {
		hs_error("out of memory");
		goto fail;
	}
	if (fread(body, 1, blen, r->f) != blen) {
		hs_error("%s: truncated trace header", path);
		goto fail;
	}
	if (header_parse(body, blen, version, &r->hdr)) {
		hs_error("%s: corrupt trace header", path);
		goto fail;
	}
	free(body);
	body = NULL;
	r->offset = HS_PREAMBLE_LEN + blen;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		hs_error("out of memory");
		goto fail;
	}
	return r;
fail:
	free(body);
	reader_destroy(r);
	return NULL;
}

struct hs_reader *reader_open(const char *path)
{
	return open_stream(fopen(path, "rb"), path);
}

struct hs_reader *reader_open_fd(int fd, const char *name)
{
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	FILE *f = own >= 0 ? fdopen(own, "rb") : NULL;
	if (!f && own >= 0)
		close(own);
	return open_stream(f, name);
}

struct hs_reader *reader_open_mem(const void *buf, size_t n, const char *name)
{
	/* fmemopen refuses an empty buffer: read an empty file instead */
	static const char empty[1];
	FILE *f = fmemopen(n ? (void *)buf : (void *)empty, n ? n : 1, "rb");
	if (f && !n)
		fseek(f, 1, SEEK_SET);
	return open_stream(f, name);
}

const struct hs_header *reader_header(const struct hs_reader *r)
{
	return &r->hdr;
}

void reader_prefetch(struct hs_reader *r)
{
	if (!r->pf && !r->chunks && !r->done)
		r->want_prefetch = 1;
}

uint64_t reader_offset(const struct hs_reader *r)
{
	return r->offset;
}

int reader_truncated(const struct hs_reader *r)
{
	return r->truncated;
}

uint64_t reader_chunks(const struct hs_reader *r)
{
	return r->chunks;
}

/* A chunk buffer of at least need bytes, its contents not kept: whole
 * huge pages, filled in one fault each, and room for the next chunks
 * (the recorder writes them of about 2 MiB). */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	const size_t huge = 2u << 20;
	if (need <= *cap)
		return 0;
	size_t want = (need + huge - 1) & ~(huge - 1);
	uint8_t *b = bigmem_zalloc(want);
	if (!b)
		return -1;
	bigmem_free(*buf, *cap);
	*buf = b;
	*cap = want;
	return 0;
}

/* Sets c's error; returns -1. */
__attribute__((format(printf, 2, 3))) static int chunk_err(struct chunk *c,
							   const char *fmt,
							   ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return c->status = -1;
}

/* Reads the chunk at offset (the file's position) into c: c->status.
 * Touches no shared state: the prefetch thread runs it. */
static int chunk_load(FILE *f, const char *path, uint64_t offset,
		      ZSTD_DCtx *dctx, struct chunk *c)
{
	uint8_t h[HS_CHUNK_HEADER_LEN];
	unsigned long long at = (unsigned long long)offset;
	c->truncated = 0;
	size_t got = fread(h, 1, sizeof(h), f);
	if (got == 0 && feof(f))
		return c->status = 0;
	if (got < sizeof(h)) {
		if (ferror(f))
			return chunk_err(c, "%s: read error: %s", path,
					 strerror(errno));
		c->truncated = 1;
		return chunk_err(c, "%s: truncated trace: partial chunk header "
				 "at byte %llu", path, at);
	}
	if (memcmp(h, HS_CHUNK_MAGIC, 4) != 0)
		return chunk_err(c, "%s: corrupt trace: bad chunk magic at "
				 "byte %llu", path, at);
	uint32_t csize = le32_get(h + 4), usize = le32_get(h + 8);
	if (usize > HS_CHUNK_MAX || csize > ZSTD_compressBound(HS_CHUNK_MAX))
		return chunk_err(c, "%s: corrupt trace: bad chunk size at byte "
				 "%llu", path, at);
	if (grow(&c->cbuf, &c->ccap, csize ? csize : 1) ||
	    grow(&c->ubuf, &c->ucap, usize ? usize : 1))
		return chunk_err(c, "out of memory");
	/* read, not mapped: unmapping each chunk again costs more (TLB
	 * shootdowns once other threads run) than the copy */
	if (fread(c->cbuf, 1, csize, f) != csize) {
		c->truncated = !ferror(f);
		return chunk_err(c, "%s: truncated trace: partial chunk at "
				 "byte %llu", path, at);
	}
	size_t n = ZSTD_decompressDCtx(dctx, c->ubuf, usize, c->cbuf, csize);
	if (ZSTD_isError(n))
		return chunk_err(c, "%s: corrupt trace: chunk at byte %llu: %s",
				 path, at, ZSTD_getErrorName(n));
	if (n != usize)
		return chunk_err(c, "%s: corrupt trace: chunk at byte %llu has "
				 "%zu bytes, expected %u", path, at, n, usize);
	/* rows: as long as the columns, or as the modeled ones say */
	size_t rows = columns_rows_size(c->ubuf, usize);
	if (rows != (size_t)-1 && rows <= HS_CHUNK_MAX &&
	    grow(&c->rbuf, &c->rcap, rows ? rows : 1))
		return chunk_err(c, "out of memory");
	c->rows = rows <= HS_CHUNK_MAX
			  ? columns_decode(c->ubuf, usize, c->rbuf, rows)
			  : (size_t)-1;
	if (c->rows == (size_t)-1)
		return chunk_err(c, "%s: corrupt trace: bad columns in the "
				 "chunk at byte %llu", path, at);
	c->size = HS_CHUNK_HEADER_LEN + (uint64_t)csize;
	return c->status = 1;
}

static void chunk_free(struct chunk *c)
{
	bigmem_free(c->cbuf, c->ccap);
	bigmem_free(c->ubuf, c->ucap);
	bigmem_free(c->rbuf, c->rcap);
}

static void *prefetch_run(void *arg)
{
	struct hs_reader *r = arg;
	struct prefetch *pf = r->pf;
	unsigned tail = 0;
	for (;;) {
		pthread_mutex_lock(&pf->mu);
		while (!pf->stop && pf->filled + (unsigned)pf->held >= SLOTS)
			pthread_cond_wait(&pf->free_cv, &pf->mu);
		int stop = pf->stop;
		pthread_mutex_unlock(&pf->mu);
		if (stop)
			return NULL;
		struct chunk *c = &pf->slot[tail];
		chunk_load(r->f, r->path, pf->offset, r->dctx, c);
		if (c->status == 1)
			pf->offset += c->size;
		pthread_mutex_lock(&pf->mu);
		pf->filled++;
		pthread_cond_signal(&pf->filled_cv);
		pthread_mutex_unlock(&pf->mu);
		if (c->status != 1)
			return NULL; /* the end, or an error: nothing follows */
		tail = (tail + 1) % SLOTS;
	}
}

static int prefetch_start(struct hs_reader *r)
{
	struct prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -1;
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->filled_cv, NULL);
	pthread_cond_init(&pf->free_cv, NULL);
	pf->offset = r->offset;
	r->pf = pf;
	if (pthread_create(&pf->thread, NULL, prefetch_run, r) != 0) {
		r->pf = NULL;
		free(pf);
		return -1;
	}
	return 0;
}

static void prefetch_stop(struct hs_reader *r)
{
	struct prefetch *pf = r->pf;
	if (!pf)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->stop = 1;
	pthread_cond_signal(&pf->free_cv);
	pthread_mutex_unlock(&pf->mu);
	pthread_join(pf->thread, NULL);
	for (unsigned i = 0; i < SLOTS; i++)
		chunk_free(&pf->slot[i]);
	pthread_mutex_destroy(&pf->mu);
	pthread_cond_destroy(&pf->filled_cv);
	pthread_cond_destroy(&pf->free_cv);
	free(pf);
	r->pf = NULL;
}

/* The next chunk: decoded now, or taken from the prefetch thread (the
 * one held so far is given back). */
static struct chunk *next_chunk(struct hs_reader *r)
{
	if (r->want_prefetch && !r->pf) {
		r->want_prefetch = 0; /* once: on failure, decode here */
		prefetch_start(r);
	}
	struct prefetch *pf = r->pf;
	if (!pf) {
		chunk_load(r->f, r->path, r->offset, r->dctx, &r->one);
		return &r->one;
	}
	pthread_mutex_lock(&pf->mu);
	if (pf->held) {
		pf->held = 0;
		pthread_cond_signal(&pf->free_cv);
	}
	while (!pf->filled)
		pthread_cond_wait(&pf->filled_cv, &pf->mu);
	struct chunk *c = &pf->slot[pf->head];
	pf->filled--;
	pf->held = 1;
	pf->head = (pf->head + 1) % SLOTS;
	pthread_mutex_unlock(&pf->mu);
	return c;
}

/* 1: a chunk loaded; 0: end of file; -1: error */
static int load_chunk(struct hs_reader *r)
{
	if (r->done) {
		if (r->done_rc < 0)
			hs_error("%s", r->done_err);
		return r->done_rc;
	}
	struct chunk *c = next_chunk(r);
	if (c->status != 1) {
		/* the end or an error is final: the thread has stopped */
		r->done = 1;
		r->done_rc = c->status;
		r->truncated = c->truncated;
		if (c->status < 0) {
			hs_error("%s", c->err);
			snprintf(r->done_err, sizeof(r->done_err), "%s", c->err);
		}
		return c->status;
	}
	r->offset += c->size;
	r->chunks++;
	r->p = c->rbuf;
	r->end = c->rbuf + c->rows;
	memset(&r->dec, 0, sizeof(r->dec));
	r->tid = 0;
	return 1;
}

int reader_next(struct hs_reader *r, struct hs_record *rec)
{
	while (r->p == r->end) {
		int rc = load_chunk(r);
		if (rc <= 0)
			return rc;
	}
	const uint8_t *p = r->p;
	unsigned tag = *p++;
	const struct hs_rec_desc *d = hs_rec_desc(tag);
	rec->tag = tag;
	rec->kind = tag >= HS_REC_ALLOC ? HS_TAG_KIND(tag) : tag;
	rec->fn = tag >= HS_REC_ALLOC ? HS_TAG_FN(tag) : 0;
	rec->tid = r->tid;
	rec->time_ns = r->time_ns;
	if (!d)
		return hs_error("%s: corrupt trace: unknown record 0x%02x in "
				"chunk ending at byte %llu", r->path, tag,
				(unsigned long long)r->offset);
	if (hs_rec_decode(d, &r->dec, &p, r->end, rec))
		return hs_error("%s: corrupt trace: bad record 0x%02x in chunk "
				"ending at byte %llu", r->path, tag,
				(unsigned long long)r->offset);
	if (r->dec.has_time)
		r->time_ns = rec->time_ns;
	if (rec->kind == HS_REC_SWITCH)
		r->tid = rec->tid;
	if (rec->kind == HS_REC_SAMPLE)
		rec->has_mallinfo = (rec->flags & HS_SAMPLE_MALLINFO) != 0;
	r->p = p;
	return 1;
}

/* One varint, the short ones unrolled; NULL when malformed. */
static inline const uint8_t *get_u64(const uint8_t *p, const uint8_t *end,
				     uint64_t *v)
{
	if (end - p >= 3) {
		uint64_t b0 = p[0], b1 = p[1], b2 = p[2];
		if (b0 < 0x80) {
			*v = b0;
			return p + 1;
		}
		if (b1 < 0x80) {
			*v = (b0 & 0x7f) | b1 << 7;
			return p + 2;
		}
		if (b2 < 0x80) {
			*v = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
			return p + 3;
		}
	}
	return varint_get(&p, end, v) ? NULL : p;
}

#define EV_GET(v)                                                            \
	do {                                                                 \
		if (!(p = get_u64(p, end, &(v))))                            \
			goto stop;                                           \
	} while (0)

#define EV_PTR(v)                                                            \
	do {                                                                 \
		uint64_t z_;                                                 \
		EV_GET(z_);                                                  \
		prev += (uint64_t)zigzag_decode(z_);                         \
		(v) = prev;                                                  \
	} while (0)

size_t reader_events(struct hs_reader *r, struct hs_event *ev, size_t max)
{
	const uint8_t *p = r->p, *end = r->end;
	uint64_t prev = r->dec.prev_ptr;
	size_t n = 0;
	while (n < max && p < end && *p >= HS_REC_ALLOC) {
		const uint8_t *start = p;
		uint64_t prev_start = prev;
		struct hs_event *e = &ev[n];
		unsigned tag = *p++;
		e->kind = HS_TAG_KIND(tag);
		e->fn = HS_TAG_FN(tag);
		switch (e->kind) {
		case HS_REC_ALLOC:
			EV_GET(e->size);
			EV_GET(e->stack);
			EV_PTR(e->ptr);
			break;
		case HS_REC_FREE:
			EV_PTR(e->ptr);
			break;
		case HS_REC_REALLOC:
			EV_PTR(e->old_ptr);
			EV_PTR(e->ptr);
			EV_GET(e->size);
			EV_GET(e->stack);
			break;
		case HS_REC_FAIL:
			EV_GET(e->size);
			EV_GET(e->stack);
			e->ptr = 0;
			break;
		case HS_REC_MUNMAP:
			EV_PTR(e->ptr);
			EV_GET(e->size);
			break;
		default: /* unknown: reader_next reports it */
			p = start;
			goto out;
		}
		n++;
		continue;
stop:		/* malformed: left to reader_next, which reports it */
		p = start;
		prev = prev_start;
		break;
	}
out:
	r->p = p;
	r->dec.prev_ptr = prev;
	return n;
}

int reader_seek(struct hs_reader *r, uint64_t offset)
{
	if (r->pf || r->want_prefetch)
		return hs_error("%s: cannot seek while prefetching", r->path);
	if (fseeko(r->f, (off_t)offset, SEEK_SET))
		return hs_error("%s: seek: %s", r->path, strerror(errno));
	/* every chunk starts afresh: only the time carries over, and it is
	 * not known here */
	r->offset = offset;
	r->p = r->end = NULL;
	r->done = 0;
	r->truncated = 0;
	memset(&r->dec, 0, sizeof(r->dec));
	r->tid = 0;
	r->time_ns = 0;
	return 0;
}

void reader_destroy(struct hs_reader *r)
{
	if (!r)
		return;
	prefetch_stop(r);
	if (r->f)
		fclose(r->f);
	ZSTD_freeDCtx(r->dctx);
	header_finish(&r->hdr);
	chunk_free(&r->one);
	free(r->path);
	free(r);
}
