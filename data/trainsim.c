/* trainsim: a training-loop simulator with exactly known heap behaviour.
 *
 * usage: trainsim [--batches N] [--ops N] [--no-leak]
 *                 [--regions | --regions-per-op]
 *        (defaults: 50 batches, 20000 operations per batch)
 *
 * Each batch, B = --batches, P = --ops:
 *   - zero_grad_buffers: 4 calloc(1024, 4), freed at the end of the batch;
 *   - P operations: a malloc of 16 B..64 KiB (fixed-seed xorshift; 70% of
 *     16..256 B, 25% of 257..4096 B, 5% of 4097..65536 B) from one of 30
 *     call sites (functions embedding_lookup .. param_shard_copy, each in
 *     one phase) at call depth 5..15, counting main as
 *     depth 1: main > run_batch > forward_pass | backward_pass |
 *     optimizer_step > descend x1..11 > site.  The block replaces a random
 *     slot of a pool of 256 live temporaries, whose old block is freed, so
 *     frees are not LIFO; the pool is emptied at the end of the batch;
 *   - 100 calls of leak_activation_history, spread over the operations:
 *     malloc(1024) each, never freed (102,400 B per batch), always from the
 *     same stack (main > run_batch > forward_record > record_activations
 *     > leak_activation_history);
 *   - accumulate_gradients: malloc(128), 8 reallocs doubling it to
 *     32,768 B, free;
 *   - cache_batch_stats: one malloc(10240) appended to a cache (a list
 *     linked through the blocks themselves, so it costs nothing else),
 *     freed entirely before main returns (10,240 B per batch);
 *   - HEAPSLOPE_MARK_BATCH().
 * --no-leak drops leak_activation_history and cache_batch_stats.
 * --regions: each batch runs in region "step", and its operations phase by
 * phase (all the forward ones in their order, then the backward ones, then
 * the optimizer's), each phase in a region inside "step" named after it
 * ("forward", "backward", "optimizer"; the leaks go with the forward
 * phase), as a training step runs; --regions-per-op: the operations in
 * their mixed order, each in a region of its phase (two region records per
 * operation, the most a program would write).  Counts, sizes, stacks and
 * the live bytes at each mark are the same.
 *
 * Exact counts (the counting rules of DESIGN.md; the program itself does
 * no other allocation, its summary goes out through snprintf and write):
 *                        default              --no-leak
 *   allocations          B * (P + 106)        B * (P + 5)
 *   reallocs             B * 8                B * 8
 *   frees                B * (P + 6)          B * (P + 5)
 *   failed_allocations   0                    0
 *   marks                B                    B
 *   live bytes at mark b b * 112,640          0          (b = 1..B)
 *   leaked at exit       100 * B blocks,      0
 *                        102,400 * B bytes
 *   allocated_bytes      printed in the summary (it depends on P; realloc
 *                        counts its new size, as in dump --stats)
 * With the defaults: allocations 1,005,300, reallocs 400, frees 1,000,300,
 * events 2,006,000, live bytes 112,640 per batch, leaked 5,000 blocks /
 * 5,120,000 bytes, allocated_bytes 2,384,821,807 (--no-leak: allocations
 * and frees 1,000,250, allocated_bytes 2,379,189,807).  Distinct
 * allocation stacks: 30 sites x 11 depths + 5 fixed ones (zero_grad,
 * leak, cache, the malloc and the realloc of accumulate_gradients) = 335,
 * 333 with --no-leak, once every (site, depth) has come up, as it does
 * with the defaults (gcc; clang unrolls the calloc and realloc loops into
 * one call site each: 345).
 *
 * The summary line on stdout: "trainsim: batches=B ops=P leak=on|off
 * allocations=A reallocs=R frees=F allocated_bytes=N leaked_bytes=L".
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapslope.h"

#if defined(__has_attribute) && __has_attribute(noclone)
#define NOINLINE __attribute__((noinline, noclone))
#else
#define NOINLINE __attribute__((noinline))
#endif
/* after a call: keeps the caller's frame, so no sibling call flattens the
 * stack */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

enum {
	SITES = 30,
	MAX_DESCEND = 11,
	POOL_SLOTS = 256,
	ZERO_BUFFERS = 4,
	ZERO_COUNT = 1024,
	ZERO_SIZE = 4,
	LEAK_BLOCKS = 100,
	LEAK_SIZE = 1024,
	GROW_START = 128,
	GROW_STEPS = 8,
	CACHE_SIZE = 10240,
};

struct op {
	unsigned site;
	unsigned slot;
	size_t size;
};

struct cache_entry {
	struct cache_entry *next;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static unsigned char *pool[POOL_SLOTS];
static void *zeroed[ZERO_BUFFERS];
static struct cache_entry *cache;
static void *volatile last_activation;
static void *volatile sink;

static struct {
	uint64_t allocations, reallocs, frees, allocated_bytes, leaked_bytes;
} count;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t pick_size(void)
{
	uint64_t r = next_random();
	unsigned cls = (unsigned)(r % 100);
	r >>= 8;
	if (cls < 70)
		return 16 + r % (256 - 16 + 1);
	if (cls < 95)
		return 257 + r % (4096 - 257 + 1);
	return 4097 + r % (65536 - 4097 + 1);
}

static NOINLINE void out_of_memory(void)
{
	static const char msg[] = "trainsim: out of memory\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void pool_put(unsigned slot, unsigned char *p)
{
	unsigned char *old = pool[slot];
	pool[slot] = p;
	if (old) {
		free(old);
		count.frees++;
	}
}

static void pool_drain(void)
{
	for (unsigned i = 0; i < POOL_SLOTS; i++)
		pool_put(i, NULL);
}

/* A macro, not a function: the frame that calls malloc is the named
 * function itself, with no inlined helper in its debug info. */
#define COUNTED_MALLOC(p, size)                                           \
	do {                                                              \
		(p) = malloc(size);                                       \
		if (!(p))                                                 \
			out_of_memory();                                  \
		count.allocations++;                                      \
		count.allocated_bytes += (size);                          \
	} while (0)

/* 30 allocation sites, each its own function (distinct constants keep
 * identical-code folding away). */
#define SITE(n, name)                                                     \
	static NOINLINE void name(const struct op *op)                    \
	{                                                                 \
		unsigned char *p;                                         \
		COUNTED_MALLOC(p, op->size);                              \
		p[0] = (unsigned char)(n);                                \
		p[op->size - 1] = (unsigned char)((n) * 7 + 1);           \
		pool_put(op->slot, p);                                    \
	}

SITE(0, embedding_lookup)
SITE(1, positional_encoding)
SITE(2, attention_query)
SITE(3, attention_key)
SITE(4, attention_value)
SITE(5, attention_scores)
SITE(6, attention_softmax)
SITE(7, attention_output)
SITE(8, layer_norm_forward)
SITE(9, feed_forward_up)
SITE(10, feed_forward_act)
SITE(11, feed_forward_down)
SITE(12, residual_add)
SITE(13, dropout_mask)
SITE(14, logits_projection)
SITE(15, loss_cross_entropy)
SITE(16, loss_grad)
SITE(17, logits_grad)
SITE(18, feed_forward_grad)
SITE(19, attention_grad)
SITE(20, layer_norm_backward)
SITE(21, embedding_grad)
SITE(22, grad_clip_norm)
SITE(23, grad_allreduce_chunk)
SITE(24, adam_moment1)
SITE(25, adam_moment2)
SITE(26, adam_update)
SITE(27, weight_decay)
SITE(28, lr_schedule_state)
SITE(29, param_shard_copy)

static void (*const sites[SITES])(const struct op *) = {
	embedding_lookup, positional_encoding, attention_query,
	attention_key, attention_value, attention_scores, attention_softmax,
	attention_output, layer_norm_forward, feed_forward_up,
	feed_forward_act, feed_forward_down, residual_add, dropout_mask,
	logits_projection, loss_cross_entropy, loss_grad, logits_grad,
	feed_forward_grad, attention_grad, layer_norm_backward,
	embedding_grad, grad_clip_norm, grad_allreduce_chunk, adam_moment1,
	adam_moment2, adam_update, weight_decay, lr_schedule_state,
	param_shard_copy,
};

/* Nested layers: levels frames of this function above the site. */
static NOINLINE void descend(unsigned levels, const struct op *op)
{
	if (levels > 1)
		descend(levels - 1, op);
	else
		sites[op->site](op);
	KEEP_FRAME();
}

static NOINLINE void forward_pass(unsigned levels, const struct op *op)
{
	descend(levels, op);
	KEEP_FRAME();
}

static NOINLINE void backward_pass(unsigned levels, const struct op *op)
{
	descend(levels, op);
	KEEP_FRAME();
}

static NOINLINE void optimizer_step(unsigned levels, const struct op *op)
{
	descend(levels, op);
	KEEP_FRAME();
}

/* The bug: one activation block per call kept and never freed. */
static NOINLINE void leak_activation_history(void)
{
	unsigned char *p;
	COUNTED_MALLOC(p, LEAK_SIZE);
	memset(p, 0xa5, 64);
	last_activation = p;
	count.leaked_bytes += LEAK_SIZE;
}

static NOINLINE void record_activations(void)
{
	leak_activation_history();
	KEEP_FRAME();
}

/* Called from forward_pass's own frame so the leak has one fixed stack. */
static NOINLINE void forward_record(void)
{
	record_activations();
	KEEP_FRAME();
}

static NOINLINE void zero_grad_buffers(void)
{
	for (int i = 0; i < ZERO_BUFFERS; i++) {
		zeroed[i] = calloc(ZERO_COUNT, ZERO_SIZE);
		if (!zeroed[i])
			out_of_memory();
		count.allocations++;
		count.allocated_bytes += ZERO_COUNT * ZERO_SIZE;
	}
}

static void free_zeroed(void)
{
	for (int i = 0; i < ZERO_BUFFERS; i++) {
		free(zeroed[i]);
		zeroed[i] = NULL;
		count.frees++;
	}
}

/* A growing buffer: malloc, then realloc doubling it. */
static NOINLINE void accumulate_gradients(void)
{
	size_t size = GROW_START;
	unsigned char *buf;
	COUNTED_MALLOC(buf, size);
	buf[0] = 1;
	for (int i = 0; i < GROW_STEPS; i++) {
		size *= 2;
		unsigned char *nb = realloc(buf, size);
		if (!nb)
			out_of_memory();
		buf = nb;
		buf[size - 1] = (unsigned char)i;
		count.reallocs++;
		count.allocated_bytes += size;
	}
	sink = buf;
	free(buf);
	count.frees++;
}

/* Retention: a per-batch record kept in a cache until exit. */
static NOINLINE void cache_batch_stats(unsigned batch)
{
	struct cache_entry *e;
	COUNTED_MALLOC(e, CACHE_SIZE);
	memset(e, 0, 64);
	((unsigned char *)e)[CACHE_SIZE - 1] = (unsigned char)batch;
	e->next = cache;
	cache = e;
}

static void free_cache(void)
{
	while (cache) {
		struct cache_entry *next = cache->next;
		free(cache);
		count.frees++;
		cache = next;
	}
}

/* --regions: 1, each phase of a batch in a region of its own (the
 * operations run phase by phase); 2, each operation in one (--regions-per-op) */
static int regions;

static inline void region_begin(const char *name)
{
	if (regions)
		HEAPSLOPE_REGION_BEGIN(name);
}

static inline void region_end(void)
{
	if (regions)
		HEAPSLOPE_REGION_END();
}

enum phase { FORWARD, BACKWARD, OPTIMIZER, PHASES };
static const char *const phase_names[PHASES] = { "forward", "backward",
						  "optimizer" };

static enum phase phase_of(unsigned site)
{
	return site < 16 ? FORWARD : site < 24 ? BACKWARD : OPTIMIZER;
}

/* The batch's operations of one phase (all of them: PHASES), in their
 * order; the random numbers of the others are drawn all the same, so
 * that each operation is the same whichever phase runs it.  Inlined:
 * run_batch stays the caller of the phases and of forward_record, as the
 * stacks above say. */
static inline __attribute__((always_inline)) void
run_ops(unsigned long ops, int leak, enum phase only, unsigned *leaks)
{
	for (unsigned long i = 0; i < ops; i++) {
		/* leak j happens before operation floor(j * ops / 100) */
		while (leak && *leaks < LEAK_BLOCKS &&
		       (uint64_t)*leaks * ops <= (uint64_t)i * LEAK_BLOCKS &&
		       (only == PHASES || only == FORWARD)) {
			if (regions == 2)
				region_begin("forward");
			forward_record();
			if (regions == 2)
				region_end();
			(*leaks)++;
		}
		struct op op;
		uint64_t r = next_random();
		op.site = (unsigned)(r % SITES);
		unsigned levels = 1 + (unsigned)((r >> 8) % MAX_DESCEND);
		op.slot = (unsigned)((r >> 16) % POOL_SLOTS);
		op.size = pick_size();
		enum phase ph = phase_of(op.site);
		if (only != PHASES && ph != only)
			continue;
		if (regions == 2)
			region_begin(phase_names[ph]);
		if (ph == FORWARD)
			forward_pass(levels, &op);
		else if (ph == BACKWARD)
			backward_pass(levels, &op);
		else
			optimizer_step(levels, &op);
		if (regions == 2)
			region_end();
	}
}

static NOINLINE void run_batch(unsigned batch, unsigned long ops, int leak)
{
	unsigned leaks = 0;
	region_begin("step");
	zero_grad_buffers();
	if (regions == 1) {
		/* phase by phase, each drawing the batch's numbers again */
		uint64_t start = rng, end = rng;
		for (enum phase ph = FORWARD; ph < PHASES; ph++) {
			rng = start;
			region_begin(phase_names[ph]);
			run_ops(ops, leak, ph, &leaks);
			region_end();
			end = rng;
		}
		rng = end;
	} else {
		run_ops(ops, leak, PHASES, &leaks);
	}
	while (leak && leaks < LEAK_BLOCKS) {
		region_begin("forward");
		forward_record();
		region_end();
		leaks++;
	}
	accumulate_gradients();
	free_zeroed();
	pool_drain();
	if (leak)
		cache_batch_stats(batch);
	region_end();
	HEAPSLOPE_MARK_BATCH();
}

static int parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v > max)
		return -1;
	*out = v;
	return 0;
}

static void usage(void)
{
	fputs("usage: trainsim [--batches N] [--ops N] [--no-leak] "
	      "[--regions | --regions-per-op]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long batches = 50, ops = 20000;
	int leak = 1;
	char line[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--batches")) {
			if (parse_count(argv[++i], 10000000, &batches))
				usage();
		} else if (!strcmp(argv[i], "--ops")) {
			if (parse_count(argv[++i], 1000000000, &ops))
				usage();
		} else if (!strcmp(argv[i], "--no-leak")) {
			leak = 0;
		} else if (!strcmp(argv[i], "--regions")) {
			regions = 1;
		} else if (!strcmp(argv[i], "--regions-per-op")) {
			regions = 2;
		} else {
			usage();
		}
	}
	for (unsigned long b = 0; b < batches; b++)
		run_batch((unsigned)b, ops, leak);
	free_cache();

	/* snprintf and write: no stdio buffer, so no allocation of ours */
	int n = snprintf(line, sizeof(line),
			 "trainsim: batches=%lu ops=%lu leak=%s allocations=%"
			 PRIu64 " reallocs=%" PRIu64 " frees=%" PRIu64
			 " allocated_bytes=%" PRIu64 " leaked_bytes=%" PRIu64
			 "\n", batches, ops, leak ? "on" : "off",
			 count.allocations, count.reallocs, count.frees,
			 count.allocated_bytes, count.leaked_bytes);
	if (n > 0 && write(1, line, (size_t)n) != n)
		return 1;
	return 0;
}
