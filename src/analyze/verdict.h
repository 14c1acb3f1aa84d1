/* The one-word answer: leak, retention, fragmentation, mixed, mapped,
 * touching, other or stable, from the slopes of the live heap L, RSS R,
 * the program's own mappings M and the allocator's retained memory T
 * (bytes per batch). */
#ifndef HS_VERDICT_H
#define HS_VERDICT_H

#include <stddef.h>

/* Named by words_verdict (report/words.h). */
enum verdict {
	VERDICT_STABLE,
	VERDICT_LEAK,
	VERDICT_RETENTION,
	VERDICT_FRAGMENTATION,
	VERDICT_MIXED,
	VERDICT_MAPPED,   /* growth outside malloc: the program's mappings */
	VERDICT_TOUCHING, /* RSS rises into memory already held */
	VERDICT_OTHER,    /* RSS grows outside all that is recorded */
};

struct stack_growth;

struct verdict_input {
	size_t points;           /* batches in the regression */
	double live_slope, live_r2, live_mean;
	int has_rss;
	double rss_slope, rss_r2, rss_mean;
	/* the allocator's footprint (mallinfo2 arena + hblkhd), preferred
	 * over RSS when known: RSS also counts the recorder's buffers */
	int has_heap;
	double heap_slope, heap_r2, heap_mean;
	/* every ranked stack, for how much of the growth is still live at
	 * the end of the trace */
	const struct stack_growth *stacks;
	size_t nstacks;
	int complete;            /* the run's end was recorded (END, not a stop) */
	int killed;              /* that end was a signal's: exit never came */
	int has_exiting;         /* the trace says when exit began */
	/* glibc's free pages below live blocks at the last batch: whether
	 * any are known, and the share held down by blocks of stacks that
	 * grow (the program keeps them, and they keep the pages) */
	int has_pins;
	double pinned_by_growing;
	/* the memory the program mapped itself (trace with HS_OPT_MAPS) */
	int has_maps;
	double mapped_slope, mapped_r2, mapped_mean;
	/* what glibc retains (holes + free top), when its layout is known */
	int has_retained;
	double retained_slope;
	/* RSS and the memory held (live heap + mapped) at the first and the
	 * last batch of the regression, for `touching` */
	double rss_first, rss_last, held_first, held_last;
};

struct verdict_why {
	enum verdict verdict;
	int live_grows, rss_grows, mapped_grows;
	double ratio;            /* L / R, when both are known */
	int r_is_heap;           /* R is the allocator's footprint, not RSS */
	double leaked_share;     /* of the growing stacks' slope, the part
				  * whose bytes are still live at the end */
	double exit_share;       /* the same, live when exit began */
	char text[768];          /* one or two sentences with the numbers */
};

void verdict_decide(const struct verdict_input *in, struct verdict_why *out);

#endif
