/* The traces of a run: the first one, which record creates, the others,
 * which the recorders report on a socket. */
#ifndef HS_TRACES_H
#define HS_TRACES_H

#include <stddef.h>

#include "paths.h"

enum { TRACE_NOT_REGULAR = -2 };

/* Creates the trace at path; returns its descriptor, or -1 (errno), or
 * TRACE_NOT_REGULAR.  force replaces a regular file or a symlink (the
 * link itself, never what it points to), never anything else: as root,
 * -f -o /dev/null must not delete /dev/null.  numbered: if the name is
 * taken, the next free of path.1, path.2 ... (as the recorder does for
 * the processes below), written back into path. */
int trace_create(char *path, size_t cap, int force, int numbered);

/* The channel the recorders report their traces on (contract.h): a
 * listening socket, close-on-exec, whose name goes into name; -1 on
 * failure (errno). */
int reports_open(char *name, size_t cap);
/* Adds the traces reported so far to out. */
void reports_drain(int fd, struct paths *out);

/* After the run, the first process's trace: one the recorder never wrote
 * to (it did not load), or that holds no event because the program's
 * malloc was its own, is removed, with one line that says why, unless
 * that was said before the run (warned); -1 then. */
int trace_check(const char *path, const char *prog, int warned);

#endif
