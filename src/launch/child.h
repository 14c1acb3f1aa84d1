/* The process record forks: its environment (the contract with the
 * recorder), its trace, then exec; and what it tells record meanwhile. */
#ifndef HS_CHILD_H
#define HS_CHILD_H

#include <limits.h>

#include "launch.h"

struct child {
	const struct launch_opts *opts;
	const char *recorder;   /* libheapslope.so */
	const char *alloc_name; /* for the trace header */
	const char *alloc_lib;  /* preloaded under the recorder; "" for glibc */
	int unloadable;         /* the recorder cannot load into the command */
	const char *report;     /* the report socket's name */
};

/* What the child tells the parent, on a close-on-exec pipe: where its
 * trace is, or why it could not run the command. */
struct child_msg {
	int stage; /* STAGE_* */
	int err;
	char path[PATH_MAX];
};
enum { STAGE_PATH, STAGE_CREATE, STAGE_EXEC };

/* In the forked child: environment, trace file, exec; never returns.
 * root_fd is the open root trace (at root_path), -2 to create root_path
 * here, -1 for a template.  Messages go to msg_fd. */
__attribute__((noreturn)) void child_run(const struct child *c,
					 char *root_path, int root_fd,
					 int msg_fd);

/* In the parent: reads one message; 0 at end of file (the child
 * exec'd), -1 if cut short. */
int child_read(int fd, struct child_msg *m);

#endif
