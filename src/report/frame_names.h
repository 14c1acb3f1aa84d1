/* How the text report shows a stack's frames: the allocator's and the
 * runtimes' own frames at the top of a stack left out, long C++ template
 * argument lists shortened (heapslope-analyze(1), --runtime-frames,
 * --full-names).  The JSON report shows every frame as resolved. */
#ifndef HS_FRAME_NAMES_H
#define HS_FRAME_NAMES_H

#include <stddef.h>

struct frame;

/* 1 if f is an allocator entry point or a runtime's allocation wrapper:
 * malloc and its family, operator new, the recorder's hooks, libstdc++'s
 * allocators and container growth internals, CPython's PyMem_ and
 * PyObject_ allocation functions. */
int frame_is_runtime(const struct frame *f);

/* How many of v[0, n) lead the stack as runtime frames; never all n (a
 * stack of runtime frames alone is shown whole). */
size_t frames_runtime_prefix(const struct frame *v, size_t n);

/* 1 if f is a native frame of code outside the system's libraries (/lib,
 * /usr/lib): the program's own executable or libraries, most likely. */
int frame_is_own(const struct frame *f);

/* name with each template argument list of more than
 * TEMPLATE_ARGS_SHOWN characters, outermost, replaced by an ellipsis
 * ("<…>", "<...>" without utf8), into buf of cap bytes; returns buf. */
#define TEMPLATE_ARGS_SHOWN 16
const char *name_shorten(const char *name, int utf8, char *buf, size_t cap);

#endif
