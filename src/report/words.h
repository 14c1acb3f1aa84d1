/* The wording the reports and dump share: sizes, how a process ended,
 * why a recording ended, the verdicts' names, file names. */
#ifndef HS_WORDS_H
#define HS_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/verdict.h"

/* bytes as people read them: "-280 B" below 1 KiB, "1.6 MiB" above. */
const char *words_bytes(double bytes, char *buf, size_t cap);

/* How a process ended, from the wait status `record` appends: its exit
 * status, or the signal that killed it, in *value. */
enum words_exit { WORDS_EXIT_OTHER, WORDS_EXIT_STATUS, WORDS_EXIT_SIGNAL };
enum words_exit words_exit(uint64_t wait_status, int *value);

/* Why the recording ended (the END record): "exit", "exec", "_exit",
 * "error"; NULL for another value. */
const char *words_end_reason(unsigned reason);

/* "stable", "leak", "retention", "fragmentation", "mixed"; "?" for
 * another value. */
const char *words_verdict(enum verdict v);

/* A path as the text shows it: its last component. */
const char *words_file(const char *path);

#endif
