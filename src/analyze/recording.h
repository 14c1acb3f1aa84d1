/* The traces of one recording: `heapslope record -o FILE` writes the first
 * process's trace to FILE and the others' to FILE.PID (FILE.PID.N when
 * taken): which is which, and the main one, the one with batch marks,
 * else the one with the most events (heapslope-analyze(1)). */
#ifndef HS_RECORDING_H
#define HS_RECORDING_H

#include <stddef.h>
#include <stdint.h>

struct recording_trace {
	char *path;
	char *program; /* the executable's name and arguments, short */
	uint64_t pid, ppid, events, marks;
	int complete;
};

/* The traces named base.PID or base.PID.N next to base, in *paths (n of
 * them, sorted by name as numbers; free with recording_paths_free);
 * *n is 0 when there are none.  -1 only when out of memory. */
int recording_siblings(const char *base, char ***paths, size_t *n);
void recording_paths_free(char **paths, size_t n);

/* Reads path's header and counts its events and batch marks (no replay):
 * 0, or -1 with hs_last_error() when it cannot be read at all (a trace
 * cut short is read up to its cut). */
int recording_scan(const char *path, struct recording_trace *t);
void recording_trace_finish(struct recording_trace *t);

/* "exe arg arg ..." in buf, the executable by its last component, cut
 * at cap bytes with "...". */
const char *recording_program(const char *exe, char *const *argv, int argc,
			      char *buf, size_t cap);

/* The index of the main trace of n, by their events and batch marks:
 * the most events among those with marks, else the most events; n when
 * n is 0. */
size_t recording_main(const uint64_t *events, const uint64_t *marks,
		      size_t n);

#endif
