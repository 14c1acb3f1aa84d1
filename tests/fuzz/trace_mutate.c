/* trace_mutate: a trace again, with absurd values in some of its records
 * (mutate.h), for tests/analyze/test_absurd_values.py.
 *   trace_mutate IN OUT                 re-encoded, unchanged
 *   trace_mutate IN OUT RULE...         with the rules: INDEX:FIELD=VALUE,
 *                                       INDEX:FIELD+=VALUE, or
 *                                       header:FIELD=VALUE
 *   trace_mutate --seed N IN OUT        with rules drawn from seed N */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "mutate.h"

#define RULES_MAX 64

static int slurp(const char *path, uint8_t **buf, size_t *n)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16;
	*n = 0;
	*buf = malloc(cap);
	if (!f || !*buf) {
		if (f)
			fclose(f);
		return hs_error("%s: %s", path, strerror(errno));
	}
	for (size_t got; (got = fread(*buf + *n, 1, cap - *n, f)) > 0;) {
		*n += got;
		if (*n == cap) {
			uint8_t *b = realloc(*buf, cap *= 2);
			if (!b) {
				fclose(f);
				return hs_error("out of memory");
			}
			*buf = b;
		}
	}
	int bad = ferror(f);
	fclose(f);
	return bad ? hs_error("read %s: %s", path, strerror(errno)) : 0;
}

static int spill(const char *path, const uint8_t *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return hs_error("%s: %s", path, strerror(errno));
	int bad = fwrite(buf, 1, n, f) != n;
	bad |= fclose(f) != 0;
	return bad ? hs_error("write %s: %s", path, strerror(errno)) : 0;
}

int main(int argc, char **argv)
{
	struct mutate_rule rules[RULES_MAX];
	size_t nrules = 0, n = 0, outn = 0;
	uint8_t *in = NULL, *out = NULL;
	int seeded = 0, rc = 1;
	unsigned long long seed = 0;
	if (argc > 2 && !strcmp(argv[1], "--seed")) {
		char *end;
		errno = 0;
		seed = strtoull(argv[2], &end, 0);
		if (errno || *end || end == argv[2])
			goto usage;
		seeded = 1;
		argc -= 2;
		argv += 2;
	}
	if (argc < 3 || (seeded && argc > 3) || argc - 3 > RULES_MAX)
		goto usage;
	for (int i = 3; i < argc; i++)
		if (mutate_parse_rule(argv[i], &rules[nrules++])) {
			fprintf(stderr, "trace_mutate: bad rule '%s'\n",
				argv[i]);
			goto usage;
		}
	if (slurp(argv[1], &in, &n) ||
	    (seeded ? mutate_random(in, n, seed, &out, &outn)
		    : mutate_apply(in, n, rules, nrules, &out, &outn)) ||
	    spill(argv[2], out, outn)) {
		fprintf(stderr, "trace_mutate: %s\n", hs_last_error());
		goto out;
	}
	rc = 0;
	goto out;
usage:
	fprintf(stderr, "usage: trace_mutate [--seed N] IN OUT [RULE...]\n");
	rc = 2;
out:
	free(in);
	free(out);
	return rc;
}
