/* The verdict from L, the live heap's slope, R, the slope of RSS (the
 * recorder keeps its own memory resident from the start, so RSS growth is
 * the program's) or of the allocator's footprint (mallinfo2 arena +
 * hblkhd) when the trace has no RSS samples, M, the slope of the memory
 * the program maps itself (with mapping records), and T, the slope of
 * what glibc retains (holes + free top, when its layout is known).
 * Thresholds (in heapslope-analyze(1) too, and in the "why" line of the
 * text report):
 *
 * - A series grows when its fitted rise over the regression window,
 *   slope x (n - 1) for n batches, is at least 16 KiB for the live heap
 *   and M or 256 KiB for R (which moves in pages and arena steps), with
 *   R² >= 0.5, and at least 1% of the series' mean unless R² >= 0.9 (a
 *   steady line grows however big the series is).  Fewer than 3
 *   batches after the warm-up: too few to say anything, "stable".
 * - None grows: stable.
 * - M grows, at least as fast as L (or L does not grow), and R does not
 *   grow or M >= 0.5 R: mapped.
 * - L grows and R does not, or L >= 0.5 R: leak or retention.
 * - Otherwise R grows and neither L nor M explains it:
 *   - T >= 0.5 R (glibc): fragmentation, or mixed when (L + M) >= 0.2 R;
 *     a fragmentation whose pinned free pages lie, for half or more,
 *     below blocks of growing stacks while L grows says so: the program
 *     keeps the blocks that hold the freed memory in place;
 *   - neither L nor M grows, RSS started below the memory held (live +
 *     mapped) at the first batch of the regression and rose, up to the
 *     last, by no more than the memory held at the last: touching (the
 *     program touches pages it already holds);
 *   - (L + M) >= 0.2 R: mixed;
 *   - T unknown (another allocator): fragmentation;
 *   - else: other (RSS grows outside the heap, the allocator's free
 *     memory and the program's mappings: thread stacks, code, memory
 *     nothing recorded).
 * - Leak or retention: of the summed slope of the growing stacks, the
 *   share whose bytes are still live when the trace ends (each stack
 *   weighted by leaked bytes / live bytes at the last batch, at most 1).
 *   At least 0.5: leak; else retention (freed by exit: caches, histories).
 */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stacks.h"

#define GROW_MIN_BYTES (16.0 * 1024)
#define RSS_GROW_MIN_BYTES (256.0 * 1024)
#define GROW_MIN_SHARE 0.01
#define GROW_MIN_R2 0.5
#define STEADY_R2 0.9
#define EXPLAINS 0.5
#define FRAGMENTS 0.2
#define LEAK_SHARE 0.5
#define PINNED_BY_GROWING 0.5

static int grows(double slope, double r2, double mean, size_t points,
		 double min_bytes)
{
	double rise = slope * (double)(points - 1);
	/* a steady line is growth however big the series is */
	return rise >= min_bytes && r2 >= GROW_MIN_R2 &&
	       (rise >= GROW_MIN_SHARE * fabs(mean) || r2 >= STEADY_R2);
}

/* Of the growing stacks' summed slope, the share whose bytes are still
 * live when the trace ends (at_exit: when exit began), each stack
 * weighted by that / its live bytes at the last batch, at most 1. */
static double leaked_share(const struct verdict_input *in, int at_exit)
{
	double all = 0, leaked = 0;
	for (size_t i = 0; i < in->nstacks; i++) {
		const struct stack_growth *g = &in->stacks[i];
		if (g->bytes_per_batch <= 0)
			break; /* ranked: the rest do not grow */
		uint64_t kept = at_exit ? g->live_at_exit : g->leaked_bytes;
		double f = 1;
		if (g->live_bytes_at_end > kept)
			f = (double)kept / (double)g->live_bytes_at_end;
		all += g->bytes_per_batch;
		leaked += g->bytes_per_batch * f;
	}
	return all > 0 ? leaked / all : 0;
}

/* RSS rises into memory the program already holds. */
static int touching(const struct verdict_input *in)
{
	return in->has_rss && in->rss_first < in->held_first &&
	       in->rss_last - in->rss_first <= in->held_last;
}

/* R grows and neither L nor M explains it alone. */
static const char *unexplained(const struct verdict_input *in,
			       struct verdict_why *out, double R)
{
	const double held = in->live_slope +
			    (in->has_maps ? in->mapped_slope : 0);
	const int part = held >= FRAGMENTS * R &&
			 (out->live_grows || out->mapped_grows);
	if (in->has_retained && in->retained_slope >= EXPLAINS * R) {
		out->verdict = part ? VERDICT_MIXED : VERDICT_FRAGMENTATION;
		if (part)
			return "glibc's retained memory explains most of R (T "
			       ">= 0.5 R) and the live heap and mappings part "
			       "((L + M) >= 0.2 R): both matter";
		if (out->live_grows && in->has_pins &&
		    in->pinned_by_growing >= PINNED_BY_GROWING)
			return "glibc's retained memory (holes and free top) "
			       "explains most of R (T >= 0.5 R), and most of "
			       "the free pages it keeps lie below blocks of "
			       "the growing stacks (>= 0.5 of those pinned): "
			       "blocks the program keeps every batch hold the "
			       "freed memory in place; the growing stacks are "
			       "the cause to look at first";
		return "glibc's retained memory (holes and free top) "
		       "explains most of R (T >= 0.5 R): the allocator "
		       "keeps freed memory";
	}
	if (!out->live_grows && !out->mapped_grows && touching(in)) {
		out->verdict = VERDICT_TOUCHING;
		return "R rises while the live heap and the mappings stay flat, "
		       "from below them and by no more than they hold: the "
		       "program touches pages of memory it already holds, not "
		       "fragmentation";
	}
	if (part) {
		out->verdict = VERDICT_MIXED;
		return "the live heap and mappings explain only part of R "
		       "(0.2 <= (L + M)/R < 0.5): they and the rest both matter";
	}
	if (!in->has_retained) {
		out->verdict = VERDICT_FRAGMENTATION;
		return out->live_grows
			       ? "R grows over 5x faster than the live heap "
				 "(L/R < 0.2): the allocator keeps freed memory"
			       : "R grows while the live heap does not: the "
				 "allocator keeps freed memory";
	}
	out->verdict = VERDICT_OTHER;
	return "R grows, but neither the live heap, glibc's retained memory "
	       "nor the program's mappings explain it: thread stacks, code, "
	       "first touches of pages the program holds, or memory nothing "
	       "recorded";
}

void verdict_decide(const struct verdict_input *in, struct verdict_why *out)
{
	*out = (struct verdict_why){ .verdict = VERDICT_STABLE };
	const int use_heap = !in->has_rss && in->has_heap;
	out->r_is_heap = use_heap;
	const int has_r = in->has_heap || in->has_rss;
	const double L = in->live_slope;
	const double M = in->has_maps ? in->mapped_slope : 0;
	const double R = use_heap ? in->heap_slope : in->rss_slope;
	const double R_r2 = use_heap ? in->heap_r2 : in->rss_r2;
	const double R_mean = use_heap ? in->heap_mean : in->rss_mean;
	out->leaked_share = leaked_share(in, 0);
	out->exit_share = leaked_share(in, 1);
	if (in->points < 3) {
		snprintf(out->text, sizeof(out->text),
			 "only %zu batches after warm-up: too few to measure "
			 "growth (need 3)", in->points);
		return;
	}
	out->live_grows = grows(L, in->live_r2, in->live_mean, in->points,
				GROW_MIN_BYTES);
	out->rss_grows = has_r && grows(R, R_r2, R_mean, in->points,
					RSS_GROW_MIN_BYTES);
	out->mapped_grows = in->has_maps &&
			    grows(M, in->mapped_r2, in->mapped_mean,
				  in->points, GROW_MIN_BYTES);
	out->ratio = has_r && R != 0 ? L / R : 0;
	char rs[160] = "R unknown (no samples)";
	if (use_heap)
		snprintf(rs, sizeof(rs), "allocator footprint R %+.0f B/batch "
			 "(R2 %.2f; no RSS samples)", R, R_r2);
	else if (in->has_rss && in->has_heap)
		snprintf(rs, sizeof(rs), "RSS R %+.0f B/batch (R2 %.2f; "
			 "allocator footprint %+.0f B/batch)", R, R_r2,
			 in->heap_slope);
	else if (in->has_rss)
		snprintf(rs, sizeof(rs), "RSS R %+.0f B/batch (R2 %.2f)", R,
			 R_r2);
	char ms[96] = "";
	if (in->has_maps)
		snprintf(ms, sizeof(ms), ", mapped M %+.0f B/batch (R2 %.2f)",
			 M, in->mapped_r2);
	if (in->has_retained)
		snprintf(ms + strlen(ms), sizeof(ms) - strlen(ms),
			 ", retained T %+.0f", in->retained_slope);
	const char *reason;
	const int m_first = out->mapped_grows &&
			    (!out->live_grows || M >= L) &&
			    (!out->rss_grows || M >= EXPLAINS * R);
	if (!out->live_grows && !out->rss_grows && !out->mapped_grows) {
		reason = "neither grows beyond noise (a rise over the window of "
			 "16 KiB live or mapped / 256 KiB R, R2 0.5, and 1% "
			 "of the mean below R2 0.9)";
	} else if (m_first) {
		out->verdict = VERDICT_MAPPED;
		reason = "the program's own mappings grow, at least as fast as "
			 "the live heap, and explain most of R (M >= 0.5 R): "
			 "growth outside malloc";
	} else if (out->live_grows &&
		   (!out->rss_grows || out->ratio >= EXPLAINS)) {
		if (out->leaked_share >= LEAK_SHARE) {
			out->verdict = VERDICT_LEAK;
			reason = in->complete && in->killed
					 ? "the live heap grows and the growing "
					   "blocks are still live when a "
					   "signal killed the process (exit "
					   "was not seen; leaked share >= 0.5)"
				 : in->complete
					 ? "the live heap grows and the growing "
					   "blocks are still live at exit "
					   "(leaked share >= 0.5)"
					 : "the live heap grows and the growing "
					   "blocks are still live when the "
					   "trace ends (exit was not seen: "
					   "the trace is incomplete, or its "
					   "recording stopped)";
		} else {
			out->verdict = VERDICT_RETENTION;
			reason = in->complete && in->has_exiting &&
						 out->exit_share >= LEAK_SHARE
					 ? "the live heap grows and the growing "
					   "blocks are freed only as the "
					   "process exits (leaked share < 0.5, "
					   "but >= 0.5 still live when exit "
					   "began: exit handlers or the "
					   "interpreter's finalization free "
					   "them): a cache or history that "
					   "grows for as long as it runs"
					 : "the live heap grows but the growing "
					   "blocks are freed by exit (leaked "
					   "share < 0.5): a cache or history";
		}
	} else {
		reason = unexplained(in, out, R);
	}
	char ratio[32] = "L/R -";
	if (has_r && R != 0)
		snprintf(ratio, sizeof(ratio), "L/R %.2f", out->ratio);
	snprintf(out->text, sizeof(out->text),
		 "live heap L %+.0f B/batch (R2 %.2f), %s%s; %s, leaked share "
		 "%.2f: %s", L, in->live_r2, rs, ms, ratio, out->leaked_share,
		 reason);
}
