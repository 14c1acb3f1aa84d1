/* Known leaks, each from a function of its own so that its stack can be
 * found by name in the report.
 *   av_leaks MODE...   MODE: cycle chain ones big zero noise all
 * cycle   leak_cycle_node: a ring of 10 nodes of 48 B linked in a cycle,
 *         every pointer to it dropped (10 blocks, 480 B)
 * chain   grow_chain: malloc(8) in chain_start, then 50 reallocs to
 *         8 + 1000 k bytes in grow_chain, leaked: one block of 50,008 B
 *         on grow_chain's stack, none on chain_start's
 * ones    leak_one_byte: 1000 malloc(1) from one call site (1000 blocks,
 *         1000 B)
 * big     leak_big_block: one malloc of 32 MiB (1 block, 33,554,432 B)
 * zero    leak_zero_block: one malloc(0) (1 block, 0 B)
 * noise   churn_and_free: 200 blocks allocated and freed (nothing leaked)
 * paths   (not part of all) leak_via_paths: 24 B blocks, leaked 10 times
 *         from each of path_a, path_b and path_c: one allocation site
 *         reached through three stacks (30 blocks, 720 B)
 * No stdio: its buffers would add blocks of their own. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep;

static inline void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static inline void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static NOINLINE void die(const char *what)
{
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	_exit(3);
}

struct node {
	struct node *next;
	char pad[40];
};

static NOINLINE struct node *leak_cycle_node(void)
{
	struct node *n = malloc(sizeof(*n));
	if (!n)
		die("out of memory");
	memset(n, 0, sizeof(*n));
	return n;
}

static NOINLINE void make_cycle(void)
{
	struct node *first = NULL, *prev = NULL;
	for (int i = 0; i < 10; i++) {
		struct node *n = leak_cycle_node();
		if (prev)
			prev->next = n;
		else
			first = n;
		prev = n;
	}
	prev->next = first;
	keep = first;
	keep = NULL;
}

static NOINLINE char *chain_start(void)
{
	char *p = malloc(8);
	if (!p)
		die("out of memory");
	p[0] = 1;
	return p;
}

static NOINLINE char *grow_chain(char *p, size_t size)
{
	char *q = realloc(opaque(p), size);
	if (!q)
		die("out of memory");
	q[size - 1] = 2;
	return q;
}

static NOINLINE void make_chain(void)
{
	char *p = chain_start();
	for (size_t k = 1; k <= 50; k++)
		p = grow_chain(p, 8 + 1000 * k);
	sink(p);
}

static NOINLINE void leak_one_byte(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(1);
		if (!p)
			die("out of memory");
		*p = (char)i;
		sink(p);
	}
}

static NOINLINE void leak_big_block(void)
{
	char *p = malloc((size_t)32 << 20);
	if (!p)
		die("out of memory");
	p[0] = 1;
	sink(p);
}

static NOINLINE void leak_zero_block(void)
{
	void *p = malloc(0);
	if (!p)
		die("malloc(0) returned NULL");
	sink(p);
}

static NOINLINE void churn_and_free(void)
{
	void *v[200];
	for (int i = 0; i < 200; i++) {
		v[i] = malloc(16 + (size_t)i * 8);
		if (!v[i])
			die("out of memory");
		sink(v[i]);
	}
	for (int i = 199; i >= 0; i -= 2)
		free(v[i]);
	for (int i = 0; i < 200; i += 2)
		free(v[i]);
}

static NOINLINE void leak_via_paths(void)
{
	for (int i = 0; i < 10; i++) {
		char *p = malloc(24);
		if (!p)
			die("out of memory");
		p[0] = (char)i;
		sink(p);
	}
}

static NOINLINE void path_a(void)
{
	leak_via_paths();
	keep = (void *)1; /* distinct code: no identical-code folding */
}

static NOINLINE void path_b(void)
{
	leak_via_paths();
	keep = (void *)2;
}

static NOINLINE void path_c(void)
{
	path_b();
	keep = (void *)3;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *m = argv[i];
		int all = !strcmp(m, "all");
		int known = all;
		if (all || !strcmp(m, "noise"))
			churn_and_free(), known = 1;
		if (all || !strcmp(m, "cycle"))
			make_cycle(), known = 1;
		if (all || !strcmp(m, "chain"))
			make_chain(), known = 1;
		if (all || !strcmp(m, "ones"))
			leak_one_byte(), known = 1;
		if (all || !strcmp(m, "big"))
			leak_big_block(), known = 1;
		if (all || !strcmp(m, "zero"))
			leak_zero_block(), known = 1;
		if (!strcmp(m, "paths")) {
			path_a();
			path_b();
			path_c();
			known = 1;
		}
		if (!known)
			die("usage: av_leaks cycle|chain|ones|big|zero|noise|paths|all...");
	}
	return 0;
}
