/* Edge cases of the allocation API.  stdout: what each call returned, as
 * it must read natively and under the recorder; stderr: "addr NAME PTR"
 * lines, for the test to find the calls in the trace. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink.h"

static void show(const char *name, void *p, int err)
{
	printf("%s: %s errno=%d\n", name, p ? "ptr" : "NULL", p ? 0 : err);
	fprintf(stderr, "addr %s %p\n", name, p);
	sink(p);
}

/* volatile: the compiler must not see (and warn about) the huge sizes */
static volatile size_t vmax = SIZE_MAX;

int main(void)
{
	const size_t max = vmax;
	void *p;
	int rc;

	/* stdio buffers first, so they are not mixed into the cases */
	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IONBF, 0);

	p = malloc(4321);
	show("malloc-4321", p, errno);
	fprintf(stderr, "addr realloc0-old %p\n", p);
	errno = 0;
	void *q = realloc(p, 0); /* frees p, returns NULL in glibc */
	printf("realloc0: %s\n", q ? "ptr" : "NULL");
	free(q);

	p = malloc(1234);
	fprintf(stderr, "addr reallocarray0-old %p\n", p);
	q = reallocarray(p, 0, 8); /* frees p, as realloc(p, 0) */
	printf("reallocarray0: %s\n", q ? "ptr" : "NULL");
	free(q);

	p = realloc(opaque(NULL), 777);
	show("realloc-null", p, errno);
	free(p);

	p = reallocarray(opaque(NULL), 11, 7);
	show("reallocarray-null", p, errno);
	free(p);

	p = malloc(0);
	show("malloc-0", p, errno);
	free(p);

	errno = 0;
	p = malloc(max);
	show("malloc-max", p, errno);

	errno = 0;
	p = calloc(max / 2, 4);
	show("calloc-overflow", p, errno);

	errno = 0;
	p = realloc(opaque(NULL), max - 4096);
	show("realloc-null-max", p, errno);

	errno = 0;
	p = reallocarray(opaque(NULL), max / 2, 3);
	show("reallocarray-overflow", p, errno);

	p = malloc(100);
	fprintf(stderr, "addr realloc-grow-max-old %p\n", p);
	errno = 0;
	q = realloc(p, max - 8192); /* fails: p stays valid */
	show("realloc-grow-max", q, errno);
	if (!q)
		free(p); /* p is still ours */
	else
		free(q);

	p = (void *)1;
	errno = 0;
	rc = posix_memalign(&p, 3, 8);
	printf("posix_memalign-3: rc=%d p-unchanged=%d\n", rc, p == (void *)1);

	p = NULL;
	rc = posix_memalign(&p, 4096, 5000);
	printf("posix_memalign-4096: rc=%d aligned=%d\n", rc,
	       p && (uintptr_t)p % 4096 == 0);
	fprintf(stderr, "addr posix_memalign-4096 %p\n", p);
	free(p);

	errno = 0;
	p = memalign(max, 8); /* alignment too large: EINVAL */
	show("memalign-bad", p, errno);

	p = memalign(256, 300);
	show("memalign-256", p, errno);
	printf("memalign-256 aligned=%d\n", p && (uintptr_t)p % 256 == 0);
	free(p);

	p = aligned_alloc(64, 640);
	show("aligned_alloc-64", p, errno);
	printf("aligned_alloc-64 aligned=%d\n", p && (uintptr_t)p % 64 == 0);
	free(p);

	p = valloc(3000);
	show("valloc", p, errno);
	printf("valloc aligned=%d\n", p && (uintptr_t)p % 4096 == 0);
	free(p);

	p = pvalloc(5000);
	show("pvalloc", p, errno);
	free(p);

	errno = 12345;
	p = malloc(64);
	printf("errno kept by malloc: %d\n", errno);
	free(p);
	printf("errno kept by free: %d\n", errno);
	return 0;
}
