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
struct stack_series;

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
 * site) by m, their series from the stacks' (closed here after a's
 * batches); -1 (hs_error) when out of memory. */
int groups_build(struct analysis *a, const struct frame_match *m,
		 struct stack_series *series, struct groups **out);
void groups_destroy(struct groups *g);

#endif
