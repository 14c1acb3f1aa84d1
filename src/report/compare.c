/* Several traces' growth figures side by side, one line each: the same
 * program under different allocators, say. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analysis.h"
#include "analyze/recording.h"
#include "base/error.h"
#include "words.h"
#include "writers.h"

int recording_write(FILE *o, const struct recording_trace *v, size_t n,
		    size_t main_i)
{
	fprintf(o, "Traces of this recording (main: the one with batch marks, "
		   "else the most events):\n");
	fprintf(o, "  %-28s %-40s %8s %8s %10s %6s\n", "trace", "program",
		"pid", "parent", "events", "marks");
	for (size_t i = 0; i < n; i++) {
		const struct recording_trace *t = &v[i];
		char prog[41];
		const char *p = t->program ? t->program : "?";
		if (strlen(p) >= sizeof(prog))
			snprintf(prog, sizeof(prog), "%.37s...", p);
		else
			snprintf(prog, sizeof(prog), "%s", p);
		fprintf(o, "  %-28.28s %-40s %8" PRIu64 " %8" PRIu64
			   " %10" PRIu64 " %6" PRIu64 "%s%s\n",
			words_file(t->path), prog,
			t->pid, t->ppid, t->events, t->marks,
			i == main_i ? "  main" : "",
			t->complete ? "" : "  (incomplete)");
	}
	return 0;
}

int compare_one_recording(struct analysis *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (i != j && (v[i]->ppid == v[j]->pid ||
				       v[i]->pid == v[j]->pid))
				return 1;
	return 0;
}

/* The processes of the analyses, when they are one recording's traces. */
static int processes(FILE *o, struct analysis *const *v, size_t n)
{
	if (!compare_one_recording(v, n))
		return 0;
	struct recording_trace *t = calloc(n, sizeof(*t));
	uint64_t *ev = calloc(n, sizeof(*ev)), *mk = calloc(n, sizeof(*mk));
	char (*prog)[64] = calloc(n, sizeof(*prog));
	int rc = -1;
	if (!t || !ev || !mk || !prog) {
		hs_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct analysis *a = v[i];
		t[i].path = a->path;
		t[i].program = (char *)recording_program(
			a->exe, a->argv + (a->argc > 0),
			a->argc > 0 ? a->argc - 1 : 0, prog[i],
			sizeof(prog[i]));
		t[i].pid = a->pid;
		t[i].ppid = a->ppid;
		t[i].events = ev[i] = a->events;
		t[i].marks = mk[i] = a->batch_marks;
		t[i].complete = a->complete;
	}
	fputc('\n', o);
	rc = recording_write(o, t, n, recording_main(ev, mk, n));
out:
	free(t);
	free(ev);
	free(mk);
	free(prog);
	return rc;
}

int compare_write(FILE *o, struct analysis *const *v, size_t n,
		  const struct report_opts *opts)
{
	char live[32], rss[32], ret[32], other[32], use[32], mapped[32];
	(void)opts;
	fprintf(o, "heapslope analyze: %zu traces side by side (bytes per "
		   "batch, after each one's warm-up)\n\n", n);
	fprintf(o, "  %-28s %-10s %7s %10s %10s %10s %10s %10s %10s  %s\n",
		"trace", "allocator", "batches", "live", "RSS", "retained",
		"mapped", "other", "in use", "verdict");
	for (size_t i = 0; i < n; i++) {
		const struct analysis *a = v[i];
		const struct growth *g = &a->growth;
		words_bytes(g->live.slope, live, sizeof(live));
		snprintf(rss, sizeof(rss), "-");
		snprintf(ret, sizeof(ret), "-");
		snprintf(other, sizeof(other), "-");
		snprintf(use, sizeof(use), "-");
		snprintf(mapped, sizeof(mapped), "-");
		if (g->has_maps)
			words_bytes(g->mapped.slope, mapped, sizeof(mapped));
		if (g->has_rss)
			words_bytes(g->rss.slope, rss, sizeof(rss));
		if (g->has_decomposition) {
			words_bytes(g->retained.slope, ret, sizeof(ret));
			words_bytes(g->other_slope, other, sizeof(other));
		}
		if (g->has_mallinfo)
			words_bytes(g->in_use.slope, use, sizeof(use));
		fprintf(o, "  %-28.28s %-10.10s %7zu %10s %10s %10s %10s %10s "
			   "%10s  %s\n",
			words_file(a->path), a->allocator ? a->allocator : "?",
			a->series.n, live, rss, ret, mapped, other, use,
			words_verdict(a->verdict.verdict));
	}
	fprintf(o, "\n  live: the live heap's slope; RSS = live + retained "
		   "(free memory inside glibc's heap) + mapped (by the program "
		   "itself) + other; in use: glibc's mallinfo2.  '-': not known "
		   "for this trace or allocator.\n");
	if (processes(o, v, n))
		return -1;
	if (fflush(o) != 0 || ferror(o))
		return hs_error("cannot write the report");
	return 0;
}
