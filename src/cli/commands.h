/* One function per subcommand; main.c holds the table. */
#ifndef HS_COMMANDS_H
#define HS_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_dump(int argc, char **argv);

#endif
