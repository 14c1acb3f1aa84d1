#include "walk.h"

#include <stdio.h>

#include "format/error.h"
#include "format/reader.h"

#define EVENTS_AT_ONCE 256 /* decoded per reader_events call */

/* Prefixes the last error with the trace's path (copied first: hs_error
 * cannot print its own message into itself). */
static int path_error(const char *path)
{
	char why[512];
	snprintf(why, sizeof(why), "%s", hs_last_error());
	return hs_error("%s: %s", path, why);
}

typedef int (*record_fn)(void *ctx, const struct hs_record *rec);

static record_fn callback(const struct walk_sink *s, unsigned kind)
{
	record_fn fn = NULL;
	if (kind >= HS_REC_ALLOC)
		fn = s->event;
	else if (kind == HS_REC_STACK)
		fn = s->stack;
	else if (kind == HS_REC_MODULE)
		fn = s->module;
	else if (kind == HS_REC_MARK)
		fn = s->mark;
	else if (kind == HS_REC_SAMPLE)
		fn = s->sample;
	else if (kind == HS_REC_END)
		fn = s->end;
	else if (kind == HS_REC_EXIT)
		fn = s->exit;
	else if (kind == HS_REC_STOP)
		fn = s->stop;
	return fn ? fn : s->record;
}

int walk(const char *path, const struct walk_sink *s, void *ctx)
{
	struct hs_record rec;
	struct hs_event ev[EVENTS_AT_ONCE];
	struct walk_end end = { 0 };
	int rc;
	struct hs_reader *rd = reader_open(path);
	if (!rd)
		return -1;
	if (s->flags & WALK_PREFETCH)
		reader_prefetch(rd);
	if (s->header && s->header(ctx, reader_header(rd)))
		goto failed;
	for (;;) {
		if (s->events) {
			size_t n = reader_events(rd, ev, EVENTS_AT_ONCE);
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
		record_fn fn = callback(s, rec.kind);
		if (fn && fn(ctx, &rec))
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
