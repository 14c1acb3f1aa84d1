#include "regress.h"

#include <string.h>

#define AUTO_WARMUP_MAX 5

size_t regress_auto_warmup(size_t batches)
{
	size_t w = batches / 10;
	return w > AUTO_WARMUP_MAX ? AUTO_WARMUP_MAX : w;
}

void regress_x_sums(size_t first, size_t n, long double *sx,
		    long double *sxx)
{
	/* sum of k and k² over [0, m) is m(m-1)/2 and (m-1)m(2m-1)/6 */
	long double a = (long double)first, m = (long double)n;
	long double s1 = m * (m - 1) / 2, s2 = (m - 1) * m * (2 * m - 1) / 6;
	*sx = m * a + s1;
	*sxx = m * a * a + 2 * a * s1 + s2;
}

int regress_from_sums(const struct regress_sums *s, struct regress *out)
{
	memset(out, 0, sizeof(*out));
	out->n = (size_t)s->n;
	if (s->n < 2)
		return -1;
	/* centred sums: the raw ones cancel badly for large x and y */
	long double cxx = s->sxx - s->sx * s->sx / s->n;
	long double cxy = s->sxy - s->sx * s->sy / s->n;
	long double cyy = s->syy - s->sy * s->sy / s->n;
	if (cxx <= 0)
		return -1;
	long double slope = cxy / cxx;
	out->slope = (double)slope;
	out->intercept = (double)((s->sy - slope * s->sx) / s->n);
	if (cyy > 0) {
		long double r2 = cxy * cxy / (cxx * cyy);
		out->r2 = (double)(r2 > 1 ? 1 : r2 < 0 ? 0 : r2);
	}
	return 0;
}

int regress_series(const double *y, size_t n, size_t first,
		   struct regress *out)
{
	struct regress_sums s = { .n = (long double)n };
	regress_x_sums(first, n, &s.sx, &s.sxx);
	/* centre y on its mean first so a large level costs no precision */
	long double mean = 0;
	for (size_t i = 0; i < n; i++)
		mean += y[i];
	mean = n ? mean / n : 0;
	for (size_t i = 0; i < n; i++) {
		long double x = (long double)(first + i), d = y[i] - mean;
		s.sy += d;
		s.sxy += x * d;
		s.syy += d * d;
	}
	int rc = regress_from_sums(&s, out);
	out->intercept += (double)mean;
	return rc;
}
