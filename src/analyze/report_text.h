/* The terminal report, read top-down: summary, verdict with the numbers
 * that decided it, the per-batch series, the top growing stacks. */
#ifndef HS_REPORT_TEXT_H
#define HS_REPORT_TEXT_H

#include <stdio.h>

struct analysis;

/* utf8: sparklines and R² may use non-ASCII characters. */
int report_text(FILE *out, const struct analysis *a, int utf8);
/* Several traces' growth figures, one line each. */
int report_compare(FILE *out, struct analysis *const *v, size_t n);

#endif
