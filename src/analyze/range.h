/* The stretch of a trace that is analysed: --from / --until (seconds from
 * the start of recording, or batch:N), and, with time windows and no
 * marks, the automatic cut of the start-up and of the teardown. */
#ifndef HS_RANGE_H
#define HS_RANGE_H

#include <stddef.h>
#include <stdint.h>

struct batch;

#define RANGE_END UINT64_MAX

/* One bound as given on the command line. */
struct range_bound {
	int set;      /* given */
	int is_batch; /* batch:N, else seconds */
	int end;      /* --until end: the end of the trace */
	uint64_t ns;  /* seconds, in ns */
	uint64_t batch;
};

/* Parses "SECONDS" (fractional allowed), "batch:N", and for --until
 * "end"; -1 (hs_error naming `opt`) on a negative or garbage value. */
int range_parse(const char *arg, const char *opt, struct range_bound *b);

/* The automatic cut, on time windows v[0, n) of a run without marks.
 *
 * Start-up: the windows before the first allocation-steady stretch.  The
 * steady level is the median, over the second half of the windows, of
 * the live heap's change per window |dL| and of the allocations per
 * window A.  A window is unsettled when |dL| > 4 x that median + 256 KiB
 * or A > 4 x that median + 1024, and beyond the largest |dL| or A of the
 * second half (bursts the whole run has are not start-up); its |dL| is
 * taken from two windows before to the next one when that is smaller (a
 * spike made and undone, as a garbage collection does, is no change of
 * level, in the window that makes it or the one that undoes it).  The
 * start-up ends after the last unsettled window of the first half;
 * returns how many windows it spans (0: none).  Fewer than
 * RANGE_MIN_WINDOWS windows: 0. */
#define RANGE_MIN_WINDOWS 6
size_t range_startup_windows(const struct batch *v, size_t n);

/* Teardown seen in the series: the live heap falls for good from its
 * last highest point of the second half, p, when p lies in the last
 * quarter and the last window ends more than 4 x the median |dL| +
 * 256 KiB below it; returns p + 1, the first window of the fall, or n
 * when there is none. */
size_t range_teardown_window(const struct batch *v, size_t n);

#endif
