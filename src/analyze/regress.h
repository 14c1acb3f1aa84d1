/* Least-squares line of a series against its batch index, with R². */
#ifndef HS_REGRESS_H
#define HS_REGRESS_H

#include <stddef.h>

struct regress {
	double slope;     /* units per batch */
	double intercept; /* value at x = 0 */
	double r2;        /* 0 when the series is flat or has < 2 points */
	size_t n;         /* points used */
};

/* Sums over the points (x_i, y_i); enough for slope and R², so callers can
 * keep them incrementally. */
struct regress_sums {
	long double n, sx, sxx, sy, sxy, syy;
};

/* Fits y[i] against x = first + i for i in [0, n).  Returns 0, or -1 when
 * fewer than two points leave the slope undefined (out is then zero). */
int regress_series(const double *y, size_t n, size_t first,
		   struct regress *out);
int regress_from_sums(const struct regress_sums *s, struct regress *out);
/* Sums of x and x² for x = first .. first+n-1, in closed form. */
void regress_x_sums(size_t first, size_t n, long double *sx,
		    long double *sxx);
/* The automatic warm-up: 10% of the batches, at most 5. */
size_t regress_auto_warmup(size_t batches);

#endif
