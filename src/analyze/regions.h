/* Regions (heapslope_region_begin/end): each thread's open regions, from
 * its region records; every block allocated is tagged with the path of
 * regions open on its thread (nothing in the event records says it).
 * Per region path and per region name (the innermost one), the bytes
 * allocated in each batch and live at each batch end, their growth, what
 * is leaked at the end and the stacks that grow inside.  "(outside any
 * region)" is one more row, the rest of the heap, so that the rows add up
 * to the live heap's series and slope.
 *
 * A block keeps the region it was allocated in until it is freed; a
 * realloc's new block belongs, like its stack, to the region open at the
 * realloc. */
#ifndef HS_REGIONS_H
#define HS_REGIONS_H

#include <stddef.h>
#include <stdint.h>

struct hs_record;
struct replay;
struct replay_totals;
struct series;
struct stack_growth;
struct stacks;

#define REGIONS_OUTSIDE "(outside any region)"
/* Paths deeper than this, or past this many distinct paths, are folded
 * into their parent (counted) */
#define REGIONS_DEPTH_MAX 32
#define REGIONS_PATHS_MAX 1024
/* Stacks kept per row, at most */
#define REGIONS_STACKS_MAX 5

struct region_row {
	char *name;     /* the innermost region's name, or REGIONS_OUTSIDE */
	char **path;    /* by path: the names, outermost first; NULL by name */
	size_t depth;   /* names in path; 0 outside */
	int outside;
	uint32_t id;    /* the path's, or the name's, in the analysis */
	double bytes_per_batch, r2; /* live bytes at the batch ends */
	double allocated_per_batch; /* mean over the batches fitted */
	uint64_t allocated_bytes, allocations; /* the whole trace */
	uint64_t live_bytes_at_end; /* at the last batch end */
	uint64_t leaked_bytes, leaked_blocks; /* when the trace ends */
	uint64_t *live, *allocated; /* per batch: at its end, within it */
	struct stack_growth *stacks; /* growing inside, ranked; none outside */
	size_t nstacks;
};

struct region_report {
	struct region_row *names, *paths; /* ranked by bytes_per_batch */
	size_t nnames, npaths;            /* 0: the trace has no regions */
	size_t batches;
	uint64_t unmatched_ends; /* ends with no region open: ignored */
	uint64_t open_at_end;    /* regions still open when the trace ends
				  * (or when another thread took the id of
				  * the thread that had them open) */
	uint64_t folded;         /* begins folded into their parent */
};

struct regions;

/* Follows r's blocks (whose stacks are s's) once the trace shows a
 * region record; NULL (hs_error) when out of memory. */
struct regions *regions_create(struct replay *r, struct stacks *s);
void regions_destroy(struct regions *g);
/* A record of the walk: new threads, switches of thread and the region
 * records, the others ignored; -1 (hs_error) out of memory. */
int regions_record(struct regions *g, const struct hs_record *rec);
/* The current batch's counts start again here (replay_batch_skip). */
void regions_batch_skip(struct regions *g);
/* The rows, after the walk: s is the analysis' series, t the replay's
 * totals, the fits over batches [warmup, s->n); up to top stacks per
 * row.  Nothing (0 rows) without region records; -1 out of memory. */
int regions_report(struct regions *g, const struct series *s,
		   const struct replay_totals *t, size_t warmup, size_t top,
		   struct region_report *out);
void regions_report_finish(struct region_report *r);

#endif
