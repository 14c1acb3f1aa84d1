/* One analysis of one trace: walks it through the replay, then fits the
 * growth, ranks the stacks, decides the verdict and symbolizes the
 * stacks the reports show; it keeps every stack, so that any one's frames
 * can be had.  The report writers only read it. */
#ifndef HS_ANALYSIS_H
#define HS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "growth.h"
#include "maps.h"
#include "range.h"
#include "regions.h"
#include "regress.h"
#include "replay.h"
#include "series.h"
#include "stacks.h"
#include "verdict.h"

struct frame;
struct frame_match;
struct groups;
struct symbols;

/* The blocks of one stack that pin gaps of the heap (heapmap.h), at the
 * last batch end. */
#define PIN_NOT_FOUND UINT64_MAX      /* no block: an inconsistent trace */
#define PIN_UNPROBED (UINT64_MAX - 1) /* not looked up: too many gaps */
struct pin_group {
	uint64_t id;           /* stack id, or PIN_NOT_FOUND, PIN_UNPROBED */
	uint64_t pinned_bytes; /* whole free pages held below the blocks */
	uint64_t blocks, live_bytes;
	struct frame *frames;  /* the first `pins_shown` groups */
	size_t nframes;
};

enum batch_source { BATCHES_MARKER, BATCHES_TIME, BATCHES_AUTO };

struct analysis_opts {
	enum batch_source batches; /* AUTO: marks, else time windows */
	uint64_t window_ns;        /* BATCHES_TIME */
	long warmup;               /* < 0: automatic */
	size_t top;                /* stacks symbolized and reported */
	int group_by_site;
	int python_frames;         /* enum pyframes_mode */
	const char *debuginfo_path;
	struct range_bound from, until; /* --from, --until */
	/* --group-by-frame, --operators (groups.h); NULL: none */
	const struct frame_match *group_match;
};

/* The stretch analysed: the batches whose end lies in [from_ns, until_ns]
 * and, with batch marks, whose index (in the whole run's numbering) lies
 * in [from_batch, until_batch).  Everything before from and after until
 * is still replayed (the heap stays whole) but is in no batch. */
struct analysis_range {
	uint64_t from_ns, until_ns;       /* until RANGE_END: the end */
	uint64_t from_batch, until_batch; /* until UINT64_MAX: the last */
	int from_set, until_set;          /* given on the command line */
	int startup_cut, teardown_cut;    /* left out automatically */
	int teardown_exiting;             /* ... from the EXITING record */
	int has_exiting;
	uint64_t exiting_ns;              /* the process began to exit */
	char left_out[320];               /* one line: what was left out
					   * and how to keep it; "" if nothing */
};

struct analysis {
	/* the trace */
	char *path;
	unsigned format_version;
	uint64_t pid, ppid;
	uint64_t start_realtime_ns; /* ns since the epoch; 0: unknown */
	uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC then; 0: unknown */
	char **argv; /* NULL-terminated */
	int argc;
	char *exe;
	int has_exit;
	uint64_t wait_status;
	int complete;      /* END record seen */
	int truncated;     /* a partial last chunk was dropped */
	int writing;       /* incomplete because its process still runs
			    * (writer_alive.h): not killed */
	int has_end;
	unsigned end_reason;
	int end_signal; /* the signal the process died of (HS_EXT_SIGNAL) */
	char stopped[512];   /* recording stopped early: the recorder's reason */
	uint64_t unrecorded; /* calls the recorder saw but could not record */
	char *malloc_owner;  /* the program's malloc was its own: not seen */
	int has_before;      /* the header counts allocations made before
			      * recording started (not recorded): */
	uint64_t before_allocs, before_bytes;
	int pymalloc_replaced; /* record set PYTHONMALLOC=malloc (header) */
	int python;          /* the program runs CPython: its executable is
			      * python* or it maps a libpython */
	uint64_t events, duration_ns, batch_marks, label_marks, samples;
	uint64_t bad_stack_refs;
	/* batches */
	enum batch_source source; /* as used: MARKER, TIME, or AUTO (time
				   * windows because there were no marks) */
	uint64_t window_ns;
	size_t warmup;
	int warmup_auto;
	struct analysis_range range;
	char range_error[256]; /* a bad --from / --until: nothing analysed */
	struct replay_totals totals;
	struct series series;
	struct growth growth;
	struct verdict_why verdict;
	/* the heap's shape (heapmap.h) and the allocator */
	char *allocator;     /* from the trace header */
	uint64_t heap_start; /* of the brk heap; 0: unknown */
	int glibc;           /* regions, holes and pins follow glibc */
	/* pinning blocks by stack at the last batch end, ranked */
	struct pin_group *pins;
	size_t npins, pins_shown;
	uint64_t pinned_bytes; /* sum over pins */
	/* ranked stacks (sites with group_by_site); the first `shown` have
	 * frames */
	struct stack_growth *ranked;
	size_t nranked, shown;
	size_t paths_shown; /* with by_site: paths per site that have frames */
	int by_site;
	size_t distinct_stacks;
	/* the other traces of its recording (recording.h), given by the
	 * caller: recording[0] is this trace; recording_main indexes the
	 * main one; freed with the analysis */
	struct recording_trace *recording;
	size_t nrecording, recording_main;
	/* memory the program mapped itself (maps.h): the trace has it when
	 * it was recorded with HS_OPT_MAPS */
	int has_maps;
	struct maps_state maps_end; /* when the trace ends: mapped at exit */
	/* mapping stacks ranked like the heap's (leaked_*: still mapped
	 * when the trace ends); the first maps_shown have frames, and the
	 * kind and file of their latest mapping */
	struct stack_growth *map_ranked;
	size_t nmap_ranked, maps_shown;
	struct map_stack {
		unsigned kind; /* enum hs_map_kind */
		char *path;    /* NULL: none */
	} *map_info;
	/* growth by region (regions.h): no rows without region records */
	struct region_report regions;
	struct stacks *stacks;   /* every stack: see analysis_frames */
	struct symbols *symbols; /* owns the frames' module names */
	struct pyframes *py;     /* the Python frames, NULL with
				  * --python-frames=native */
	int python_frames;       /* enum pyframes_mode */
	/* per stack node id: the symbols' clock when it was read, to resolve
	 * its address against the module mapped then (dlclose) */
	uint64_t *node_when;
	size_t nnode_when;
	struct groups *groups; /* with opts' group_match, else NULL */
};

/* NULL with hs_last_error() when the trace cannot be read or is corrupt;
 * a truncated last chunk or a missing END is not an error. */
struct analysis *analysis_create(const char *path,
				 const struct analysis_opts *o);
void analysis_destroy(struct analysis *a);

/* The frames of any stack of the trace, innermost first, into a new
 * array *frames of *n (symbols_frames_free; also after a failure, -1
 * when out of memory). */
int analysis_frames(const struct analysis *a, uint64_t id,
		    struct frame **frames, size_t *n);

/* Reads the other traces of a's recording, those named a's path.PID or
 * .PID.N (recording.h), into a->recording, a's own first, for the
 * reports to say which is which; siblings that cannot be read are left
 * out.  -1 only when out of memory. */
int analysis_add_recording(struct analysis *a);

/* What both report writers show, said once. */
/* The last batch; NULL without batches. */
const struct batch *analysis_last_batch(const struct analysis *a);
/* Modules whose file changed since the recording: how many, and the
 * first one's path (symbols_stale). */
size_t analysis_stale_modules(const struct analysis *a, const char **first);
/* Whether the verdict makes the pinning blocks worth showing. */
int analysis_pinning_matters(const struct analysis *a);

/* Parses "marker", "time:DURATION" (ns, us, ms, s, m, h; default s). */
int analysis_parse_batches(const char *arg, struct analysis_opts *o);

#endif
