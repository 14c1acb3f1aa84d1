/* The report writers, chosen by name (heapslope analyze --format): each
 * format writes one analysis, or several side by side.  A new format is
 * one file and one row of the table in report.c. */
#ifndef HS_REPORT_H
#define HS_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct analysis;

struct report_opts {
	int utf8;         /* the text may use non-ASCII characters */
	const char *dest; /* where the output goes, for messages: set by
			   * report_write */
	/* the text report's frames (heapslope-analyze(1)) */
	long frames;        /* per stack: 0 the default (12), < 0 all */
	int runtime_frames; /* show the allocator's and runtimes' frames at
			     * the top of stacks */
	int full_names;     /* C++ template arguments unshortened */
};

struct report_format {
	const char *name;
	/* Each returns 0, or -1 with hs_error (a write failed, or out of
	 * memory). */
	int (*one)(FILE *out, const struct analysis *a,
		   const struct report_opts *o);
	int (*many)(FILE *out, struct analysis *const *v, size_t n,
		    const struct report_opts *o);
};

/* Every format: the table, of *n rows. */
const struct report_format *report_formats(size_t *n);
/* The format called name, or NULL. */
const struct report_format *report_format(const char *name);
/* The names of the formats, for messages: "text, json". */
const char *report_format_names(void);

/* Which trace of a recording is which (recording.h): program, pid,
 * parent, events, marks, and the main one (main_i); 0, or -1. */
struct recording_trace;
int recording_write(FILE *out, const struct recording_trace *v, size_t n,
		    size_t main_i);

/* Writes v[0, n) in format f to path ("-": stdout); -1 with hs_error. */
int report_write(const struct report_format *f, struct analysis *const *v,
		 size_t n, const char *path, const struct report_opts *o);

#endif
