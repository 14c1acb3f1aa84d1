#include "mutate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "format/encoder.h"
#include "base/error.h"
#include "format/reader.h"
#include "format/records.h"

/* Rows per chunk at most, as the reader takes them: a record repeated
 * many times spills into more chunks. */
#define ROWS_MAX HS_CHUNK_MAX
/* Copies and counts at most: a mutated trace takes a few MiB of rows,
 * for inputs the fuzzer and the test run in a fraction of a second. */
#define REPEAT_MAX (1u << 20)
#define REPEAT_BYTES (4u << 20)
#define NSEG_MAX 1024
#define NCOUNT_MAX 4096

/* The trace being written, and the rows of its current chunk. */
struct out {
	uint8_t *buf;
	size_t len, cap;
	uint8_t *rows;
	size_t nrows, rows_cap;
	struct hs_enc enc;
	uint64_t tid; /* the thread of the chunk's events */
	ZSTD_CCtx *cctx;
};

/* Room for n more bytes in *buf, of which len are used. */
static int reserve(uint8_t **buf, size_t *cap, size_t len, size_t n)
{
	if (len + n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1 << 16;
	while (c < len + n)
		c *= 2;
	uint8_t *b = realloc(*buf, c);
	if (!b)
		return hs_error("out of memory");
	*buf = b;
	*cap = c;
	return 0;
}

static int reserve_out(struct out *o, size_t n)
{
	return reserve(&o->buf, &o->cap, o->len, n);
}

static int reserve_rows(struct out *o, size_t n)
{
	return reserve(&o->rows, &o->rows_cap, o->nrows, n);
}

/* The rows so far as one chunk, encoded as the recorder's writer does. */
static int flush(struct out *o)
{
	if (!o->nrows)
		return 0;
	uint8_t *work = malloc(chunk_work_size(o->nrows));
	if (!work || reserve_out(o, chunk_bound(o->nrows))) {
		free(work);
		return hs_error("out of memory");
	}
	size_t c = chunk_encode(o->cctx, o->rows, o->nrows, o->buf + o->len,
				chunk_bound(o->nrows), work);
	free(work);
	if (!c)
		return hs_error("chunk_encode failed on %zu bytes of rows",
				o->nrows);
	o->len += c;
	o->nrows = 0;
	enc_reset(&o->enc);
	return 0;
}

static uint64_t changed(uint64_t v, const struct mutate_rule *rule);

static int put_header(struct out *o, const struct hs_header *hd,
		      const struct mutate_rule *rules, size_t nrules)
{
	struct hs_header h = *hd;
	for (size_t i = 0; i < nrules; i++) {
		if (rules[i].index != MUTATE_HEADER)
			continue;
		if (rules[i].field == MF_PAGE_SIZE)
			h.page_size = changed(h.page_size, &rules[i]);
		else if (rules[i].field == MF_HEAP_START)
			h.heap_start = changed(h.heap_start, &rules[i]);
		else if (rules[i].field == MF_OPTIONS)
			h.options = changed(h.options, &rules[i]);
	}
	struct hs_header_buf b = { malloc(HS_HEADER_MAX), 0, HS_HEADER_MAX, 0 };
	if (!b.buf)
		return hs_error("out of memory");
	header_put_u64(&b, HS_HDR_PID, h.pid);
	header_put_u64(&b, HS_HDR_PPID, h.ppid);
	if (h.exe)
		header_put_str(&b, HS_HDR_EXE, h.exe);
	for (int i = 0; i < h.argc; i++)
		header_put_str(&b, HS_HDR_ARG, h.argv[i]);
	header_put_u64(&b, HS_HDR_START_REALTIME, h.start_realtime_ns);
	header_put_u64(&b, HS_HDR_START_MONOTONIC, h.start_monotonic_ns);
	header_put_u64(&b, HS_HDR_PAGE_SIZE, h.page_size);
	header_put_u64(&b, HS_HDR_DEPTH, h.depth);
	header_put_u64(&b, HS_HDR_OPTIONS, h.options);
	if (h.recorder_version)
		header_put_str(&b, HS_HDR_VERSION, h.recorder_version);
	header_put_u64(&b, HS_HDR_INTERVAL, h.interval_ms);
	if (h.unwind)
		header_put_str(&b, HS_HDR_UNWIND, h.unwind);
	if (h.allocator)
		header_put_str(&b, HS_HDR_ALLOCATOR, h.allocator);
	header_put_u64(&b, HS_HDR_HEAP_START, h.heap_start);
	if (h.malloc_owner)
		header_put_str(&b, HS_HDR_MALLOC_OWNER, h.malloc_owner);
	if (h.pymalloc_set)
		header_put_u64(&b, HS_HDR_PYMALLOC, 1);
	if (h.has_before) {
		header_put_u64(&b, HS_HDR_BEFORE_ALLOCS, h.before_allocs);
		header_put_u64(&b, HS_HDR_BEFORE_BYTES, h.before_bytes);
	}
	int rc = reserve_out(o, HS_PREAMBLE_LEN + b.len);
	size_t n = rc ? 0 : header_write(&b, o->buf, o->cap);
	free(b.buf);
	if (rc)
		return -1;
	if (!n)
		return hs_error("header too long");
	o->len = n;
	return 0;
}

/* Bytes one record can take once encoded (nseg, ncount: of the copy). */
static size_t record_bound(const struct hs_record *r, uint64_t nseg,
			   uint64_t ncount)
{
	if (r->kind == HS_REC_END)
		return hs_rec_bound(r) + HS_VARINT_MAX * ncount;
	return hs_rec_bound(r) + 4 * HS_VARINT_MAX * nseg;
}

/* One record's rows, by the format's table; a module or end record whose
 * count the rules changed repeats its last element (or counts 0) past
 * what a record holds.  NULL for a record the table does not know. */
static uint8_t *encode(struct out *o, uint8_t *p, struct hs_record *r,
		       uint64_t nseg, uint64_t ncount)
{
	struct hs_dec st = { o->enc.prev_ptr, o->enc.prev_time, 0 };
	if (!hs_rec_desc(r->tag))
		return NULL;
	if (r->kind == HS_REC_SWITCH)
		o->tid = r->tid;
	if (r->kind == HS_REC_SAMPLE) /* the fields the rules set */
		r->flags = (r->has_mallinfo ? HS_SAMPLE_MALLINFO : 0u) |
			(r->brk ? HS_SAMPLE_BRK : 0u);
	if (r->kind == HS_REC_MODULE && nseg != r->nseg) {
		*p++ = HS_REC_MODULE;
		p = varint_put(p, r->base);
		p = enc_str(p, r->str, r->str_len);
		p = enc_str(p, r->build_id, r->build_id_len);
		p = varint_put(p, nseg);
		for (uint64_t i = 0; i < nseg; i++) {
			const struct hs_segment *s =
				&r->segs[i < r->nseg ? i : r->nseg - 1];
			p = varint_put(p, s->vaddr);
			p = varint_put(p, s->memsz);
			p = varint_put(p, s->offset);
			p = varint_put(p, s->flags);
		}
		return p;
	}
	if (r->kind == HS_REC_END && ncount != HS_COUNT_MAX) {
		p = enc_u64(p, HS_REC_END, r->end_reason);
		p = varint_put(p, ncount);
		for (uint64_t i = 0; i < ncount; i++)
			p = varint_put(p, i < HS_COUNT_MAX ? r->counts[i] : 0);
		return p;
	}
	p = hs_rec_encode(&st, p, r);
	o->enc.prev_ptr = st.prev_ptr;
	o->enc.prev_time = st.time;
	return p;
}

/* The field's new value under rule. */
static uint64_t changed(uint64_t v, const struct mutate_rule *rule)
{
	return rule->add ? v + rule->value : rule->value;
}

/* Applies rule to r; nseg, ncount and repeat are the copy's. */
static void apply(struct hs_record *r, const struct mutate_rule *rule,
		  uint64_t *nseg, uint64_t *ncount, uint64_t *repeat)
{
	uint64_t *field = NULL, v;
	switch (rule->field) {
	case MF_PTR:
		field = r->kind == HS_REC_MODULE ||
				r->kind == HS_REC_MODULE_GONE
			? &r->base
			: &r->ptr;
		break;
	case MF_OLD: field = &r->old_ptr; break;
	case MF_SIZE: field = &r->size; break;
	case MF_STACK: field = &r->stack; break;
	case MF_ID: field = &r->id; break;
	case MF_PARENT: field = &r->parent; break;
	case MF_IP: field = &r->ip; break;
	case MF_TID: field = &r->tid; break;
	case MF_TIME: field = &r->time_ns; break;
	case MF_RSS: field = &r->rss; break;
	case MF_BRK: field = &r->brk; break;
	case MF_STATUS: field = &r->wait_status; break;
	case MF_KIND:
		r->mark_kind = (unsigned)changed(r->mark_kind, rule);
		break;
	case MF_REASON:
		r->end_reason = (unsigned)changed(r->end_reason, rule);
		break;
	case MF_MALLINFO:
		r->has_mallinfo = 1;
		v = changed(r->mi_arena, rule);
		r->mi_arena = r->mi_ordblks = r->mi_hblks = r->mi_hblkhd = v;
		r->mi_uordblks = r->mi_fordblks = r->mi_keepcost = v;
		break;
	case MF_FN:
		if (r->kind >= HS_REC_ALLOC) {
			r->fn = (unsigned)(changed(r->fn, rule) & 0x0f);
			r->tag = r->kind | r->fn;
		}
		break;
	case MF_VADDR:
	case MF_MEMSZ:
		for (unsigned i = 0; i < r->nseg; i++) {
			uint64_t *f = rule->field == MF_VADDR
					      ? &r->segs[i].vaddr
					      : &r->segs[i].memsz;
			*f = changed(*f, rule);
		}
		break;
	case MF_COUNT:
		for (int i = 0; i < HS_COUNT_MAX; i++)
			r->counts[i] = changed(r->counts[i], rule);
		break;
	case MF_NSEG:
		v = changed(*nseg, rule);
		if (r->kind == HS_REC_MODULE && r->nseg)
			*nseg = v < NSEG_MAX ? v : NSEG_MAX;
		break;
	case MF_NCOUNT:
		v = changed(*ncount, rule);
		*ncount = v < NCOUNT_MAX ? v : NCOUNT_MAX;
		break;
	case MF_REPEAT:
		v = changed(*repeat, rule);
		*repeat = v < REPEAT_MAX ? v : REPEAT_MAX;
		break;
	default:
		break;
	}
	if (field)
		*field = changed(*field, rule);
}

static int by_index(const void *a, const void *b)
{
	const struct mutate_rule *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

int mutate_apply(const uint8_t *in, size_t n, const struct mutate_rule *rules,
		 size_t nrules, uint8_t **out, size_t *outn)
{
	struct out o = { 0 };
	struct mutate_rule *sorted = NULL;
	struct hs_record rec = { 0 };
	int rc = -1;
	uint64_t index = 0, chunk = 0;
	size_t next = 0;
	struct hs_reader *rd = reader_open_mem(in, n, "input");
	if (!rd)
		goto out;
	o.cctx = ZSTD_createCCtx();
	sorted = malloc((nrules ? nrules : 1) * sizeof(*sorted));
	if (!o.cctx || !sorted) {
		hs_error("out of memory");
		goto out;
	}
	ZSTD_CCtx_setParameter(o.cctx, ZSTD_c_checksumFlag, 1);
	memcpy(sorted, rules, nrules * sizeof(*sorted));
	qsort(sorted, nrules, sizeof(*sorted), by_index);
	if (put_header(&o, reader_header(rd), sorted, nrules))
		goto out;
	for (; reader_next(rd, &rec) > 0; index++) {
		if (reader_chunks(rd) != chunk) { /* cut where the trace was */
			chunk = reader_chunks(rd);
			if (flush(&o))
				goto out;
			o.tid = 0;
		}
		uint64_t nseg = rec.kind == HS_REC_MODULE ? rec.nseg : 0;
		uint64_t ncount = HS_COUNT_MAX, repeat = 1;
		while (next < nrules && sorted[next].index < index)
			next++;
		for (; next < nrules && sorted[next].index == index; next++)
			apply(&rec, &sorted[next], &nseg, &ncount, &repeat);
		size_t bound = record_bound(&rec, nseg, ncount);
		if (repeat > 1 && repeat * bound > REPEAT_BYTES)
			repeat = REPEAT_BYTES / bound + 1;
		for (uint64_t k = 0; k < repeat; k++) {
			if (o.nrows + bound + 2 * HS_VARINT_MAX > ROWS_MAX) {
				uint64_t tid = o.tid;
				if (flush(&o))
					goto out;
				if (reserve_rows(&o, bound + 2 * HS_VARINT_MAX))
					goto out;
				if (tid) /* a new chunk starts with thread 0 */
					o.nrows = (size_t)(enc_u64(o.rows,
								  HS_REC_SWITCH,
								  tid) -
							   o.rows);
			}
			if (reserve_rows(&o, bound))
				goto out;
			uint8_t *p = encode(&o, o.rows + o.nrows, &rec, nseg,
					    ncount);
			if (!p) {
				hs_error("record 0x%02x: not known here",
					 rec.tag);
				goto out;
			}
			o.nrows = (size_t)(p - o.rows);
		}
	}
	if (flush(&o))
		goto out;
	*out = o.buf;
	*outn = o.len;
	o.buf = NULL;
	rc = 0;
out:
	reader_destroy(rd);
	ZSTD_freeCCtx(o.cctx);
	free(o.buf);
	free(o.rows);
	free(sorted);
	return rc;
}

/* splitmix64 */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* An absurd value, or a plausible one gone wrong, into r. */
static void absurd(uint64_t *g, struct mutate_rule *r)
{
	uint64_t x = next_random(g), small = x >> 52; /* 0..4095 */
	static const uint64_t set[] = {
		0, 1, 1ull << 31, 1ull << 32, 1ull << 63, UINT64_MAX,
		3400000000000000ull, /* the realloc of issue 9 */
	};
	r->add = 0;
	switch (x % 16) {
	case 0: case 1: case 2:
		r->value = set[small % (sizeof(set) / sizeof(set[0]))];
		return;
	case 3: /* at the end of x86_64's user space, and 5-level paging's */
		r->value = (1ull << (small & 1 ? 47 : 57)) - (small >> 1);
		return;
	case 4:
		r->value = (1ull << (small & 1 ? 47 : 57)) + (small >> 1);
		return;
	case 5: /* pointers near 2^64 */
		r->value = UINT64_MAX - small;
		return;
	case 6: /* a byte of size off the end of the address space */
		r->value = (1ull << 57) - 0x7f0000000000ull + small;
		return;
	case 7:
		r->value = 1ull << (small % 64);
		return;
	case 8:
		r->value = next_random(g);
		return;
	}
	r->add = 1;
	switch (x % 16) {
	case 9: r->value = -(1ull << 62); break; /* huge negative deltas */
	case 10: r->value = 1ull << 63; break;
	case 11: r->value = (1u << 16) + small % 4; break; /* unknown ids */
	case 12: r->value = 1ull << (small % 64); break;
	case 13: r->value = -(1ull << (small % 64)); break;
	case 14: r->value = 1ull << (40 + small % 20); break;
	default: r->value = small - 2048; break;
	}
}

/* The fields worth mutating in a record of each kind (sizes and pointers
 * of events twice: what the heap map and the replay live on), each list
 * ended by MF_REPEAT, which every record has. */
static const struct {
	unsigned kind;
	enum mutate_field f[8];
} fields[] = {
	{ HS_REC_ALLOC,
	  { MF_SIZE, MF_SIZE, MF_PTR, MF_PTR, MF_STACK, MF_FN, MF_REPEAT } },
	{ HS_REC_REALLOC,
	  { MF_SIZE, MF_SIZE, MF_PTR, MF_PTR, MF_STACK, MF_FN, MF_OLD,
	    MF_REPEAT } },
	{ HS_REC_FREE, { MF_PTR, MF_FN, MF_REPEAT } },
	{ HS_REC_FAIL, { MF_SIZE, MF_STACK, MF_REPEAT } },
	{ HS_REC_MUNMAP, { MF_PTR, MF_SIZE, MF_REPEAT } },
	{ HS_REC_STACK, { MF_ID, MF_PARENT, MF_IP, MF_REPEAT } },
	{ HS_REC_MODULE, { MF_PTR, MF_VADDR, MF_MEMSZ, MF_NSEG, MF_REPEAT } },
	{ HS_REC_MODULE_GONE, { MF_PTR, MF_REPEAT } },
	{ HS_REC_THREAD, { MF_TID, MF_REPEAT } },
	{ HS_REC_THREAD_NAME, { MF_TID, MF_REPEAT } },
	{ HS_REC_SWITCH, { MF_TID, MF_REPEAT } },
	{ HS_REC_MARK, { MF_TIME, MF_KIND, MF_REPEAT } },
	{ HS_REC_SAMPLE, { MF_TIME, MF_RSS, MF_BRK, MF_MALLINFO, MF_REPEAT } },
	{ HS_REC_TIME, { MF_TIME, MF_REPEAT } },
	{ HS_REC_END, { MF_REASON, MF_COUNT, MF_NCOUNT, MF_REPEAT } },
	{ HS_REC_EXIT, { MF_STATUS, MF_REPEAT } },
};

/* A field of a record of this kind, at random. */
static enum mutate_field field_of(unsigned kind, uint64_t *g)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (fields[i].kind != kind)
			continue;
		size_t n = 1;
		while (fields[i].f[n - 1] != MF_REPEAT)
			n++;
		return fields[i].f[next_random(g) % n];
	}
	return MF_REPEAT;
}

/* The kind of every record of the trace, in order. */
static int kinds_of(const uint8_t *in, size_t n, uint8_t **kinds,
		    size_t *count)
{
	struct hs_record rec;
	size_t cap = 0;
	struct hs_reader *rd = reader_open_mem(in, n, "input");
	*kinds = NULL;
	*count = 0;
	while (rd && reader_next(rd, &rec) > 0) {
		if (*count == cap) {
			cap = cap ? cap * 2 : 1024;
			uint8_t *k = realloc(*kinds, cap);
			if (!k)
				break;
			*kinds = k;
		}
		(*kinds)[(*count)++] = (uint8_t)rec.kind;
	}
	int ok = rd != NULL;
	reader_destroy(rd);
	return ok ? 0 : -1;
}

/* A record of the kind of a random one is most often an event: a random
 * record of a random kind present. */
static uint64_t of_kind(const uint8_t *kinds, size_t count, uint8_t some,
			uint64_t *g)
{
	uint8_t seen[256] = { 0 }, present[256];
	size_t np = 0, nk = 0;
	for (size_t i = 0; i < count; i++) {
		if (!seen[kinds[i]])
			present[np++] = kinds[i];
		seen[kinds[i]] = 1;
	}
	uint8_t want = np ? present[next_random(g) % np] : some;
	for (size_t i = 0; i < count; i++)
		nk += kinds[i] == want;
	uint64_t k = next_random(g) % (nk ? nk : 1);
	for (size_t i = 0; i < count; i++)
		if (kinds[i] == want && !k--)
			return i;
	return 0;
}

int mutate_random(const uint8_t *in, size_t n, uint64_t seed, uint8_t **out,
		  size_t *outn)
{
	static const unsigned how_many[] = { 1, 1, 1, 2, 2, 3, 5, 8, 16, 64 };
	static const uint64_t page_sizes[] = { 0, 1, 2, 16, 3000, 1u << 21,
					       1ull << 40, UINT64_MAX };
	uint64_t g = seed;
	uint8_t *kinds;
	size_t count;
	if (kinds_of(in, n, &kinds, &count))
		return -1;
	unsigned m = how_many[next_random(&g) % 10];
	struct mutate_rule rules[66];
	size_t nrules = 0;
	for (unsigned i = 0; i < m && count; i++) {
		uint64_t idx = next_random(&g) % count;
		if (next_random(&g) & 1) /* a kind of record, then one of it */
			idx = of_kind(kinds, count, kinds[idx], &g);
		struct mutate_rule *r = &rules[nrules++];
		r->index = idx;
		r->field = field_of(kinds[idx], &g);
		absurd(&g, r);
		if (r->field == MF_REPEAT) { /* a few copies, or thousands */
			r->add = 0;
			r->value = 2 + next_random(&g) %
					       (next_random(&g) & 1 ? 8 : 4096);
		}
	}
	if (next_random(&g) % 8 == 0) { /* the header's fields */
		struct mutate_rule *r = &rules[nrules++];
		r->index = MUTATE_HEADER;
		r->field = MF_PAGE_SIZE + next_random(&g) % 3;
		absurd(&g, r);
		if (r->field == MF_PAGE_SIZE) {
			r->add = 0;
			r->value = page_sizes[next_random(&g) % 8];
		}
	}
	free(kinds);
	return mutate_apply(in, n, rules, nrules, out, outn);
}

static const char *const field_names[MF_COUNT_] = {
	[MF_PTR] = "ptr",       [MF_OLD] = "old",
	[MF_SIZE] = "size",     [MF_STACK] = "stack",
	[MF_ID] = "id",         [MF_PARENT] = "parent",
	[MF_IP] = "ip",         [MF_TID] = "tid",
	[MF_TIME] = "time",     [MF_KIND] = "kind",
	[MF_RSS] = "rss",       [MF_BRK] = "brk",
	[MF_MALLINFO] = "mallinfo", [MF_FN] = "fn",
	[MF_VADDR] = "vaddr",   [MF_MEMSZ] = "memsz",
	[MF_NSEG] = "nseg",     [MF_REASON] = "reason",
	[MF_COUNT] = "count",   [MF_NCOUNT] = "ncount",
	[MF_STATUS] = "status", [MF_REPEAT] = "repeat",
	[MF_PAGE_SIZE] = "page_size", [MF_HEAP_START] = "heap_start",
	[MF_OPTIONS] = "options",
};

int mutate_parse_rule(const char *s, struct mutate_rule *r)
{
	char *end;
	if (!strncmp(s, "header:", 7)) {
		r->index = MUTATE_HEADER;
		end = (char *)s + 6;
	} else {
		errno = 0;
		r->index = strtoull(s, &end, 0);
		if (errno || end == s || *end != ':')
			return -1;
	}
	const char *name = end + 1, *eq = strchr(name, '=');
	if (!eq || eq == name)
		return -1;
	r->add = eq[-1] == '+';
	size_t len = (size_t)(eq - name) - (size_t)r->add;
	for (int f = 0; f < MF_COUNT_; f++) {
		if (strlen(field_names[f]) != len ||
		    strncmp(field_names[f], name, len) != 0)
			continue;
		r->field = (enum mutate_field)f;
		const char *v = eq + 1;
		int minus = *v == '-';
		errno = 0;
		r->value = strtoull(v + minus, &end, 0);
		if (minus)
			r->value = -r->value;
		return errno || end == v + minus || *end ? -1 : 0;
	}
	return -1;
}
