/* The JSON report, schema "heapslope.report/1" (heapslope-report(5)).
 * json.c is the only file that knows cJSON. */
#ifndef HS_JSON_H
#define HS_JSON_H

struct analysis;

/* Writes the report to path, or to stdout for "-"; -1 with hs_error. */
int json_write(const struct analysis *a, const char *path);

#endif
