/* What a trace is, in a few numbers: whose it is and how much it holds,
 * read from its header and its last chunks (the END record's counters),
 * without decoding the records in between. */
#ifndef HS_SUMMARY_H
#define HS_SUMMARY_H

#include <stdint.h>

struct hs_summary {
	uint64_t pid, ppid, options, start_monotonic_ns;
	char *command;   /* argv[0]'s base name and the arguments, or exe */
	char *malloc_owner; /* the header's, NULL if none */
	uint64_t bytes;  /* the file's size */
	int complete;    /* an END record closes it */
	unsigned end_reason; /* HS_END_*, if complete */
	int counted;     /* events and marks are known: from the END record,
			  * or counted when a trace without one was read */
	int partial;     /* ... counted in its first bytes only: at least */
	uint64_t events, marks;
	int has_exit;    /* record appended the wait status */
	uint64_t wait_status;
};

/* Reads path's summary into s.  A trace without END is read from the
 * start to count its events and marks, up to count_bytes of it (0: not
 * at all, they stay unknown; past that, partial).  -1 (hs_error) if it is
 * not a readable trace; s is then empty and may be finished. */
int summary_read(const char *path, uint64_t count_bytes,
		 struct hs_summary *s);
void summary_finish(struct hs_summary *s);

#endif
