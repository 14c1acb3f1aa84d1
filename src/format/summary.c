#include "summary.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/error.h"
#include "reader.h"
#include "varint.h"

/* The offsets of the last two whole chunks (0: none), walking the chunk
 * headers only; a partial chunk at the end (a process killed, or still
 * writing) ends the walk. */
static void last_chunks(int fd, uint64_t size, uint64_t at[2])
{
	uint8_t pre[HS_PREAMBLE_LEN], ch[HS_CHUNK_HEADER_LEN];
	at[0] = at[1] = 0;
	if (pread(fd, pre, sizeof(pre), 0) != (ssize_t)sizeof(pre))
		return;
	uint64_t off = HS_PREAMBLE_LEN + (uint64_t)le32_get(pre + 12);
	while (off + HS_CHUNK_HEADER_LEN <= size) {
		if (pread(fd, ch, sizeof(ch), (off_t)off) != (ssize_t)sizeof(ch) ||
		    memcmp(ch, HS_CHUNK_MAGIC, 4) != 0)
			return;
		uint64_t next = off + HS_CHUNK_HEADER_LEN + le32_get(ch + 4);
		if (next > size)
			return;
		at[0] = at[1];
		at[1] = off;
		off = next;
	}
}

static void take(struct hs_summary *s, const struct hs_record *r)
{
	if (r->kind >= HS_REC_ALLOC)
		s->events++;
	else if (r->kind == HS_REC_MARK)
		s->marks++;
	else if (r->kind == HS_REC_END) {
		s->complete = 1;
		s->end_reason = r->end_reason;
	} else if (r->kind == HS_REC_EXIT) {
		s->has_exit = 1;
		s->wait_status = r->wait_status;
	}
}

static char *command_of(const struct hs_header *h)
{
	const char *a0 = h->argc ? h->argv[0] : h->exe ? h->exe : "?";
	const char *base = strrchr(a0, '/');
	size_t len = strlen(base ? base + 1 : a0) + 1;
	for (int i = 1; i < h->argc; i++)
		len += strlen(h->argv[i]) + 1;
	char *c = malloc(len), *p = c;
	if (!c)
		return NULL;
	p += sprintf(p, "%s", base ? base + 1 : a0);
	for (int i = 1; i < h->argc; i++)
		p += sprintf(p, " %s", h->argv[i]);
	return c;
}

/* The END record's counters, from the last two chunks (an EXIT chunk may
 * follow the one with END). */
static void read_from(struct hs_reader *r, uint64_t from,
		      struct hs_summary *s)
{
	struct hs_record rec;
	if (!from || reader_seek(r, from))
		return;
	while (reader_next(r, &rec) > 0) {
		take(s, &rec);
		if (rec.kind == HS_REC_END) {
			s->counted = 1;
			s->events = rec.counts[HS_COUNT_EVENTS];
			s->marks = rec.counts[HS_COUNT_MARKS];
		}
	}
}

/* The end record is in the last chunk (the recorder writes it in a chunk
 * of its own), or in the one before when an exit status was appended. */
static void read_tail(struct hs_reader *r, const uint64_t at[2],
		      struct hs_summary *s)
{
	struct hs_summary before = *s;
	read_from(r, at[1], s);
	if (!s->counted && at[0]) {
		*s = before;
		read_from(r, at[0], s);
	}
}

int summary_read(const char *path, uint64_t count_bytes,
		 struct hs_summary *s)
{
	struct hs_reader *r = NULL;
	struct hs_record rec;
	struct stat st;
	int fd = -1, rc = -1;
	memset(s, 0, sizeof(*s));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		hs_error("cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	s->bytes = (uint64_t)st.st_size;
	r = reader_open(path);
	if (!r)
		goto out;
	const struct hs_header *h = reader_header(r);
	s->pid = h->pid;
	s->ppid = h->ppid;
	s->options = h->options;
	s->start_monotonic_ns = h->start_monotonic_ns;
	s->command = command_of(h);
	s->malloc_owner = h->malloc_owner ? strdup(h->malloc_owner) : NULL;
	uint64_t at[2];
	last_chunks(fd, s->bytes, at);
	read_tail(r, at, s);
	if (!s->complete)
		s->events = s->marks = 0;
	if (!s->complete && count_bytes) {
		/* no counters to read: count, from the start */
		reader_destroy(r);
		r = reader_open(path);
		if (!r)
			goto out;
		reader_prefetch(r);
		s->has_exit = 0;
		/* whole chunks, those that start before count_bytes */
		uint64_t next = reader_offset(r), chunks = reader_chunks(r);
		while (reader_next(r, &rec) > 0) {
			if (reader_chunks(r) != chunks) {
				if (next >= count_bytes) {
					s->partial = 1;
					break;
				}
				chunks = reader_chunks(r);
			}
			take(s, &rec);
			next = reader_offset(r);
		}
		s->counted = 1;
	}
	rc = 0;
out:
	reader_destroy(r);
	if (fd >= 0)
		close(fd);
	if (rc)
		summary_finish(s);
	return rc;
}

void summary_finish(struct hs_summary *s)
{
	free(s->command);
	free(s->malloc_owner);
	s->command = s->malloc_owner = NULL;
}
