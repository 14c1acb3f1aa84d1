/* One function per subcommand; main.c holds the table. */
#ifndef HS_COMMANDS_H
#define HS_COMMANDS_H

/* For argp parsers of commands that read one TRACE: handles its argument
 * (and its absence); ARGP_ERR_UNKNOWN for other keys. */
struct argp_state;
int trace_arg(int key, char *arg, struct argp_state *state,
	      const char **path);
/* A decimal option value in [lo, hi]: 0, or -1 if s is not one. */
int parse_long(const char *s, long lo, long hi, long *out);

int cmd_record(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_dump(int argc, char **argv);

#endif
