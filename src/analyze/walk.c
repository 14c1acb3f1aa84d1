#include "walk.h"

#include <stdio.h>

#include "base/error.h"
#include "format/reader.h"



/* Prefixes the last error with the trace's path (copied first: hs_error
 * cannot print its own message into itself). */
static int path_error(const char *path)
{
	char why[512];
	snprintf(why, sizeof(why), "%s", hs_last_error());
	return hs_error("%s: %s", path, why);
}

typedef int (*record_fn)(void *ctx, const struct hs_record *rec);

/* The sink's callback of each record kind (a tag byte): its own, else
 * `record`. */
static void dispatch(const struct walk_sink *s, record_fn fn[256])
{
	for (unsigned kind = 0; kind < 256; kind++)
		fn[kind] = kind >= HS_REC_ALLOC ? s->event : NULL;
	fn[HS_REC_STACK] = s->stack;
	fn[HS_REC_MODULE] = s->module;
	fn[HS_REC_MARK] = s->mark;
	fn[HS_REC_SAMPLE] = s->sample;
	fn[HS_REC_END] = s->end;
	fn[HS_REC_EXIT] = s->exit;
	fn[HS_REC_STOP] = s->stop;
	for (unsigned kind = 0; kind < 256; kind++)
		if (!fn[kind])
			fn[kind] = s->record;
}

int walk(const char *path, const struct walk_sink *s, void *ctx)
{
	struct hs_record rec;
	struct hs_event ev[WALK_EVENTS_AT_ONCE];
	struct walk_end end = { 0 };
	record_fn fn[256];
	int rc;
	dispatch(s, fn);
	struct hs_reader *rd = reader_open(path);
	if (!rd)
		return -1;
	if (s->flags & WALK_PREFETCH)
		reader_prefetch(rd);
	if (s->header && s->header(ctx, reader_header(rd)))
		goto failed;
	for (;;) {
		if (s->events) {
			size_t n = reader_events(rd, ev, WALK_EVENTS_AT_ONCE);
			if (n) {
				if (s->events(ctx, ev, n))
					goto failed;
				continue;
			}
		}
		if ((rc = reader_next(rd, &rec)) <= 0)
			break;
		if ((s->flags & WALK_TIME_CHECK) &&
		    rec.time_ns > WALK_TIME_MAX) {
			hs_error("%s: corrupt trace: a time %.0f s after the "
				 "recording started", path, rec.time_ns / 1e9);
			goto out;
		}
		/* the latest time seen (defensive: reader times only grow) */
		if (rec.time_ns > end.time_ns) {
			end.time_ns = rec.time_ns;
			if (s->time && s->time(ctx, end.time_ns))
				goto failed;
		}
		record_fn f = fn[rec.kind & 0xff]; /* kinds are tag bytes */
		if (f && f(ctx, &rec))
			goto failed;
	}
	if (rc < 0) {
		end.error = 1;
		end.truncated = reader_truncated(rd);
	}
	end.chunks = reader_chunks(rd);
	end.bytes = reader_offset(rd);
	if (s->done && s->done(ctx, &end))
		goto failed;
	rc = end.error && !(end.truncated && (s->flags & WALK_CUT_OK)) ? -1
								       : 0;
	reader_destroy(rd);
	return rc;
failed:
	path_error(path);
out:
	reader_destroy(rd);
	return -1;
}
