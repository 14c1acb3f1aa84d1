/* The writers of report.c's table, one file each. */
#ifndef HS_WRITERS_H
#define HS_WRITERS_H

#include "report.h"

/* text.c: the terminal report, read top-down. */
int text_write(FILE *out, const struct analysis *a,
	       const struct report_opts *o);
/* text.c: one stack's line (after lead) and its frames (each after
 * indent), as the report's top stacks show them. */
struct stack_growth;
void text_stack(FILE *out, const struct stack_growth *g, const char *lead,
		const char *indent, const struct report_opts *o);
/* text_regions.c: the section "Growth by region", when the trace has
 * regions. */
void text_regions(FILE *out, const struct analysis *a,
		  const struct report_opts *o);
/* text.c's frames of a stack, as its stacks show them. */
struct frame;
void text_frames(FILE *out, const struct frame *v, size_t n,
		 const char *indent, const struct report_opts *o);
/* text_groups.c: growth by operator (analyze --group-by-frame). */
void text_groups(FILE *out, const struct analysis *a,
		 const struct report_opts *o);
/* compare.c: several traces' growth figures, one line each. */
int compare_write(FILE *out, struct analysis *const *v, size_t n,
		  const struct report_opts *o);
/* 1 if the traces of v[0, n) are of one recording: a process and its
 * parent, or one process before and after an exec. */
int compare_one_recording(struct analysis *const *v, size_t n);
/* json.c: schema "heapslope.report/1" (heapslope-report(5)), and several
 * reports side by side, schema "heapslope.comparison/1". */
int json_write(FILE *out, const struct analysis *a,
	       const struct report_opts *o);
int json_write_many(FILE *out, struct analysis *const *v, size_t n,
		    const struct report_opts *o);

#endif
