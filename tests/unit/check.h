/* The unit tests' one assertion: counts failures, never stops. */
#ifndef HS_TEST_CHECK_H
#define HS_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
			failures++;                                          \
		}                                                            \
	} while (0)

#endif
