/* heapslope record: its options; the work is in src/launch. */
#include <argp.h>
#include <limits.h>
#include <string.h>

#include "commands.h"
#include "launch/launch.h"

#define STR(x) STR_(x)
#define STR_(x) #x

enum { OPT_INTERVAL = 1000, OPT_DEPTH, OPT_NO_FOLLOW, OPT_MMAP, OPT_NO_MMAP,
       OPT_KEEP_PY,
	OPT_NO_PYTHON, OPT_UNWIND, OPT_ALLOCATOR, OPT_MALLINFO, OPT_LIST };

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0,
	  "Write the trace to FILE (default heapslope.PROGRAM.PID.hst); "
	  "%p and %e in FILE expand to the pid and program name", 0 },
	{ "force", 'f', NULL, 0, "Replace FILE if it exists", 0 },
	{ "quiet", 'q', NULL, 0,
	  "Do not list the traces at the end (warnings are still printed)",
	  0 },
	{ "list", OPT_LIST, "N|all", 0,
	  "At the end, list at most N traces (default "
	  STR(LAUNCH_LIST_DEFAULT) "): the main one and the largest; "
	  "all: every one", 0 },
	{ "interval", OPT_INTERVAL, "MS", 0,
	  "Sample RSS every MS milliseconds (default " STR(HS_INTERVAL_DEFAULT)
	  ", 0: only at marks; "
	  "marks also sample the allocator's state)", 0 },
	{ "depth", OPT_DEPTH, "N", 0,
	  "Record at most N frames per call stack (default "
	  STR(HS_DEPTH_DEFAULT) ", at most " STR(HS_DEPTH_MAX) ")", 0 },
	{ "no-follow", OPT_NO_FOLLOW, NULL, 0,
	  "Do not record forked or exec'd child processes", 0 },
	{ "no-mmap", OPT_NO_MMAP, NULL, 0,
	  "Do not record the program's own mappings (mmap, mremap, munmap, "
	  "shmat, shmdt: recorded by default, anonymous and file-backed, "
	  "private and shared)", 0 },
	{ "mmap", OPT_MMAP, NULL, OPTION_HIDDEN,
	  "Record the program's mappings (the default)", 0 },
	{ "no-python", OPT_NO_PYTHON, NULL, 0,
	  "Do not read the Python frames of a CPython program: its stacks "
	  "are native only", 0 },
	{ "keep-pymalloc", OPT_KEEP_PY, NULL, 0,
	  "Do not set PYTHONMALLOC=malloc for Python programs", 0 },
	{ "unwind", OPT_UNWIND, "METHOD", 0,
	  "Stack unwinder: fast (the default: own DWARF unwinder with a cache, "
	  "falling back to libunwind) or libunwind", 0 },
	{ "allocator", OPT_ALLOCATOR, "NAME|PATH", 0,
	  "Run COMMAND on another malloc, underneath the recorder: glibc (the "
	  "default), jemalloc, tcmalloc, mimalloc, or the path of a shared "
	  "library", 0 },
	{ "mallinfo", OPT_MALLINFO, "WHEN", 0,
	  "When marks read glibc's mallinfo2: auto (the default: at every "
	  "mark while that costs at most 2% of the run, else at evenly "
	  "spaced marks), always, or never", 0 },
	{ 0 }
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct launch_opts *o = state->input;
	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case 'f':
		o->force = 1;
		break;
	case 'q':
		o->quiet = 1;
		break;
	case OPT_LIST:
		if (!strcmp(arg, "all"))
			o->list_max = 0;
		else if (parse_long(arg, 1, LONG_MAX, &o->list_max))
			argp_error(state, "--list takes a number of traces "
					  "(at least 1) or all, not '%s'", arg);
		break;
	case OPT_INTERVAL:
		if (parse_long(arg, 0, HS_INTERVAL_MAX, &o->interval_ms))
			argp_error(state, "--interval takes milliseconds from "
					  "0 to %d, not '%s'", HS_INTERVAL_MAX,
				   arg);
		break;
	case OPT_DEPTH:
		if (parse_long(arg, HS_DEPTH_MIN, HS_DEPTH_MAX, &o->depth))
			argp_error(state, "--depth takes a number from %d to "
					  "%d, not '%s'", HS_DEPTH_MIN,
				   HS_DEPTH_MAX, arg);
		break;
	case OPT_NO_FOLLOW:
		o->no_follow = 1;
		break;
	case OPT_MMAP:
		o->mmap = 1;
		break;
	case OPT_NO_MMAP:
		o->mmap = 0;
		break;
	case OPT_NO_PYTHON:
		o->python = 0;
		break;
	case OPT_KEEP_PY:
		o->keep_pymalloc = 1;
		break;
	case OPT_UNWIND:
		if (strcmp(arg, HS_UNWIND_LIBUNWIND) != 0 &&
		    strcmp(arg, HS_UNWIND_FAST) != 0)
			argp_error(state, "unknown --unwind method '%s'", arg);
		o->unwind = arg;
		break;
	case OPT_ALLOCATOR:
		o->allocator = arg; /* checked after parsing: one-line errors */
		break;
	case OPT_MALLINFO:
		if (!strcmp(arg, "never"))
			o->mallinfo = HS_MALLINFO_NEVER;
		else if (!strcmp(arg, "auto"))
			o->mallinfo = HS_MALLINFO_AUTO;
		else if (!strcmp(arg, "always"))
			o->mallinfo = HS_MALLINFO_ALWAYS;
		else
			argp_error(state, "--mallinfo takes auto, always or "
					  "never, not '%s'", arg);
		break;
	case ARGP_KEY_ARG:
		/* the command starts here: the rest is its own */
		o->cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!o->cmd)
			argp_error(state, "no command to record");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = {
	options, parse, "[--] COMMAND [ARGS...]",
	"Run COMMAND with the heapslope recorder preloaded and write every "
	"allocation and free, with its call stack, to a compressed trace.  "
	"Exits with COMMAND's status (128+N if signal N killed it).",
	NULL, NULL, NULL
};

int cmd_record(int argc, char **argv)
{
	struct launch_opts o = LAUNCH_OPTS_DEFAULT;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o))
		return 2;
	return launch_record(&o);
}
