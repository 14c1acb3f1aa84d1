/* The environment contract between `heapslope record` and the recorder it
 * preloads: every variable the one sets and the other reads, with its
 * default and limits, and the names of traces.  The recorder includes this
 * too (and links contract.c): nothing here may call malloc, and the
 * functions are safe in a signal handler and in a forked child. */
#ifndef HS_CONTRACT_H
#define HS_CONTRACT_H

#include <stddef.h>

/* Set by record from its options; unset or out of range, the recorder
 * takes the default. */
#define HS_ENV_INTERVAL "HEAPSLOPE_INTERVAL" /* RSS sample period, ms;
					      * 0: at marks only */
#define HS_INTERVAL_DEFAULT 100
#define HS_INTERVAL_MAX 3600000
#define HS_ENV_DEPTH "HEAPSLOPE_DEPTH" /* frames per call stack */
#define HS_DEPTH_DEFAULT 128
#define HS_DEPTH_MIN 1
#define HS_DEPTH_MAX 256
#define HS_ENV_FOLLOW "HEAPSLOPE_FOLLOW" /* 1: record forked children and
					  * exec'd images; 0: not */
#define HS_FOLLOW_DEFAULT 1
#define HS_ENV_MMAP "HEAPSLOPE_MMAP" /* 1: record every mapping the program
				      * makes (mmap, mremap, munmap, shmat,
				      * shmdt); 0: none */
#define HS_MMAP_DEFAULT 1
#define HS_ENV_PYTHON "HEAPSLOPE_PYTHON" /* 1: Python frames in the stacks
					  * of a CPython process; 0: not */
#define HS_PYTHON_DEFAULT 1
/* "1": record set PYTHONMALLOC=malloc for the program (it was unset), for
 * the trace header; believed only while PYTHONMALLOC is still "malloc" */
#define HS_ENV_PYMALLOC "HEAPSLOPE_PYMALLOC"
#define HS_ENV_MALLINFO "HEAPSLOPE_MALLINFO" /* when marks read mallinfo2 */
enum hs_mallinfo { HS_MALLINFO_NEVER, HS_MALLINFO_AUTO, HS_MALLINFO_ALWAYS };
#define HS_MALLINFO_DEFAULT HS_MALLINFO_AUTO
/* tests only: ms the writer waits, its lock given away, each time it finds
 * a buffer handed over (a writer the scheduler holds up; 0: none) */
#define HS_ENV_TEST_WRITER_STALL "HEAPSLOPE_TEST_WRITER_STALL"
/* tests only: "1": each capture of Python frames also reads them all anew,
 * and recording stops if the two differ (the shortcuts of python.c) */
#define HS_ENV_TEST_PY_VERIFY "HEAPSLOPE_TEST_PY_VERIFY"
#define HS_ENV_UNWIND "HEAPSLOPE_UNWIND" /* unwinder; unset: the default */
#define HS_UNWIND_FAST "fast"
#define HS_UNWIND_LIBUNWIND "libunwind"
/* The name of the malloc underneath the recorder, for the trace header.
 * Any other than glibc's has no mallinfo2 and C++ operators of its own. */
#define HS_ENV_ALLOCATOR "HEAPSLOPE_ALLOCATOR"
#define HS_ALLOCATOR_GLIBC "glibc" /* also when unset or empty */

/* Where traces go: a template of absolute paths in which %p is the pid,
 * %e the program's name and %% a percent sign; unset, HS_TRACE_TEMPLATE
 * in the current directory. */
#define HS_ENV_OUTPUT "HEAPSLOPE_OUTPUT"
#define HS_TRACE_TEMPLATE "heapslope.%e.%p.hst"
/* A name that is taken is tried again as NAME.1, NAME.2 ... this often. */
#define HS_TRACE_TRIES 1000

/* How record learns about the traces: the name of a listening unix socket
 * in the abstract namespace; each recorder connects once and writes its
 * trace's path and a newline. */
#define HS_ENV_REPORT "HEAPSLOPE_REPORT"
/* The pid of the process record started; HS_ENV_EXECED, set by the
 * recorder for an image it lets exec, the pid that exec'd it: together
 * they tell record's first image from the others (--no-follow). */
#define HS_ENV_ROOT "HEAPSLOPE_ROOT"
#define HS_ENV_EXECED "HEAPSLOPE_EXECED"
/* The first image's trace, opened by record: "FD:PID:DEV:INO", the
 * descriptor, the process it is for and the file's identity, all
 * decimal; and the trace's path. */
#define HS_ENV_FD "HEAPSLOPE_FD"
#define HS_ENV_FD_PATH "HEAPSLOPE_FD_PATH"

/* record's own: the recorder library to preload, if not the one found
 * next to the heapslope binary or installed. */
#define HS_ENV_LIB "HEAPSLOPE_LIB"

/* tmpl with %p, %e and %% expanded (pid, prog) into out; -1 if it does
 * not fit in cap. */
int trace_name_expand(const char *tmpl, const char *prog, long pid,
		      char *out, size_t cap);
/* Try number i of the trace name base: base itself for 0, else base.i,
 * into out (not base); -1 if it does not fit in cap. */
int trace_name_try(const char *base, int i, char *out, size_t cap);

#endif
