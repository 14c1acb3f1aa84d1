/* Growth by operator (analyze --group-by-frame, --operators): every stack
 * the growth ranking has goes to the group its first matching frame
 * names (frame_match.h), innermost first; each group's live bytes at the
 * marks are the sum of its stacks', fitted like the live heap's, so the
 * rows, with the unmatched one, add up to the live heap's slope. */
#ifndef HS_GROUPS_H
#define HS_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

struct analysis;
struct frame_match;
struct replay_consumer;

/* The replay's consumer that keeps each stack's live bytes at the marks
 * where they change: the stacks' per-batch series, which their sums
 * (stacks.h) cannot give back.  Memory follows those changes: a stack
 * that allocates and frees within each batch has none. */
struct groups_log;
struct groups_log *groups_log_create(void);
void groups_log_destroy(struct groups_log *l);
extern const struct replay_consumer groups_log_consumer;

struct group_row {
	char *name;
	int unmatched; /* the stacks no frame of which matched */
	double bytes_per_batch, r2; /* of the group's summed series */
	uint64_t live_bytes_at_end; /* at the last batch mark */
	uint64_t leaked_bytes, leaked_blocks; /* live when the trace ends */
	uint64_t allocations;
	size_t stacks;
	struct stack_growth top; /* its fastest-growing stack, with frames */
};

struct groups {
	char *pattern;       /* frame_match_pattern */
	const char *preset;  /* static; NULL: a pattern */
	struct group_row *rows; /* by growth, the unmatched row last */
	size_t nrows;
	double rows_slope;   /* the rows' slopes added up */
	size_t matched_stacks, stacks; /* of all the stacks grouped */
};

/* The groups of a's stacks (ranked one by one, before any grouping by
 * site) by m, with log's series closed after a's batches; -1 (hs_error)
 * when out of memory. */
int groups_build(struct analysis *a, const struct frame_match *m,
		 struct groups_log *log, struct groups **out);
void groups_destroy(struct groups *g);

#endif
