/* heapslope analyze: growth per batch, verdict and growing stacks. */
#include <argp.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analysis.h"
#include "analyze/frame_match.h"
#include "analyze/pyframes.h"
#include "commands.h"
#include "base/error.h"
#include "report/report.h"

#define TOP_DEFAULT 10
#define TRACES_MAX 64

struct analyze_opts {
	struct analysis_opts a;
	const char *paths[TRACES_MAX];
	size_t npaths;
	const struct report_format *format; /* on stdout */
	const char *json;                   /* a file, besides */
	struct report_opts ro;              /* the text report's frames */
	struct frame_match *group_match;    /* --group-by-frame, --operators */
};

enum { OPT_JSON = 'j', OPT_FORMAT = 'f', OPT_BATCHES = 'b', OPT_WARMUP = 'w',
       OPT_TOP = 'n', OPT_SITE = 's', OPT_DEBUGINFO = 0x100,
       OPT_FRAMES, OPT_RUNTIME_FRAMES, OPT_FULL_NAMES, OPT_FROM, OPT_UNTIL,
       OPT_PYTHON_FRAMES, OPT_GROUP_BY_FRAME, OPT_OPERATORS };

static const struct argp_option options[] = {
	{ "format", OPT_FORMAT, "FORMAT", 0,
	  "Write the report on stdout as 'text' (the default) or 'json' "
	  "(heapslope-report(5))", 0 },
	{ "json", OPT_JSON, "FILE", 0,
	  "Write the JSON report (heapslope-report(5)) to FILE; '-' writes it "
	  "to stdout instead of the text report (--format json)", 0 },
	{ "batches", OPT_BATCHES, "SOURCE", 0,
	  "'marker' (batch marks), 'time:DURATION' (fixed windows, e.g. "
	  "time:1s, time:250ms) or 'auto' (the default: batch marks, or time "
	  "windows chosen automatically when the trace has no marks)", 0 },
	{ "warmup", OPT_WARMUP, "N", 0,
	  "Leave the first N batches out of the slopes (default: 10% of the "
	  "batches, at most 5)", 0 },
	{ "from", OPT_FROM, "T", 0,
	  "Analyse from T on: seconds from the start of the recording "
	  "(fractional allowed) or batch:N; --from 0 keeps the start-up that "
	  "time windows otherwise leave out", 0 },
	{ "until", OPT_UNTIL, "T", 0,
	  "Analyse up to T (seconds, batch:N, or 'end'); --until end keeps "
	  "the teardown that time windows otherwise leave out", 0 },
	{ "top", OPT_TOP, "N", 0, "Report the N fastest-growing stacks "
	  "(default 10)", 0 },
	{ "group-by-site", OPT_SITE, NULL, 0,
	  "Group stacks by allocation site (innermost frame; with Python "
	  "frames, the innermost Python line), with the paths that reach it "
	  "underneath", 0 },
	{ "group-by-frame", OPT_GROUP_BY_FRAME, "PATTERN", 0,
	  "Also report growth per group of stacks: each goes to the first "
	  "frame, innermost first, whose function matches PATTERN (a glob; "
	  "re:REGEX for a POSIX extended regex), named by what the first * "
	  "(or the regex's first group) matched", 0 },
	{ "operators", OPT_OPERATORS, "FRAMEWORK", 0,
	  "Growth per operator of a framework: 'torch' (the ATen "
	  "dispatcher's at::_ops::*::call and ::redispatch) or 'paddle' "
	  "(its kernels and operator Run frames); see heapslope-analyze(1)",
	  0 },
	{ "python-frames", OPT_PYTHON_FRAMES, "MODE", 0,
	  "How stacks show a Python program's frames: 'merged' (the default: "
	  "each interpreter frame replaced by the Python lines it ran), "
	  "'python' (Python lines alone) or 'native' (none)", 0 },
	{ "frames", OPT_FRAMES, "N", 0,
	  "Show N frames per stack in the text report (default 12; 0: all)",
	  0 },
	{ "runtime-frames", OPT_RUNTIME_FRAMES, NULL, 0,
	  "Show the allocator's and runtimes' own frames at the top of "
	  "stacks in the text report (malloc, operator new, container "
	  "growth, the recorder's hooks, CPython's PyMem_/PyObject_ "
	  "allocators): left out by default", 0 },
	{ "full-names", OPT_FULL_NAMES, NULL, 0,
	  "Show C++ template arguments in full in the text report (by "
	  "default lists longer than 16 characters show as <...>)", 0 },
	{ "debuginfo-path", OPT_DEBUGINFO, "DIR", 0,
	  "Also look for separate debug files in DIR (by build-id under "
	  "DIR/.build-id, and by name)", 0 },
	{ 0 }
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct analyze_opts *o = state->input;
	long v = 0;
	switch (key) {
	case OPT_FORMAT:
		if (!(o->format = report_format(arg)))
			argp_error(state, "--format: '%s' is not one of %s",
				   arg, report_format_names());
		break;
	case OPT_JSON:
		if (!strcmp(arg, "-"))
			o->format = report_format("json");
		else
			o->json = arg;
		break;
	case OPT_BATCHES:
		if (analysis_parse_batches(arg, &o->a))
			argp_error(state, "%s", hs_last_error());
		break;
	case OPT_WARMUP:
		if (parse_long(arg, 0, 1000000000L, &v))
			argp_error(state, "--warmup: '%s' is not a batch count",
				   arg);
		o->a.warmup = v;
		break;
	case OPT_TOP:
		if (parse_long(arg, 0, 1000000L, &v))
			argp_error(state, "--top: '%s' is not a count", arg);
		o->a.top = (size_t)v;
		break;
	case OPT_FROM:
	case OPT_UNTIL:
		if (range_parse(arg, key == OPT_FROM ? "--from" : "--until",
				key == OPT_FROM ? &o->a.from : &o->a.until))
			argp_error(state, "%s", hs_last_error());
		break;
	case OPT_SITE:
		o->a.group_by_site = 1;
		break;
	case OPT_FRAMES:
		if (parse_long(arg, 0, 1000000L, &v))
			argp_error(state, "--frames: '%s' is not a count", arg);
		o->ro.frames = v ? v : -1;
		break;
	case OPT_RUNTIME_FRAMES:
		o->ro.runtime_frames = 1;
		break;
	case OPT_FULL_NAMES:
		o->ro.full_names = 1;
		break;
	case OPT_DEBUGINFO:
		o->a.debuginfo_path = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->npaths == TRACES_MAX)
			argp_error(state, "at most %d traces at a time",
				   TRACES_MAX);
		o->paths[o->npaths++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o->npaths)
			argp_error(state, "no trace given");
		if (o->a.from.set && o->a.until.set && !o->a.until.end &&
		    o->a.from.is_batch == o->a.until.is_batch &&
		    (o->a.from.is_batch ? o->a.from.batch >= o->a.until.batch
					: o->a.from.ns >= o->a.until.ns))
			argp_error(state, "--from must come before --until");
		break;
	case OPT_GROUP_BY_FRAME:
	case OPT_OPERATORS:
		if (o->group_match)
			argp_error(state, "--group-by-frame and --operators: "
					  "one of them, once");
		o->group_match = key == OPT_OPERATORS
					 ? frame_match_preset(arg)
					 : frame_match_create(arg);
		if (!o->group_match)
			argp_error(state, "%s", hs_last_error());
		o->a.group_match = o->group_match;
		break;
	case OPT_PYTHON_FRAMES:
		if (!strcmp(arg, "merged"))
			o->a.python_frames = PYFRAMES_MERGED;
		else if (!strcmp(arg, "python"))
			o->a.python_frames = PYFRAMES_PYTHON;
		else if (!strcmp(arg, "native"))
			o->a.python_frames = PYFRAMES_NATIVE;
		else
			argp_error(state, "--python-frames takes merged, python "
					  "or native, not '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = {
	options, parse, "TRACE [TRACE...]",
	"Replay TRACE and report how much the heap grows per batch, whether "
	"that is a leak, retention or fragmentation, which call stacks grow "
	"and which blocks pin the heap.  With several traces (the same "
	"program under different allocators, say), print their growth "
	"figures side by side.  See heapslope-analyze(1).",
	NULL, NULL, NULL
};

static struct analysis *run_one(const char *path,
				const struct analysis_opts *o, int *rc)
{
	struct analysis *a = analysis_create(path, o);
	if (!a) {
		fprintf(stderr, "heapslope analyze: %s\n", hs_last_error());
		return NULL;
	}
	if (a->range_error[0]) {
		fprintf(stderr, "heapslope analyze: %s: %s\n", path,
			a->range_error);
		analysis_destroy(a);
		*rc = 2;
		return NULL;
	}
	if (a->stopped[0])
		fprintf(stderr, "heapslope analyze: %s: recording stopped early "
				"(%s); analyzed up to there\n", path,
			a->stopped);
	else if (a->writing)
		fprintf(stderr, "heapslope analyze: %s is incomplete: still "
				"being written by process %" PRIu64 "; analyzed "
				"up to its last complete chunk\n",
			path, a->pid);
	else if (!a->complete)
		fprintf(stderr, "heapslope analyze: %s is incomplete (%s); "
				"analyzed up to its last complete chunk\n",
			path, a->truncated ? "cut inside a chunk"
					   : "no end record: killed?");
	return a;
}

/* The JSON file, if asked for, then the report on stdout. */
static int write_reports(const struct analyze_opts *o,
			 struct analysis *const *v)
{
	struct report_opts ro = o->ro;
	if (o->json &&
	    report_write(report_format("json"), v, o->npaths, o->json, &ro))
		return -1;
	/* sparklines and R² where the terminal takes UTF-8 */
	setlocale(LC_CTYPE, "");
	ro.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	return report_write(o->format, v, o->npaths, "-", &ro);
}

int cmd_analyze(int argc, char **argv)
{
	struct analyze_opts o = {
		.a = { .batches = BATCHES_AUTO, .warmup = -1,
		       .top = TOP_DEFAULT },
		.format = report_format("text"),
	};
	struct analysis *v[TRACES_MAX] = { 0 };
	int rc = 1;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o)) {
		frame_match_destroy(o.group_match);
		return 2;
	}
	for (size_t i = 0; i < o.npaths; i++)
		if (!(v[i] = run_one(o.paths[i], &o.a, &rc)))
			goto out;
	if (o.npaths == 1 && analysis_add_recording(v[0])) {
		fprintf(stderr, "heapslope analyze: %s\n", hs_last_error());
		goto out;
	}
	if (write_reports(&o, v)) {
		fprintf(stderr, "heapslope analyze: %s\n", hs_last_error());
		goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < o.npaths; i++)
		analysis_destroy(v[i]);
	frame_match_destroy(o.group_match);
	return rc;
}
