/* The libraries record preloads: the recorder, and with --allocator the
 * malloc that goes underneath it. */
#ifndef HS_LIBRARIES_H
#define HS_LIBRARIES_H

#include <stddef.h>

/* libheapslope.so: $HEAPSLOPE_LIB, next to the heapslope binary (build
 * tree), or the installed libdir; -1 (hs_error) if none. */
int recorder_find(char *out, size_t cap);

/* --allocator NAME|PATH (arg; NULL for glibc): *name for the trace header
 * and the library to preload in lib (empty for glibc), which must match
 * the recorder's machine.  Prints a one-line error and returns -1. */
int allocator_find(const char *arg, const char *recorder, char *lib,
		   size_t cap, const char **name);

#endif
