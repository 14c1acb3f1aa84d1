/* Unit test of the analyzer's reading of Python frames: the line of each
 * instruction from a CPython 3.11 line table, against the lines CPython
 * gives for the same code (pylines_311.h, made with co_lines() by a
 * script that compiles the functions there and prints their
 * co_linetable); cut and corrupt tables never read past their end. */
#include <stdint.h>
#include <string.h>

#include "analyze/pyframes.h"

#include "check.h"
#include "pylines_311.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_table(const uint8_t *lt, size_t n, unsigned first,
			const unsigned (*exp)[2], size_t nexp)
{
	for (size_t i = 0; i < nexp; i++) {
		unsigned got = pyframes_line(lt, n, first, exp[i][0]);
		if (got != exp[i][1])
			fprintf(stderr, "offset %u: line %u, CPython says %u\n",
				exp[i][0], got, exp[i][1]);
		CHECK(got == exp[i][1]);
	}
	/* past the end of the code: no line */
	CHECK(pyframes_line(lt, n, first, exp[nexp - 1][0] + 1000) == 0);
}

static void test_cpython(void)
{
	check_table(lt_f, sizeof(lt_f), FIRST_f, exp_f, N(exp_f));
	check_table(lt_h, sizeof(lt_h), FIRST_h, exp_h, N(exp_h));
}

/* Cut anywhere, or made of bytes that never end a varint, a table gives
 * some line or none, and reads nothing past its end (ASan checks). */
static void test_cut(void)
{
	for (size_t n = 0; n <= sizeof(lt_f); n++) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, lt_f, n);
		for (unsigned off = 0; off < 64; off++)
			(void)pyframes_line(copy, n, FIRST_f, off);
		free(copy);
	}
	uint8_t bad[64];
	memset(bad, 0xf7, sizeof(bad)); /* long entries, every byte "more" */
	for (unsigned off = 0; off < 200; off++)
		(void)pyframes_line(bad, sizeof(bad), 1, off);
	memset(bad, 0x7f, sizeof(bad));
	CHECK(pyframes_line(bad, sizeof(bad), 5, 0) == 0);
}

int main(void)
{
	test_cpython();
	test_cut();
	return check_report("pyframes");
}
