#include "recording.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "format/reader.h"
#include "walk.h"

/* A name of the form base.DIGITS or base.DIGITS.DIGITS; its numbers. */
static int sibling_name(const char *name, const char *base, size_t blen,
			unsigned long long *a, unsigned long long *b)
{
	if (strncmp(name, base, blen) != 0 || name[blen] != '.')
		return 0;
	const char *p = name + blen + 1;
	char *end;
	if (*p < '0' || *p > '9')
		return 0;
	errno = 0;
	*a = strtoull(p, &end, 10);
	*b = 0;
	if (errno)
		return 0;
	if (!*end)
		return 1;
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	*b = strtoull(end + 1, &end, 10);
	return !*end && !errno;
}

struct named {
	char *path;
	unsigned long long a, b;
};

static int by_numbers(const void *x, const void *y)
{
	const struct named *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

void recording_paths_free(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}

int recording_siblings(const char *base, char ***paths, size_t *n)
{
	*paths = NULL;
	*n = 0;
	const char *slash = strrchr(base, '/');
	const char *file = slash ? slash + 1 : base;
	size_t dlen = slash ? (size_t)(slash - base) + 1 : 0;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%.*s", dlen ? (int)dlen : 1,
		 dlen ? base : ".");
	DIR *d = opendir(dir);
	if (!d)
		return 0; /* no siblings to be found: none */
	struct named *v = NULL;
	size_t cap = 0, k = 0, flen = strlen(file);
	struct dirent *e;
	int rc = -1;
	while ((e = readdir(d))) {
		unsigned long long a, b;
		if (!flen || !sibling_name(e->d_name, file, flen, &a, &b))
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			struct named *nv = realloc(v, cap * sizeof(*nv));
			if (!nv)
				goto out;
			v = nv;
		}
		size_t len = dlen + strlen(e->d_name) + 1;
		if (!(v[k].path = malloc(len)))
			goto out;
		snprintf(v[k].path, len, "%.*s%s", (int)dlen, base, e->d_name);
		v[k].a = a;
		v[k].b = b;
		k++;
	}
	if (k)
		qsort(v, k, sizeof(*v), by_numbers);
	if (k && !(*paths = calloc(k, sizeof(**paths))))
		goto out;
	for (size_t i = 0; i < k; i++) {
		(*paths)[i] = v[i].path;
		v[i].path = NULL;
	}
	*n = k;
	rc = 0;
out:
	for (size_t i = 0; i < k; i++)
		free(v[i].path);
	free(v);
	closedir(d);
	return rc ? hs_error("out of memory") : 0;
}

const char *recording_program(const char *exe, char *const *argv, int argc,
			      char *buf, size_t cap)
{
	size_t len = 0;
	if (!cap)
		return buf;
	buf[0] = 0;
	const char *name = exe && *exe ? exe : argc ? argv[0] : "?";
	const char *s = strrchr(name, '/');
	name = s ? s + 1 : name;
	for (int i = 0; i < argc + 1 && len + 1 < cap; i++) {
		const char *w = i ? argv[i - 1] : name;
		if (i && w[0] == '/' && !strchr(w, ' '))
			w = strrchr(w, '/') + 1; /* a path: its file */
		int n = snprintf(buf + len, cap - len, "%s%s", i ? " " : "", w);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (len >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	return buf;
}

struct scan {
	struct recording_trace *t;
	char program[256];
};

static int on_header(void *ctx, const struct hs_header *h)
{
	struct scan *s = ctx;
	s->t->pid = h->pid;
	s->t->ppid = h->ppid;
	/* argv[0] as the program ran it: the executable's name first */
	recording_program(h->exe, h->argv + (h->argc > 0),
			  h->argc > 0 ? h->argc - 1 : 0, s->program,
			  sizeof(s->program));
	return 0;
}

static int on_events(void *ctx, const struct hs_event *ev, size_t n)
{
	(void)ev;
	((struct scan *)ctx)->t->events += n;
	return 0;
}

static int on_event(void *ctx, const struct hs_record *rec)
{
	(void)rec;
	struct scan *s = ctx;
	s->t->events++;
	s->t->complete = 0;
	return 0;
}

static int on_mark(void *ctx, const struct hs_record *rec)
{
	struct scan *s = ctx;
	s->t->marks += rec->mark_kind == HS_MARK_BATCH;
	return 0;
}

static int on_end(void *ctx, const struct hs_record *rec)
{
	(void)rec;
	((struct scan *)ctx)->t->complete = 1;
	return 0;
}

static const struct walk_sink scan_sink = {
	.flags = WALK_PREFETCH | WALK_CUT_OK,
	.header = on_header,
	.events = on_events,
	.event = on_event,
	.mark = on_mark,
	.end = on_end,
};

int recording_scan(const char *path, struct recording_trace *t)
{
	struct scan s = { .t = t };
	memset(t, 0, sizeof(*t));
	if (!(t->path = strdup(path)))
		return hs_error("out of memory");
	if (walk(path, &scan_sink, &s))
		return -1;
	if (!(t->program = strdup(s.program)))
		return hs_error("out of memory");
	return 0;
}

void recording_trace_finish(struct recording_trace *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->program);
	memset(t, 0, sizeof(*t));
}

size_t recording_main(const uint64_t *events, const uint64_t *marks,
		      size_t n)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		int marked = marks[i] > 0;
		if (best == n || marked > (marks[best] > 0) ||
		    (marked == (marks[best] > 0) && events[i] > events[best]))
			best = i;
	}
	return best;
}
