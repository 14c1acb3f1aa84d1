/* One place for the last error message of the library code: functions
 * report where the failure is known and return -1 (or NULL). */
#ifndef HS_ERROR_H
#define HS_ERROR_H

__attribute__((format(printf, 1, 2))) int hs_error(const char *fmt, ...);
const char *hs_last_error(void);

#endif
