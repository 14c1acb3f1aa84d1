/* The JSON report, schema "heapslope.report/1" (heapslope-report(5)).
 * json.c is the only file that knows cJSON. */
#ifndef HS_JSON_H
#define HS_JSON_H

#include <stddef.h>

struct analysis;

/* Writes the report to path, or to stdout for "-"; -1 with hs_error. */
int json_write(const struct analysis *a, const char *path);
/* Several reports side by side: schema "heapslope.comparison/1", the
 * reports in "reports". */
int json_write_many(struct analysis *const *a, size_t n, const char *path);

#endif
