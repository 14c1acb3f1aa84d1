/* The unit tests' one assertion: counts failures, never stops. */
#ifndef HS_TEST_CHECK_H
#define HS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int failures;
#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
			failures++;                                          \
		}                                                            \
	} while (0)

/* Removes a test's temporary directory, a failure if it cannot. */
static inline void check_remove_dir(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		failures++;
}

/* main's end: one line on how the checks went, and the exit status. */
static inline int check_report(const char *name)
{
	if (failures) {
		fprintf(stderr, "%s: %d checks failed\n", name, failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

#endif
