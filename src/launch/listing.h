/* The end of a recording: the exit status goes into the trace of the
 * process record started, and one line per trace says what each is and
 * which one is the main one. */
#ifndef HS_LISTING_H
#define HS_LISTING_H

#include "paths.h"

struct listing_opts {
	int quiet;   /* list nothing (warnings are still said) */
	long max;    /* list at most this many traces; 0: all */
};

/* traces: every trace of the run; root_pid: the process record started
 * (its last recorded image gets the exit status, whichever name -o gave
 * it), root: the first image's trace if record named it (where the
 * status goes if no trace says it is root_pid's). */
void listing_finish(const struct paths *traces, long root_pid,
		    const char *root, int wait_status,
		    const struct listing_opts *o);

#endif
