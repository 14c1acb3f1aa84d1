/* Appending to a finished trace: `record` adds the exit status. */
#ifndef HS_APPEND_H
#define HS_APPEND_H

/* Appends an exit record if the trace ends on a whole chunk (a process
 * killed mid-write leaves a partial one, which must stay last). */
int trace_append_exit(const char *path, int wait_status);

#endif
