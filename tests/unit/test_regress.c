/* Unit test of the least-squares fits: exact series with known slopes
 * and R², the closed-form x sums, and the automatic warm-up. */
#include <math.h>
#include <stdio.h>

#include "analyze/regress.h"

#include "check.h"

#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

static void test_line(void)
{
	double y[100];
	struct regress r;
	for (int i = 0; i < 100; i++)
		y[i] = 3 + 2.5 * (i + 7);
	CHECK(regress_series(y, 100, 7, &r) == 0);
	CHECK(NEAR(r.slope, 2.5, 1e-9));
	CHECK(NEAR(r.intercept, 3, 1e-7));
	CHECK(NEAR(r.r2, 1, 1e-12));
	CHECK(r.n == 100);
	/* a large level must cost no precision */
	for (int i = 0; i < 100; i++)
		y[i] = 1e12 + 112640.0 * i;
	CHECK(regress_series(y, 100, 0, &r) == 0);
	CHECK(NEAR(r.slope, 112640, 1e-4));
	CHECK(NEAR(r.r2, 1, 1e-9));
	/* falling */
	for (int i = 0; i < 10; i++)
		y[i] = 50 - 4.0 * i;
	CHECK(regress_series(y, 10, 0, &r) == 0);
	CHECK(NEAR(r.slope, -4, 1e-12));
	CHECK(NEAR(r.r2, 1, 1e-12));
}

static void test_flat_and_short(void)
{
	double y[5] = { 7, 7, 7, 7, 7 };
	struct regress r;
	CHECK(regress_series(y, 5, 0, &r) == 0);
	CHECK(r.slope == 0);
	CHECK(r.r2 == 0); /* nothing to explain */
	CHECK(NEAR(r.intercept, 7, 1e-12));
	CHECK(regress_series(y, 1, 0, &r) == -1);
	CHECK(r.slope == 0 && r.r2 == 0);
	CHECK(regress_series(y, 0, 0, &r) == -1);
}

static void test_known_r2(void)
{
	/* y = 0, 2, 1, 3: slope 0.8, intercept 0.3, R² = 0.64 */
	double y[4] = { 0, 2, 1, 3 };
	struct regress r;
	CHECK(regress_series(y, 4, 0, &r) == 0);
	CHECK(NEAR(r.slope, 0.8, 1e-12));
	CHECK(NEAR(r.intercept, 0.3, 1e-12));
	CHECK(NEAR(r.r2, 0.64, 1e-12));
	/* symmetric parabola: no linear trend at all */
	double p[5] = { 4, 1, 0, 1, 4 };
	CHECK(regress_series(p, 5, 0, &r) == 0);
	CHECK(NEAR(r.slope, 0, 1e-12));
	CHECK(NEAR(r.r2, 0, 1e-12));
}

static void test_sums(void)
{
	for (size_t first = 0; first < 20; first += 3) {
		for (size_t n = 0; n < 50; n += 7) {
			long double sx, sxx, bx = 0, bxx = 0;
			regress_x_sums(first, n, &sx, &sxx);
			for (size_t k = first; k < first + n; k++) {
				bx += k;
				bxx += (long double)k * k;
			}
			CHECK(sx == bx);
			CHECK(sxx == bxx);
		}
	}
	/* from sums equals from the series */
	double y[6] = { 5, 9, 4, 12, 20, 18 };
	struct regress a, b;
	struct regress_sums s = { .n = 6 };
	regress_x_sums(10, 6, &s.sx, &s.sxx);
	for (int i = 0; i < 6; i++) {
		s.sy += y[i];
		s.sxy += (10.0L + i) * y[i];
		s.syy += (long double)y[i] * y[i];
	}
	CHECK(regress_from_sums(&s, &a) == 0);
	CHECK(regress_series(y, 6, 10, &b) == 0);
	CHECK(NEAR(a.slope, b.slope, 1e-9));
	CHECK(NEAR(a.r2, b.r2, 1e-9));
	CHECK(NEAR(a.intercept, b.intercept, 1e-6));
}

static void test_warmup(void)
{
	CHECK(regress_auto_warmup(0) == 0);
	CHECK(regress_auto_warmup(9) == 0);
	CHECK(regress_auto_warmup(10) == 1);
	CHECK(regress_auto_warmup(35) == 3);
	CHECK(regress_auto_warmup(50) == 5);
	CHECK(regress_auto_warmup(100000) == 5);
}

int main(void)
{
	test_line();
	test_flat_and_short();
	test_known_r2();
	test_sums();
	test_warmup();
	return check_report("regress");
}
