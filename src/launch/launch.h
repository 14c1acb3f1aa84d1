/* heapslope record's work, below its option parser: run a command with
 * the recorder preloaded, pass the terminal's signals on, wait for it and
 * list the traces its processes wrote. */
#ifndef HS_LAUNCH_H
#define HS_LAUNCH_H

#include "contract.h"

struct launch_opts {
	const char *output;  /* FILE or template (%p, %e); NULL: the default */
	int force;           /* replace FILE */
	long interval_ms;
	long depth;
	long mallinfo;       /* enum hs_mallinfo */
	int no_follow;
	int mmap;
	int python;          /* Python frames in the stacks */
	int keep_pymalloc;   /* leave PYTHONMALLOC alone */
	const char *unwind;  /* NULL: the recorder's default */
	const char *allocator; /* --allocator NAME|PATH, NULL: glibc */
	int quiet;           /* -q: no list of traces at the end */
	long list_max;       /* --list: at most this many lines; 0: all */
	char **cmd;
};

/* lines of traces listed at the end, unless told */
#define LAUNCH_LIST_DEFAULT 20

#define LAUNCH_OPTS_DEFAULT                                                  \
	{                                                                    \
		.interval_ms = HS_INTERVAL_DEFAULT,                          \
		.depth = HS_DEPTH_DEFAULT,                                   \
		.mallinfo = HS_MALLINFO_DEFAULT,                             \
		.mmap = HS_MMAP_DEFAULT,                                     \
		.python = HS_PYTHON_DEFAULT,                                 \
		.list_max = LAUNCH_LIST_DEFAULT,                             \
	}

/* Runs o->cmd under the recorder.  Returns record's exit status: the
 * command's (128+N if signal N killed it), 127 if it could not run, 1 or
 * 2 (a bad --allocator) if record failed before, with a message on
 * stderr. */
int launch_record(const struct launch_opts *o);

#endif
