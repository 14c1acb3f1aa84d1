/* One pass over a trace: the reader's records handed to a sink, a table
 * of callbacks (perf's struct perf_tool is the model).  analyze, dump
 * and the fuzzer all read traces through walk(). */
#ifndef HS_WALK_H
#define HS_WALK_H

#include <stddef.h>
#include <stdint.h>

struct hs_event;
struct hs_header;
struct hs_record;

/* Times are ns since the recording started: one past 2^62 ns (146 years)
 * comes from a corrupt trace. */
#define WALK_TIME_MAX (1ull << 62)
#define WALK_EVENTS_AT_ONCE 256 /* decoded per reader_events call: at most
				 * this many per events() */

enum walk_flags {
	WALK_PREFETCH = 1 << 0,   /* decode chunks ahead on a thread */
	WALK_TIME_CHECK = 1 << 1, /* a time past WALK_TIME_MAX is corrupt */
	WALK_CUT_OK = 1 << 2,     /* a file that ends inside a chunk ends at
				   * its last whole chunk, not in an error */
};

/* How the records ended, for the sink's end callback. */
struct walk_end {
	uint64_t time_ns; /* the latest time seen */
	int error;        /* the reader failed (walk returns -1) */
	int truncated;    /* ... because the file ends inside a chunk */
	uint64_t chunks;  /* complete chunks read */
	uint64_t bytes;   /* offset just past the last complete chunk */
};

/* Every callback may be NULL and returns 0, or -1 with hs_error to stop
 * the walk (walk prefixes the message with the trace's path).  A record
 * goes to the callback of its kind, or to `record` when the sink has
 * none for that kind. */
struct walk_sink {
	unsigned flags; /* enum walk_flags */
	/* Before any record; h lives until the walk ends. */
	int (*header)(void *ctx, const struct hs_header *h);
	/* Runs of heap events, the bulk of a trace, decoded by reader_events
	 * with no time of their own.  NULL: every event is a record. */
	int (*events)(void *ctx, const struct hs_event *ev, size_t n);
	/* The latest time grew to now_ns, before the record that brings it. */
	int (*time)(void *ctx, uint64_t now_ns);
	/* One record of a kind: a heap event (kind >= HS_REC_ALLOC), a stack
	 * node, a module, a mark, a sample, the end, the exit status, the
	 * recorder's stop. */
	int (*event)(void *ctx, const struct hs_record *rec);
	int (*stack)(void *ctx, const struct hs_record *rec);
	int (*module)(void *ctx, const struct hs_record *rec);
	int (*mark)(void *ctx, const struct hs_record *rec);
	int (*sample)(void *ctx, const struct hs_record *rec);
	int (*end)(void *ctx, const struct hs_record *rec);
	int (*exit)(void *ctx, const struct hs_record *rec);
	int (*stop)(void *ctx, const struct hs_record *rec);
	/* Any record whose kind has no callback above (dump: every one). */
	int (*record)(void *ctx, const struct hs_record *rec);
	/* After the last record, also when the reader failed; not after a
	 * callback failed. */
	int (*done)(void *ctx, const struct walk_end *e);
};

/* Reads the trace at path into sink s with context ctx: 0 at its end,
 * -1 with hs_last_error() when it cannot be opened, the reader fails (a
 * cut one too, unless WALK_CUT_OK) or a callback stops it. */
int walk(const char *path, const struct walk_sink *s, void *ctx);

#endif
