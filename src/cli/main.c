/* heapslope: the command table, and the argument parsers the commands
 * share. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

const char *argp_program_version = "heapslope " HS_VERSION;
const char *argp_program_bug_address =
	"the heapslope issue tracker";

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "run a program and record its heap events" },
	{ "analyze", cmd_analyze,
	  "growth per batch, verdict and growing stacks of a trace" },
	{ "dump", cmd_dump, "print a trace's records, or its counts" },
};

int trace_arg(int key, char *arg, struct argp_state *state,
	      const char **path)
{
	switch (key) {
	case ARGP_KEY_ARG:
		if (*path)
			argp_error(state, "one trace at a time");
		*path = arg;
		return 0;
	case ARGP_KEY_END:
		if (!*path)
			argp_error(state, "no trace given");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: heapslope [--version] [--help] COMMAND [ARGS]\n\n"
		     "Heap-growth recorder and analyzer.  Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\n'heapslope COMMAND --help' describes a command; man "
		     "heapslope(1) describes them all.\n");
}

int main(int argc, char **argv)
{
	argp_err_exit_status = 2;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") ||
	    !strcmp(name, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("%s\n", argp_program_version);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) != 0)
			continue;
		char prog[64];
		snprintf(prog, sizeof(prog), "heapslope %s", name);
		argv[1] = prog;
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "heapslope: '%s' is not a heapslope command; see "
			"'heapslope --help'\n", name);
	return 2;
}
