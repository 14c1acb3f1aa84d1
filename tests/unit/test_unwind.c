/* The fast unwinder must return exactly what libunwind returns.  Each case
 * captures from one call site three times: fast (its per-thread copy still
 * holds the previous case's stack, often a stale one at the same depth),
 * libunwind, and fast again (the whole stack unchanged). */
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/unwind.h"
#include "record/unwind_fast.h"

#if __has_include(<zlib.h>)
#include <zlib.h>
#define HAVE_ZLIB 1
#endif

#define NOINLINE __attribute__((noinline))
#ifdef __clang__
#define O0 __attribute__((noinline, optnone))
#else
#define O0 __attribute__((noinline, optimize("O0")))
#endif
/* keeps a loop a loop: one call site for every round */
#if defined(__clang__)
#define ONE_CALL_SITE _Pragma("nounroll")
#else
#define ONE_CALL_SITE _Pragma("GCC unroll 1")
#endif
/* keeps a call from becoming a jump, as real code around malloc does */
#define BARRIER() __asm__ volatile("" ::: "memory")

static int failures, cases;
static const char *where = "?";

static NOINLINE int grab(uintptr_t *ips, int max)
{
	uint64_t key;
	int n = unwind_capture(ips, max, &key);
	BARRIER();
	return n;
}

static void show(const char *name, const uintptr_t *ips, int n)
{
	fprintf(stderr, "  %s (%d):", name, n);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %#lx", (unsigned long)ips[i]);
	fprintf(stderr, "\n");
}

/* expect_fallback: the stack holds a frame fast must not follow */
static NOINLINE int compare_max(int max, int expect_fallback)
{
	static const char *const order[3] = { "fast", "libunwind", "fast" };
	uintptr_t ips[3][HS_DEPTH_MAX];
	int n[3];
	struct unwind_fast_stats before, after;
	unwind_fast_stats(&before);
	/* one call site for all three: the loop must stay a loop */
	ONE_CALL_SITE
	for (int i = 0; i < 3; i++) {
		if (unwind_init(order[i])) {
			fprintf(stderr, "unwind_init(%s) failed\n", order[i]);
			exit(1);
		}
		n[i] = grab(ips[i], max);
	}
	unwind_fast_stats(&after);
	cases++;
	int bad = n[0] != n[1] || n[2] != n[1] || n[1] <= 0 ||
		  memcmp(ips[0], ips[1], (size_t)n[1] * sizeof(uintptr_t)) ||
		  memcmp(ips[2], ips[1], (size_t)n[1] * sizeof(uintptr_t));
	uint64_t fb = after.fallbacks - before.fallbacks;
	if (expect_fallback ? fb != 2 : fb != 0) {
		fprintf(stderr, "%s: %llu fallbacks\n", where,
			(unsigned long long)fb);
		bad = 1;
	}
	if (bad) {
		fprintf(stderr, "FAIL %s (max %d)\n", where, max);
		show("fast", ips[0], n[0]);
		show("libunwind", ips[1], n[1]);
		show("fast again", ips[2], n[2]);
		failures++;
	}
	return n[1];
}

static NOINLINE int compare(void)
{
	int n = compare_max(HS_DEPTH_MAX, 0);
	BARRIER();
	return n;
}

/* recursion, optimized (RSP-based CFA) and not (RBP-based) */
static NOINLINE int rec_o2(int d)
{
	if (d <= 1)
		return compare();
	int r = rec_o2(d - 1);
	BARRIER();
	return r + 1;
}

static O0 int rec_o0(int d)
{
	if (d <= 1)
		return compare();
	return rec_o0(d - 1) + 1;
}

/* variable-length arrays and alloca make the CFA RBP-based even at -O2 */
static NOINLINE int rec_vla(int d)
{
	volatile char buf[16 + d * 8];
	buf[0] = (char)d;
	if (d <= 1)
		return compare() + buf[0];
	int r = rec_vla(d - 1);
	BARRIER();
	return r + buf[0];
}

static NOINLINE int with_alloca(int n)
{
	volatile char *p = alloca((size_t)n);
	p[0] = 1;
	int r = compare();
	BARRIER();
	return r + p[0];
}

/* mixed depths and shapes */
static NOINLINE int mixed(int d)
{
	if (d <= 1)
		return with_alloca(100);
	int r = (d % 3 == 0 ? rec_o0 : d % 3 == 1 ? rec_vla : rec_o2)(2);
	r += mixed(d - 1);
	BARRIER();
	return r;
}

/* through function pointers */
static NOINLINE int via_a(int x)
{
	return compare() + x;
}

static O0 int via_b(int x)
{
	return compare() + x;
}

static int (*volatile table[2])(int) = { via_a, via_b };

static NOINLINE int by_pointer(int i)
{
	int r = table[i & 1](i);
	BARRIER();
	return r;
}

/* libc calling back into the program */
static int cmp_int(const void *a, const void *b)
{
	compare();
	return *(const int *)a - *(const int *)b;
}

static NOINLINE void through_qsort(void)
{
	int v[5] = { 5, 3, 4, 1, 2 };
	qsort(v, 5, sizeof(v[0]), cmp_int);
	BARRIER();
}

#ifdef HAVE_ZLIB
/* Code loaded and unloaded at run time: zlib's inflateBack calls back for
 * input.  Its rules hold until a module is unloaded. */
static unsigned zlib_input(void *desc, unsigned char **buf)
{
	(void)desc;
	*buf = NULL;
	compare();
	return 0; /* no input: inflateBack gives up */
}

static int zlib_output(void *desc, unsigned char *buf, unsigned len)
{
	(void)desc, (void)buf, (void)len;
	return 0;
}

static NOINLINE void through_dlopen(void)
{
	static unsigned char window[32768];
	void *lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return; /* not installed: nothing to check */
	int (*init)(z_streamp, int, unsigned char *, const char *, int) =
		(int (*)(z_streamp, int, unsigned char *, const char *, int))
			dlsym(lib, "inflateBackInit_");
	int (*back)(z_streamp, in_func, void *, out_func, void *) =
		(int (*)(z_streamp, in_func, void *, out_func, void *))
			dlsym(lib, "inflateBack");
	int (*end)(z_streamp) =
		(int (*)(z_streamp))dlsym(lib, "inflateBackEnd");
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (init && back && end &&
	    init(&z, 15, window, ZLIB_VERSION, (int)sizeof(z)) == Z_OK) {
		back(&z, zlib_input, NULL, zlib_output, NULL);
		end(&z);
	}
	dlclose(lib);
	BARRIER();
}
#else
static void through_dlopen(void)
{
}
#endif

/* same depth, different paths: stale return addresses lie in the stack
 * where the copy kept by the previous capture expects its own */
static NOINLINE int leaf_big(void)
{
	volatile char pad[512];
	pad[0] = 1;
	int r = compare();
	BARRIER();
	return r + pad[0];
}

static NOINLINE int leaf_small(void)
{
	int r = compare();
	BARRIER();
	return r;
}

static NOINLINE int hop(int i)
{
	int r = i ? leaf_small() : leaf_big();
	BARRIER();
	return r;
}

static NOINLINE int site_one(void)
{
	int r = hop(0);
	BARRIER();
	return r;
}

static NOINLINE int site_two(void)
{
	int r = hop(1);
	BARRIER();
	return r;
}

static NOINLINE void stale(void)
{
	for (int i = 0; i < 4; i++) {
		(i & 1 ? site_two : site_one)();
		hop(i & 1);
		(i & 2 ? site_one : site_two)();
	}
}

/* One first frame, two ways to it: twin_x and twin_y have one frame size
 * and are called from one place, so every frame from compare_max inwards
 * sits at the same address with the same return address on both paths,
 * and only twin_inner's return address tells them apart.  A walk filed
 * under that first frame on one path must not be taken on the other. */
static NOINLINE int twin_inner(void)
{
	int r = compare();
	BARRIER();
	return r;
}

static NOINLINE int twin_x(void)
{
	volatile int k = 1;
	int r = twin_inner();
	BARRIER();
	return r + k;
}

static NOINLINE int twin_y(void)
{
	volatile int k = 2;
	int r = twin_inner();
	BARRIER();
	return r + k;
}

static int (*volatile twin[2])(void) = { twin_x, twin_y };

static NOINLINE void twins(void)
{
	for (int i = 0; i < 8; i++)
		twin[i % 3 == 1]();
}

/* A frame with an RBP-based CFA (rbp_f, by its alloca) at another depth,
 * the frames inside it where they were: rbp_x's frame is larger than
 * rbp_y's and rbp_f's alloca smaller by as much.  rbp_x never writes the
 * word where rbp_f's return address into rbp_y lay, so every return
 * address the kept walk read is still in place; only the RBP saved by
 * rbp_inner (rbp_f's frame base) tells the two stacks apart. */
enum { RBP_PAD = 2048 };
static int rbp_probing;        /* rbp_inner notes where it is, no more */
static uintptr_t rbp_inner_at; /* rbp_inner's frame */
static uintptr_t rbp_slot, rbp_ret; /* rbp_f's return address: where, what */
static uintptr_t rbp_old_slot;      /* rbp_slot on the first path */
static uintptr_t rbp_old_word;      /* what it held, seen from rbp_inner */

/* -O0: it saves rbp_f's RBP and sets its own, which is the same on both
 * paths, so that only the saved one differs */
static O0 int rbp_inner(void)
{
	rbp_inner_at = (uintptr_t)__builtin_frame_address(0);
	if (rbp_old_slot)
		rbp_old_word = *(volatile uintptr_t *)rbp_old_slot;
	if (rbp_probing)
		return 0;
	return compare();
}

static NOINLINE int rbp_f(int n)
{
	volatile char *p = alloca((size_t)n);
	p[0] = 1;
	rbp_slot = (uintptr_t)__builtin_frame_address(0) + 8;
	rbp_ret = (uintptr_t)__builtin_return_address(0);
	int r = rbp_inner();
	BARRIER();
	return r + p[0];
}

/* pad is never written, but escapes: the compiler keeps all of it */
static NOINLINE int rbp_y(int n)
{
	char pad[64];
	__asm__ volatile("" : : "r"(pad) : "memory");
	int r = rbp_f(n);
	BARRIER();
	return r;
}

static NOINLINE int rbp_x(int n)
{
	char pad[RBP_PAD]; /* where rbp_y's frame and rbp_f's slot were */
	__asm__ volatile("" : : "r"(pad) : "memory");
	int r = rbp_f(n);
	BARRIER();
	return r;
}

static int (*volatile rbp_path[2])(int) = { rbp_y, rbp_x };

/* one call site for both paths: one return address into rbp_z */
static NOINLINE int rbp_z(int path, int n)
{
	int r = rbp_path[path](n);
	BARRIER();
	return r;
}

/* called through a pointer: no copy of rbp_z made for constant arguments */
static int (*volatile rbp_zp)(int, int) = rbp_z;
/* a loop of two the compiler cannot unroll: one call site */
static volatile int rbp_runs = 2;

static NOINLINE void rbp_moved(void)
{
	const int n1 = RBP_PAD + 512;
	int n[2] = { n1, 0 };
	uintptr_t at[2], word = 0, old_ret;
	/* find the alloca that puts rbp_inner where it was on the first
	 * path, with the old return address still in its old place: frame
	 * sizes are the compiler's */
	rbp_probing = 1;
	rbp_old_slot = 0;
	rbp_zp(0, n1);
	at[0] = rbp_inner_at;
	rbp_old_slot = rbp_slot;
	old_ret = rbp_ret;
	for (int k = 8; k <= n1 + RBP_PAD && !n[1]; k += 8) {
		rbp_zp(1, k);
		if (rbp_inner_at == at[0] && rbp_old_word == old_ret &&
		    rbp_slot != rbp_old_slot)
			n[1] = k;
	}
	rbp_probing = 0;
	cases++;
	if (!n[1]) {
		fprintf(stderr, "FAIL %s: no alloca puts the inner frames "
			"where they were (last %#lx, wanted %#lx, old return "
			"address %s)\n", where, (unsigned long)rbp_inner_at,
			(unsigned long)at[0],
			rbp_old_word == old_ret ? "kept" : "overwritten");
		failures++;
		return;
	}
	/* the first path leaves its walk kept; the second one's first fast
	 * capture must not take the outer part of it */
	ONE_CALL_SITE
	for (int i = 0; i < rbp_runs; i++) {
		rbp_zp(i, n[i]);
		at[i] = rbp_inner_at;
		word = rbp_old_word;
	}
	rbp_old_slot = 0;
	/* the case is the one meant only if all of that held in the
	 * captures too */
	if (at[1] != at[0] || word != old_ret || rbp_ret == old_ret) {
		fprintf(stderr, "FAIL %s: inner frames at %#lx then %#lx, old "
			"return address %s\n", where, (unsigned long)at[0],
			(unsigned long)at[1],
			word == old_ret ? "kept" : "overwritten");
		failures++;
	}
}

/* truncated captures: fewer frames asked for than the stack has */
static NOINLINE int rec_trunc(int d, int max)
{
	if (d <= 1) {
		int n = compare_max(max, 0);
		n += compare_max(max + 3, 0);
		return n;
	}
	int r = rec_trunc(d - 1, max);
	BARRIER();
	return r + 1;
}

/* a signal handler frame: fast must hand the stack to libunwind */
static volatile int in_handler;

static void on_signal(int sig)
{
	(void)sig;
	in_handler = 1;
	compare_max(HS_DEPTH_MAX, 1);
}

static NOINLINE void signal_frame(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	BARRIER();
	if (!in_handler) {
		fprintf(stderr, "signal handler did not run\n");
		failures++;
	}
}

static void run_all(void)
{
	where = "recursion -O2";
	for (int d = 1; d <= 60; d++)
		rec_o2(d);
	where = "recursion -O0";
	for (int d = 1; d <= 60; d++)
		rec_o0(d);
	where = "recursion with VLAs";
	for (int d = 1; d <= 60; d++)
		rec_vla(d);
	where = "mixed shapes";
	for (int d = 1; d <= 20; d++)
		mixed(d);
	where = "function pointers";
	for (int i = 0; i < 6; i++)
		by_pointer(i);
	where = "qsort comparator";
	through_qsort();
	where = "dlopen, dlclose, dlopen again";
	for (int i = 0; i < 3; i++)
		through_dlopen();
	where = "stale return addresses";
	stale();
	where = "one first frame, two paths";
	twins();
	where = "frame with an RBP-based CFA moved";
	rbp_moved();
	where = "truncated";
	for (int d = 1; d <= 40; d += 3)
		for (int max = 1; max <= 12; max += 5)
			rec_trunc(d, max);
	where = "signal handler";
	signal_frame();
	where = "after the signal";
	rec_o2(5);
}

static void *thread_main(void *arg)
{
	(void)arg;
	run_all();
	return NULL;
}

/* Reuse must happen where the outer part is unchanged, or the cases
 * above prove nothing about it. */
static NOINLINE void check_reuse(void)
{
	struct unwind_fast_stats before, after;
	unwind_fast_stats(&before);
	where = "reuse";
	rec_o2(30);
	unwind_fast_stats(&after);
	if (after.reused - before.reused < 2) {
		fprintf(stderr, "FAIL no reuse (%llu)\n",
			(unsigned long long)(after.reused - before.reused));
		failures++;
	}
	/* the same stack again: its whole walk is taken from the file of
	 * recent walks, and still equals libunwind's */
	unwind_fast_stats(&before);
	where = "recalled";
	rec_o2(8);
	rec_o2(8);
	twins();
	unwind_fast_stats(&after);
	if (after.recalled - before.recalled < 4) {
		fprintf(stderr, "FAIL no recalled walks (%llu)\n",
			(unsigned long long)(after.recalled - before.recalled));
		failures++;
	}
}

/* Walk keys (unwind.h): a walk taken back from the file has the key it
 * was filed with, a walk filed elsewhere another; libunwind gives none. */
static NOINLINE void key_here(uint64_t *key)
{
	uintptr_t ips[HS_DEPTH_MAX];
	unwind_capture(ips, HS_DEPTH_MAX, key);
	BARRIER();
}

static NOINLINE void check_keys(void)
{
	uint64_t key[4], there;
	struct unwind_fast_stats before, after;
	/* one call site: the first walk also learns the way through the
	 * unwinder's own frames and is filed from there, the second is filed
	 * past them, the third and fourth are taken back */
	unwind_fast_stats(&before);
	ONE_CALL_SITE
	for (int i = 0; i < 4; i++)
		key_here(&key[i]);
	unwind_fast_stats(&after);
	key_here(&there); /* another call site: another stack */
	if (!key[2] || key[3] != key[2] || !there || there == key[2] ||
	    after.recalled - before.recalled < 2) {
		fprintf(stderr, "FAIL walk keys %#llx, again %#llx (%s), "
			"elsewhere %#llx\n", (unsigned long long)key[2],
			(unsigned long long)key[3],
			after.recalled - before.recalled < 2 ? "not recalled"
							      : "recalled",
			(unsigned long long)there);
		failures++;
	}
	unwind_init("libunwind");
	key_here(&key[0]);
	unwind_init("fast");
	if (key[0]) {
		fprintf(stderr, "FAIL libunwind gave a walk key\n");
		failures++;
	}
}

/* What a capture says of the kept walk (unwind.h): two captures under
 * the same outer frames share them, position for position from the
 * outermost; libunwind keeps no walk. */
static struct unwind_walk walk_seen[2];
static uintptr_t walk_ips[2][HS_DEPTH_MAX];
static int walk_n[2];

static NOINLINE void walk_here(int k)
{
	walk_n[k] = unwind_capture_walk(walk_ips[k], HS_DEPTH_MAX,
					&walk_seen[k]);
	BARRIER();
}

static NOINLINE void walk_inner(int k, int d)
{
	if (d > 0)
		walk_inner(k, d - 1);
	else
		walk_here(k);
	BARRIER();
}

static NOINLINE void walk_outer(int d)
{
	walk_inner(0, d);      /* d + 2 frames inside this one */
	walk_inner(1, d + 3);  /* d + 5, from another call site */
	BARRIER();
}

static NOINLINE void check_walks(void)
{
	where = "walks";
	walk_outer(4);
	const struct unwind_walk *a = &walk_seen[0], *b = &walk_seen[1];
	/* the frames outside walk_outer's, whose return address differs:
	 * all but walk_here's, walk_inner's 5 and walk_outer's */
	int outer = walk_n[0] - 7;
	int same = 0;
	while (same < walk_n[0] && same < walk_n[1] &&
	       walk_ips[0][walk_n[0] - 1 - same] ==
		       walk_ips[1][walk_n[1] - 1 - same])
		same++;
	cases++;
	if (!a->kept || b->prior != a->kept || b->kept == b->prior ||
	    !b->rooted || b->shared < outer || b->shared > same ||
	    walk_n[1] != walk_n[0] + 3) {
		fprintf(stderr, "FAIL walks: kept %llu, then prior %llu kept "
			"%llu rooted %d shared %d (outer %d, same %d), %d "
			"then %d frames\n", (unsigned long long)a->kept,
			(unsigned long long)b->prior,
			(unsigned long long)b->kept, b->rooted, b->shared,
			outer, same, walk_n[0], walk_n[1]);
		failures++;
	}
	unwind_init("libunwind");
	walk_here(0);
	unwind_init("fast");
	cases++;
	if (walk_seen[0].kept || walk_seen[0].rooted) {
		fprintf(stderr, "FAIL libunwind said it kept a walk\n");
		failures++;
	}
}

int main(void)
{
	if (unwind_init("fast")) {
		printf("1..0 # SKIP fast unwinder not available here\n");
		return 77;
	}
	run_all();
	check_reuse();
	check_keys();
	check_walks();
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, NULL) == 0)
		pthread_join(th, NULL);
	else
		failures++;
	unwind_init("libunwind");
	printf("%d cases, %d failures\n", cases, failures);
	return failures ? 1 : 0;
}
