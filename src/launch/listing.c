#include "listing.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "format/append.h"
#include "format/summary.h"
#include "format/trace_format.h"

/* How much of a trace without END is read to count its events and
 * marks (about a second): a program killed after a long run leaves a
 * large one, and the list must not keep the user waiting. */
#define COUNT_BYTES ((uint64_t)64 << 20)

struct entry {
	const char *path;
	const char *shown; /* path, relative to the current directory */
	struct hs_summary s;
	int ok;
	char err[256];
	size_t order; /* as reported, to keep ties in that order */
	int listed;
};

/* Parents before children, images in the order they ran. */
static int by_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->ok != y->ok)
		return y->ok - x->ok;
	uint64_t tx = x->s.start_monotonic_ns, ty = y->s.start_monotonic_ns;
	if (x->ok && tx != ty)
		return tx < ty ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The trace of the image that exited: root_pid's last, unless it ended
 * by exec (an image that was not recorded came after it); NULL if no
 * trace is root_pid's. */
static struct entry *exit_target(struct entry *e, size_t n, long root_pid)
{
	struct entry *last = NULL, *exited = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].ok || e[i].s.pid != (uint64_t)root_pid)
			continue;
		last = &e[i]; /* sorted: the later image */
		if (!e[i].s.complete || e[i].s.end_reason != HS_END_EXEC)
			exited = &e[i];
	}
	return exited ? exited : last;
}

/* The one with marks (the most), else the most events. */
static struct entry *main_trace(struct entry *e, size_t n, int *by_marks)
{
	struct entry *m = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].ok)
			continue;
		if (!m || e[i].s.marks > m->s.marks ||
		    (e[i].s.marks == m->s.marks && e[i].s.events > m->s.events))
			m = &e[i];
	}
	*by_marks = m && m->s.marks > 0;
	return m;
}

static void size_text(uint64_t b, char *out, size_t cap)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	if (b < 1024) {
		snprintf(out, cap, "%llu B", (unsigned long long)b);
		return;
	}
	double v = (double)b / 1024;
	int u = 0;
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(out, cap, "%.1f %s", v, unit[u]);
}

/* 1234567 as 1,234,567 */
static void count_text(uint64_t v, char *out, size_t cap)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v), o = 0;
	for (int i = 0; i < n && (size_t)o + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = d[i];
	}
	out[o] = 0;
}

/* Which traces get a line: all if they fit, else the main one, the
 * first (the command record ran, which -o named) and the largest. */
static size_t choose(struct entry *e, size_t n, const struct entry *m,
		     long max)
{
	if (max <= 0 || (size_t)max >= n) {
		for (size_t i = 0; i < n; i++)
			e[i].listed = 1;
		return n;
	}
	size_t k = 0;
	if (m) {
		((struct entry *)m)->listed = 1;
		k++;
	}
	if (k < (size_t)max && !e[0].listed) {
		e[0].listed = 1;
		k++;
	}
	while (k < (size_t)max) {
		struct entry *big = NULL;
		for (size_t i = 0; i < n; i++)
			if (!e[i].listed &&
			    (!big || e[i].s.bytes > big->s.bytes))
				big = &e[i];
		big->listed = 1;
		k++;
	}
	return k;
}

#define COMMAND_MAX 48 /* characters of a command shown */

/* The command on one line: control characters escaped (python3 -c
 * "...\n..."), cut after COMMAND_MAX characters. */
static void command_text(const char *c, char *out, size_t cap)
{
	size_t o = 0;
	if (!c)
		c = "?";
	for (; *c && o + 5 < cap && o < COMMAND_MAX; c++) {
		unsigned char ch = (unsigned char)*c;
		if (ch == '\n' || ch == '\t')
			o += (size_t)snprintf(out + o, cap - o, "\\%c",
					      ch == '\n' ? 'n' : 't');
		else if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = 0;
	if (*c && o + 4 <= cap)
		strcat(out, "...");
}

/* Events and marks; "+" after them when only the first part of a
 * trace without END was counted (they are at least that). */
static void counts_text(const struct hs_summary *s, char ev[32],
			char marks[32])
{
	const char *plus = s->partial ? "+" : "";
	count_text(s->events, ev, 30);
	strcat(ev, plus);
	snprintf(marks, 32, "%llu%s", (unsigned long long)s->marks, plus);
}

static void print_entry(const struct entry *e, int wpath, int wpid,
			int wppid, int wev, int wmarks, int wsize)
{
	char ev[32], marks[32], size[32], cmd[COMMAND_MAX + 16];
	if (!e->ok) {
		fprintf(stderr, "heapslope: trace written to %-*s  (unreadable: "
				"%s)\n", wpath, e->shown, e->err);
		return;
	}
	counts_text(&e->s, ev, marks);
	size_text(e->s.bytes, size, sizeof(size));
	command_text(e->s.command, cmd, sizeof(cmd));
	/* stopped on an error (disk full): the counts are the recorder's,
	 * and what could not be written is not in the file */
	const char *state = !e->s.complete ? "incomplete  "
			    : e->s.end_reason == HS_END_ERROR
				    ? "stopped early, not all in the trace  "
				    : "";
	fprintf(stderr, "heapslope: trace written to %-*s  pid %-*llu  parent "
			"%-*llu  %*s events  %*s marks  %*s  %s%s",
		wpath, e->shown, wpid, (unsigned long long)e->s.pid, wppid,
		(unsigned long long)e->s.ppid, wev, ev, wmarks, marks, wsize,
		size, state, cmd);
	if (e->s.malloc_owner)
		fprintf(stderr, "  (no allocation recorded: the program's "
				"malloc is %s's own)", e->s.malloc_owner);
	fputc('\n', stderr);
}

static int width_u(uint64_t v)
{
	char b[32];
	return snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
}

static void print_list(struct entry *e, size_t n, long max)
{
	int by_marks, wpath = 0, wpid = 0, wppid = 0, wev = 0, wmarks = 0,
		      wsize = 0;
	struct entry *m = main_trace(e, n, &by_marks);
	size_t listed = choose(e, n, m, max);
	uint64_t rest_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		char t[32], ev[32], marks[32];
		int w;
		if (!e[i].listed) {
			rest_bytes += e[i].s.bytes;
			continue;
		}
		if ((w = (int)strlen(e[i].shown)) > wpath)
			wpath = w;
		if (!e[i].ok)
			continue;
		if ((w = width_u(e[i].s.pid)) > wpid)
			wpid = w;
		if ((w = width_u(e[i].s.ppid)) > wppid)
			wppid = w;
		counts_text(&e[i].s, ev, marks);
		if ((w = (int)strlen(ev)) > wev)
			wev = w;
		if ((w = (int)strlen(marks)) > wmarks)
			wmarks = w;
		size_text(e[i].s.bytes, t, sizeof(t));
		if ((w = (int)strlen(t)) > wsize)
			wsize = w;
	}
	if (wpath > 60)
		wpath = 60;
	for (size_t i = 0; i < n; i++)
		if (e[i].listed)
			print_entry(&e[i], wpath, wpid, wppid, wev, wmarks,
				    wsize);
	if (listed < n) {
		char size[32];
		size_text(rest_bytes, size, sizeof(size));
		fprintf(stderr, "heapslope: ... and %zu more traces (%s); "
				"--list all lists every one\n", n - listed, size);
	}
	if (n > 1 && m) {
		char cmd[COMMAND_MAX + 16];
		command_text(m->s.command, cmd, sizeof(cmd));
		fprintf(stderr, "heapslope: main trace: %s (%s: %s)\n",
			m->shown, cmd,
			by_marks ? "the one with marks"
				 : "no marks, the most events");
	}
}

void listing_finish(const struct paths *traces, long root_pid,
		    const char *root, int wait_status,
		    const struct listing_opts *o)
{
	char cwd[PATH_MAX];
	size_t l = getcwd(cwd, sizeof(cwd)) ? strlen(cwd) : 0;
	size_t n = traces->n;
	struct entry *e = calloc(n ? n : 1, sizeof(*e));
	if (!e) {
		fprintf(stderr, "heapslope record: out of memory for the list "
				"of traces\n");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct entry *x = &e[i];
		x->path = x->shown = traces->v[i];
		x->order = i;
		if (l && !strncmp(x->path, cwd, l) && x->path[l] == '/')
			x->shown = x->path + l + 1;
		/* the counts of a trace without END cost a read of it: only
		 * to list it, and only so far */
		x->ok = summary_read(x->path, o->quiet ? 0 : COUNT_BYTES,
				     &x->s) == 0;
		if (!x->ok)
			snprintf(x->err, sizeof(x->err), "%s", hs_last_error());
	}
	qsort(e, n, sizeof(*e), by_start);
	struct entry *t = exit_target(e, n, root_pid);
	const char *target = t ? t->path : root;
	if (target && *target) {
		if (trace_append_exit(target, wait_status))
			fprintf(stderr, "heapslope record: note: %s\n",
				hs_last_error());
		else if (t) {
			struct stat st;
			t->s.has_exit = 1;
			if (stat(t->path, &st) == 0)
				t->s.bytes = (uint64_t)st.st_size;
		}
	}
	if (!o->quiet)
		print_list(e, n, o->max);
	for (size_t i = 0; i < n; i++)
		summary_finish(&e[i].s);
	free(e);
}
