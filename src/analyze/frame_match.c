#include "frame_match.h"

#include <ctype.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "symbols.h"

#define PATTERNS_MAX 8
#define NAME_MAX_LEN 1024

struct pattern {
	char *glob; /* NULL: a regex */
	regex_t re;
};

struct frame_match {
	struct pattern v[PATTERNS_MAX];
	size_t n;
	char *text;
	const char *preset;
	const char *const *yields; /* globs on the group name, NULL-ended */
};

/* The frameworks' operator frames, innermost first among the patterns
 * of a frame; see heapslope-analyze(1). */
static const struct preset {
	const char *name;
	const char *patterns[PATTERNS_MAX];
	const char *yields[8];
} presets[] = {
	/* the dispatcher's entry of every ATen operator (its overload name:
	 * add_Tensor); the factories that allocate another operator's
	 * output give way to that operator */
	{ "torch",
	  { "at::_ops::*::call", "at::_ops::*::redispatch" },
	  { "empty*", "new_empty*", "_empty*", "resize_", NULL } },
	/* fluid's kernel functors and phi's kernels carry the operator's
	 * type; operators that run themselves (while, feed) too; the
	 * framework's Run frames do not (its type is data) */
	{ "paddle",
	  { "paddle::operators::*Kernel*::Compute", "phi::*Kernel<*>",
	    "phi::*Kernel", "paddle::operators::*Op::RunImpl",
	    "paddle::framework::*::RunImpl", "paddle::framework::*::Run" },
	  { NULL } },
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

void frame_match_destroy(struct frame_match *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].glob)
			free(m->v[i].glob);
		else
			regfree(&m->v[i].re);
	}
	free(m->text);
	free(m);
}

static int add(struct frame_match *m, const char *pattern)
{
	struct pattern *p = &m->v[m->n];
	if (!pattern[0])
		return hs_error("--group-by-frame: empty pattern");
	if (strncmp(pattern, "re:", 3) != 0) {
		if (!(p->glob = strdup(pattern)))
			return hs_error("out of memory");
		m->n++;
		return 0;
	}
	if (!pattern[3])
		return hs_error("--group-by-frame: empty regex after 're:'");
	int rc = regcomp(&p->re, pattern + 3, REG_EXTENDED);
	if (rc) {
		char why[256];
		regerror(rc, &p->re, why, sizeof(why));
		return hs_error("--group-by-frame: bad regex '%s': %s",
				pattern + 3, why);
	}
	m->n++;
	return 0;
}

struct frame_match *frame_match_create(const char *pattern)
{
	struct frame_match *m = calloc(1, sizeof(*m));
	if (!m || !(m->text = strdup(pattern))) {
		hs_error("out of memory");
		goto fail;
	}
	if (add(m, pattern))
		goto fail;
	return m;
fail:
	frame_match_destroy(m);
	return NULL;
}

struct frame_match *frame_match_preset(const char *name)
{
	const struct preset *p = NULL;
	char known[128] = "";
	for (size_t i = 0; i < NPRESETS; i++) {
		if (!strcmp(presets[i].name, name))
			p = &presets[i];
		snprintf(known + strlen(known), sizeof(known) - strlen(known),
			 "%s%s", i ? ", " : "", presets[i].name);
	}
	if (!p) {
		hs_error("--operators: unknown framework '%s' (known: %s)",
			 name, known);
		return NULL;
	}
	struct frame_match *m = calloc(1, sizeof(*m));
	size_t len = 1;
	for (size_t i = 0; i < PATTERNS_MAX && p->patterns[i]; i++)
		len += strlen(p->patterns[i]) + 2;
	if (!m || !(m->text = calloc(1, len))) {
		hs_error("out of memory");
		goto fail;
	}
	for (size_t i = 0; i < PATTERNS_MAX && p->patterns[i]; i++) {
		if (add(m, p->patterns[i]))
			goto fail;
		if (i)
			strcat(m->text, ", ");
		strcat(m->text, p->patterns[i]);
	}
	m->preset = p->name;
	m->yields = p->yields;
	return m;
fail:
	frame_match_destroy(m);
	return NULL;
}

const char *frame_match_pattern(const struct frame_match *m)
{
	return m->text;
}

const char *frame_match_preset_name(const struct frame_match *m)
{
	return m->preset;
}

int frame_match_native_only(const struct frame_match *m)
{
	return m->preset != NULL;
}

/* Past "operator" at fn + i: the end of the operator's symbol. */
static size_t operator_end(const char *fn, size_t i)
{
	size_t j = i + 8;
	if (fn[j] == '(' && fn[j + 1] == ')')
		return j + 2;
	if (fn[j] == ' ') { /* new, delete, a conversion */
		j++;
		while (isalnum((unsigned char)fn[j]) || fn[j] == '_' ||
		       fn[j] == ':')
			j++;
		if (fn[j] == '[' && fn[j + 1] == ']')
			j += 2;
		return j;
	}
	while (fn[j] && strchr("<>=!+-*/%^&|~[],", fn[j]))
		j++;
	return j;
}

/* The ')' that closes the '(' at fn + i, or the end. */
static size_t closing(const char *fn, size_t i)
{
	int depth = 0;
	for (; fn[i]; i++) {
		if (fn[i] == '(')
			depth++;
		else if (fn[i] == ')' && --depth == 0)
			return i;
	}
	return i;
}

char *frame_match_bare(const char *fn, char *out, size_t n)
{
	size_t start = 0, end = strlen(fn);
	int depth = 0;
	static const char anon[] = "(anonymous namespace)";
	for (size_t i = 0; fn[i]; i++) {
		char c = fn[i];
		if (c == '(' && !strncmp(fn + i, anon, sizeof(anon) - 1)) {
			i += sizeof(anon) - 2;
			continue;
		}
		if (c == 'o' && !strncmp(fn + i, "operator", 8) &&
		    (i == 0 || fn[i - 1] == ':' || fn[i - 1] == ' ') &&
		    !isalnum((unsigned char)fn[i + 8]) && fn[i + 8] != '_') {
			/* with its template arguments: operator< <int> */
			size_t j = operator_end(fn, i);
			if (fn[j] == ' ' && fn[j + 1] == '<')
				j++;
			i = j - 1;
			continue;
		}
		if (c == '(' && depth == 0) {
			/* a function's own scope (a lambda, a local class):
			 * f(int)::{lambda()#1}::operator() */
			size_t j = closing(fn, i);
			if (fn[j] == ')' && !strncmp(fn + j + 1, "::", 2)) {
				i = j;
				continue;
			}
			end = i;
			break;
		}
		if (c == '<' || c == '(' || c == '[' || c == '{')
			depth++;
		else if (depth && (c == '>' || c == ')' || c == ']' || c == '}'))
			depth--;
		else if (c == ' ' && depth == 0 &&
			 !(i >= 8 && !strncmp(fn + i - 8, "operator", 8)))
			start = i + 1; /* a return type before it */
	}
	if (start > end)
		start = 0;
	size_t len = end - start;
	if (len >= n)
		len = n - 1;
	memcpy(out, fn + start, len);
	out[len] = 0;
	return out;
}

static void copy(char *name, size_t n, const char *s, size_t len)
{
	if (len >= n)
		len = n - 1;
	memcpy(name, s, len);
	name[len] = 0;
}

/* The text of s the first '*' of glob pat matched (s matches pat), the
 * shortest; all of s without a '*' or for an empty match. */
static void glob_capture(const char *pat, const char *s, char *name,
			 size_t n)
{
	size_t units = 0, len = strlen(s);
	const char *p = pat;
	while (*p && *p != '*') {
		if (*p == '\\' && p[1]) {
			p += 2;
		} else if (*p == '[') {
			const char *q = p + 1;
			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']')
				q++;
			p = *q ? q + 1 : p + 1;
		} else {
			p++;
		}
		units++;
	}
	if (*p == '*' && units <= len)
		for (size_t q = units + 1; q <= len; q++)
			if (fnmatch(p + 1, s + q, 0) == 0) {
				copy(name, n, s + units, q - units);
				return;
			}
	copy(name, n, s, len);
}

static int match_one(const struct pattern *p, const char *s, char *name,
		     size_t n)
{
	if (p->glob) {
		if (fnmatch(p->glob, s, 0) != 0)
			return 0;
		glob_capture(p->glob, s, name, n);
		return 1;
	}
	regmatch_t pm[2];
	if (regexec(&p->re, s, 2, pm, 0) != 0)
		return 0;
	if (p->re.re_nsub >= 1 && pm[1].rm_so >= 0 && pm[1].rm_eo > pm[1].rm_so)
		copy(name, n, s + pm[1].rm_so, (size_t)(pm[1].rm_eo -
							 pm[1].rm_so));
	else
		copy(name, n, s, strlen(s));
	return 1;
}

static int match_any(const struct frame_match *m, const char *s, char *name,
		     size_t n)
{
	for (size_t i = 0; i < m->n; i++)
		if (match_one(&m->v[i], s, name, n))
			return 1;
	return 0;
}

int frame_match(const struct frame_match *m, const struct frame *f,
		char *name, size_t n, int *yields)
{
	char buf[NAME_MAX_LEN];
	int hit = 0;
	if (yields)
		*yields = 0;
	if (!f->function)
		return 0;
	if (f->python) {
		hit = match_any(m, f->function, name, n);
		if (!hit && f->file) {
			snprintf(buf, sizeof(buf), "%s:%s", f->file,
				 f->function);
			hit = match_any(m, buf, name, n);
		}
	} else {
		/* then the whole demangled name, parameters and all */
		frame_match_bare(f->function, buf, sizeof(buf));
		hit = match_any(m, buf, name, n) ||
		      (strcmp(buf, f->function) &&
		       match_any(m, f->function, name, n));
	}
	if (hit && yields && m->yields)
		for (size_t i = 0; m->yields[i]; i++)
			if (fnmatch(m->yields[i], name, 0) == 0)
				*yields = 1;
	return hit;
}
