#include "range.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "series.h"

#define SETTLED_FACTOR 4
#define SETTLED_BYTES (256.0 * 1024)
#define SETTLED_ALLOCS 1024.0
/* 2^62 ns, as walk.h's WALK_TIME_MAX: 146 years */
#define SECONDS_MAX 4.6e9

int range_parse(const char *arg, const char *opt, struct range_bound *b)
{
	*b = (struct range_bound){ .set = 1 };
	char *end;
	if (!strcmp(opt, "--until") && !strcmp(arg, "end")) {
		b->end = 1;
		b->ns = RANGE_END;
		return 0;
	}
	errno = 0;
	if (!strncmp(arg, "batch:", 6)) {
		const char *s = arg + 6;
		if (*s < '0' || *s > '9')
			goto bad;
		unsigned long long v = strtoull(s, &end, 10);
		if (*end || errno || v > UINT32_MAX)
			goto bad;
		b->is_batch = 1;
		b->batch = v;
		return 0;
	}
	if (!*arg || *arg == ' ')
		goto bad;
	double v = strtod(arg, &end);
	if (*end || errno || !isfinite(v) || v < 0 || v > SECONDS_MAX)
		goto bad;
	b->ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
bad:
	return hs_error("%s: '%s' is not a time (seconds from the start of "
			"the recording, e.g. 2.5), batch:N%s", opt, arg,
			strcmp(opt, "--until") ? "" : " or 'end'");
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* The median of f over windows [from, n); scratch holds n - from. */
static double median(const struct batch *v, size_t from, size_t n,
		     double (*f)(const struct batch *v, size_t i),
		     double *scratch)
{
	size_t m = 0;
	for (size_t i = from; i < n; i++)
		scratch[m++] = f(v, i);
	if (!m)
		return 0;
	qsort(scratch, m, sizeof(*scratch), cmp_double);
	return m % 2 ? scratch[m / 2]
		     : (scratch[m / 2 - 1] + scratch[m / 2]) / 2;
}

static double dlive(const struct batch *v, size_t i)
{
	double prev = i ? (double)v[i - 1].live_bytes : 0;
	return fabs((double)v[i].live_bytes - prev);
}

/* dlive, unless the live heap comes back within a window: a spike that
 * a garbage collection or a flush makes and undoes is not a change of
 * level (the change from two windows before to the next one is taken
 * then; in the last window, there is no next one) */
static double level_change(const struct batch *v, size_t i, size_t n)
{
	double d = dlive(v, i);
	if (i + 1 >= n)
		return d;
	double before = i >= 2 ? (double)v[i - 2].live_bytes : 0;
	double across = fabs((double)v[i + 1].live_bytes - before);
	return across < d ? across : d;
}

static double allocs(const struct batch *v, size_t i)
{
	return (double)v[i].allocations;
}

size_t range_startup_windows(const struct batch *v, size_t n)
{
	if (n < RANGE_MIN_WINDOWS)
		return 0;
	double *scratch = malloc(n * sizeof(*scratch));
	if (!scratch)
		return 0; /* no cut rather than a failure */
	double md = median(v, n / 2, n, dlive, scratch);
	double ma = median(v, n / 2, n, allocs, scratch);
	free(scratch);
	double dmax = SETTLED_FACTOR * md + SETTLED_BYTES;
	double amax = SETTLED_FACTOR * ma + SETTLED_ALLOCS;
	/* bursts the second half has too (a garbage collector's, a
	 * periodic flush) are the run's own, not its start-up's: a window
	 * of the first half is start-up only beyond the largest of those */
	for (size_t i = n / 2; i < n; i++) {
		if (dlive(v, i) > dmax)
			dmax = dlive(v, i);
		if (allocs(v, i) > amax)
			amax = allocs(v, i);
	}
	size_t k = 0;
	for (size_t i = 0; i < n / 2; i++)
		if (level_change(v, i, n) > dmax || allocs(v, i) > amax)
			k = i + 1;
	return k;
}

size_t range_teardown_window(const struct batch *v, size_t n)
{
	if (n < RANGE_MIN_WINDOWS)
		return n;
	double *scratch = malloc(n * sizeof(*scratch));
	if (!scratch)
		return n;
	double md = median(v, n / 2, n, dlive, scratch);
	free(scratch);
	double margin = SETTLED_FACTOR * md + SETTLED_BYTES;
	/* the last highest point of the second half */
	size_t p = n / 2;
	for (size_t i = n / 2; i < n; i++)
		if (v[i].live_bytes >= v[p].live_bytes)
			p = i;
	if (p + 1 >= n || p < n - n / 4 - 1 ||
	    (double)v[n - 1].live_bytes >= (double)v[p].live_bytes - margin)
		return n;
	return p + 1;
}
