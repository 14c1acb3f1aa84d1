/* heapslope dump: every record as one line, or the trace's counts. */
#include <argp.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyze/walk.h"
#include "analyze/writer_alive.h"
#include "commands.h"
#include "base/error.h"
#include "format/reader.h"
#include "format/records.h"
#include "report/words.h"

struct dump_opts {
	int stats;
	const char *path;
};

static const struct argp_option options[] = {
	{ "stats", 's', NULL, 0,
	  "Print counts as 'key: value' lines instead of the records", 0 },
	{ 0 }
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct dump_opts *o = state->input;
	switch (key) {
	case 's':
		o->stats = 1;
		break;
	default:
		return trace_arg(key, arg, state, &o->path);
	}
	return 0;
}

static const struct argp argp = {
	options, parse, "TRACE",
	"Print every record of TRACE as one line (time in seconds, thread, "
	"record, fields), or with --stats the trace's counts.",
	NULL, NULL, NULL
};

/* Counts by the rules of the JSON report (see heapslope-trace(5)). */
struct stats {
	uint64_t allocations, frees, reallocs, failed, marks, samples, stacks,
		threads, events, modules, mmaps, munmaps, allocated_bytes;
	int complete, has_end, has_exit, exiting;
	uint64_t exiting_ns; /* when the process began to exit */
	char stop_reason[512]; /* recording stopped early: why */
	unsigned end_reason;
	uint64_t end_signal; /* HS_EXT_SIGNAL: what the process died of */
	uint64_t end_counts[HS_COUNT_MAX];
	uint64_t wait_status, last_time;
};

static void count(struct stats *s, const struct hs_record *r)
{
	if (r->kind >= HS_REC_ALLOC) {
		s->events++;
		s->complete = 0;
	}
	switch (r->kind) {
	case HS_REC_ALLOC:
		if (r->fn == HS_FN_MMAP) {
			s->mmaps++;
		} else {
			s->allocations++;
			s->allocated_bytes += r->size;
		}
		break;
	case HS_REC_FREE: s->frees++; break;
	case HS_REC_REALLOC:
		if (r->fn == HS_FN_MREMAP) {
			s->mmaps++;
		} else {
			s->reallocs++;
			s->allocated_bytes += r->size;
		}
		break;
	case HS_REC_FAIL: s->failed++; break;
	case HS_REC_MUNMAP: s->munmaps++; break;
	case HS_REC_EXT:
		if (r->ext_type == HS_EXT_MAP || r->ext_type == HS_EXT_REMAP)
			s->mmaps++;
		else if (r->ext_type == HS_EXT_UNMAP)
			s->munmaps++;
		else if (r->ext_type == HS_EXT_EXITING && !s->exiting)
			s->exiting = 1, s->exiting_ns = r->time_ns;
		else if (r->ext_type == HS_EXT_SIGNAL)
			s->end_signal = r->signal;
		break;
	case HS_REC_MARK: s->marks++; break;
	case HS_REC_SAMPLE: s->samples++; break;
	case HS_REC_STACK: s->stacks++; break;
	case HS_REC_THREAD: s->threads++; break;
	case HS_REC_MODULE: s->modules++; break;
	case HS_REC_END:
		s->has_end = 1;
		s->complete = 1;
		s->end_reason = r->end_reason;
		memcpy(s->end_counts, r->counts, sizeof(s->end_counts));
		break;
	case HS_REC_EXIT:
		s->has_exit = 1;
		s->wait_status = r->wait_status;
		break;
	case HS_REC_STOP:
		snprintf(s->stop_reason, sizeof(s->stop_reason), "%.*s",
			 (int)(r->str_len < 500 ? r->str_len : 500), r->str);
		break;
	default:
		break;
	}
	if (r->time_ns > s->last_time)
		s->last_time = r->time_ns;
}

static void print_header(const struct hs_header *h)
{
	printf("# heapslope trace, format version %u, recorder %s\n",
	       h->version, h->recorder_version ? h->recorder_version : "?");
	printf("# pid %" PRIu64 " ppid %" PRIu64 " page_size %" PRIu64
	       " depth %" PRIu64 " interval_ms %" PRIu64 " options 0x%" PRIx64
	       "\n", h->pid, h->ppid, h->page_size, h->depth, h->interval_ms,
	       h->options);
	if (h->malloc_owner)
		printf("# malloc_owner %s (not recorded)\n", h->malloc_owner);
	if (h->pymalloc_set)
		printf("# pythonmalloc malloc (set by record)\n");
	if (h->has_before)
		printf("# before_start %" PRIu64 " allocations %" PRIu64
		       " bytes (not recorded)\n",
		       h->before_allocs, h->before_bytes);
	printf("# exe %s\n# unwind %s allocator %s heap_start 0x%" PRIx64
	       "\n# argv",
	       h->exe ? h->exe : "?", h->unwind ? h->unwind : "?",
	       h->allocator ? h->allocator : "?", h->heap_start);
	for (int i = 0; i < h->argc; i++) {
		putchar(' ');
		hs_print_str(stdout, h->argv[i], strlen(h->argv[i]));
	}
	putchar('\n');
}

static void print_record(const struct hs_record *r)
{
	printf("%.6f %" PRIu64 " ", r->time_ns / 1e9, r->tid);
	hs_rec_print(stdout, r);
	putchar('\n');
}

static void print_stats(const struct stats *s, const struct hs_header *h,
			const struct walk_end *e)
{
	printf("pid: %" PRIu64 "\n", h->pid);
	printf("program: %s\n", h->argc ? h->argv[0] : h->exe ? h->exe : "?");
	printf("allocator: %s\n", h->allocator ? h->allocator : "?");
	printf("allocations: %" PRIu64 "\n", s->allocations);
	printf("frees: %" PRIu64 "\n", s->frees);
	printf("reallocs: %" PRIu64 "\n", s->reallocs);
	printf("failed_allocations: %" PRIu64 "\n", s->failed);
	printf("allocated_bytes: %" PRIu64 "\n", s->allocated_bytes);
	printf("mmaps: %" PRIu64 "\n", s->mmaps);
	printf("munmaps: %" PRIu64 "\n", s->munmaps);
	printf("marks: %" PRIu64 "\n", s->marks);
	printf("samples: %" PRIu64 "\n", s->samples);
	printf("stacks: %" PRIu64 "\n", s->stacks);
	printf("threads: %" PRIu64 "\n", s->threads);
	printf("modules: %" PRIu64 "\n", s->modules);
	printf("events: %" PRIu64 "\n", s->events);
	printf("duration_s: %.3f\n", s->last_time / 1e9);
	if (s->exiting)
		printf("exiting_s: %.3f\n", s->exiting_ns / 1e9);
	printf("chunks: %" PRIu64 "\n", e->chunks);
	printf("bytes: %" PRIu64 "\n", e->bytes);
	printf("complete: %s\n", s->complete ? "yes" : "no");
	if (s->stop_reason[0])
		printf("stopped: %s\n", s->stop_reason);
	if (h->malloc_owner)
		printf("malloc_owner: %s\n", h->malloc_owner);
	if (h->has_before) {
		printf("allocations_before_start: %" PRIu64 "\n",
		       h->before_allocs);
		printf("bytes_before_start: %" PRIu64 "\n", h->before_bytes);
	}
	if (s->has_end && s->end_counts[HS_COUNT_UNRECORDED])
		printf("unrecorded: %" PRIu64 "\n",
		       s->end_counts[HS_COUNT_UNRECORDED]);
	if (s->has_end) {
		printf("end_reason: %s\n", hs_end_reason_name(s->end_reason));
		if (s->end_signal)
			printf("end_signal: %" PRIu64 "\n", s->end_signal);
		/* the recorder's own counts must agree with what we read */
		int agree = s->end_counts[HS_COUNT_EVENTS] == s->events &&
			    s->end_counts[HS_COUNT_ALLOCATIONS] ==
				    s->allocations &&
			    s->end_counts[HS_COUNT_FREES] == s->frees &&
			    s->end_counts[HS_COUNT_REALLOCS] == s->reallocs &&
			    s->end_counts[HS_COUNT_FAILED] == s->failed &&
			    s->end_counts[HS_COUNT_STACKS] == s->stacks &&
			    s->end_counts[HS_COUNT_MMAPS] == s->mmaps &&
			    s->end_counts[HS_COUNT_MUNMAPS] == s->munmaps;
		/* all it saw was recorded, and it did not stop early */
		agree = agree && !s->end_counts[HS_COUNT_UNRECORDED] &&
			!s->stop_reason[0] && !h->malloc_owner;
		printf("counts_verified: %s\n", agree ? "yes" : "no");
	}
	int v;
	enum words_exit how =
		s->has_exit ? words_exit(s->wait_status, &v) : WORDS_EXIT_OTHER;
	if (how == WORDS_EXIT_STATUS)
		printf("exit_status: %d\n", v);
	else if (how == WORDS_EXIT_SIGNAL)
		printf("exit_signal: %d\n", v);
}

/* The walk's callbacks: every record is counted, and printed unless
 * only the counts are asked for. */
struct dump {
	const struct dump_opts *o;
	const struct hs_header *h;
	struct stats s;
	/* the header's, after the walk */
	uint64_t pid, start_realtime_ns, start_monotonic_ns;
};

static int on_header(void *ctx, const struct hs_header *h)
{
	struct dump *d = ctx;
	d->h = h;
	d->pid = h->pid;
	d->start_realtime_ns = h->start_realtime_ns;
	d->start_monotonic_ns = h->start_monotonic_ns;
	if (!d->o->stats)
		print_header(h);
	return 0;
}

static int on_record(void *ctx, const struct hs_record *r)
{
	struct dump *d = ctx;
	count(&d->s, r);
	if (!d->o->stats)
		print_record(r);
	return 0;
}

static int on_done(void *ctx, const struct walk_end *e)
{
	struct dump *d = ctx;
	if (d->o->stats)
		print_stats(&d->s, d->h, e);
	return 0;
}

/* Strict: a trace cut inside a chunk is an error, which says where. */
static const struct walk_sink sink = {
	.header = on_header,
	.record = on_record,
	.done = on_done,
};

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o = { 0 };
	struct dump d = { .o = &o };
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	int rc = walk(o.path, &sink, &d);
	fflush(stdout);
	if (rc < 0) {
		fprintf(stderr, "heapslope dump: %s\n", hs_last_error());
	} else if (d.s.stop_reason[0]) {
		fprintf(stderr, "heapslope dump: %s: recording stopped early: "
				"%s\n", o.path, d.s.stop_reason);
	} else if (!d.s.complete &&
		   writer_alive_at(d.pid, d.start_realtime_ns,
				   d.start_monotonic_ns)) {
		fprintf(stderr, "heapslope dump: %s is incomplete: still being "
				"written by process %" PRIu64 "; read up to its "
				"last flush\n", o.path, d.pid);
	} else if (!d.s.complete) {
		fprintf(stderr, "heapslope dump: %s is incomplete: the process "
				"ended without closing it (killed?); read up to "
				"its last flush\n", o.path);
	}
	return rc < 0 ? 1 : 0;
}
