/* Which frame of a stack names its operator (analyze --group-by-frame,
 * --operators): a glob or a regex on a frame's function, or a preset of
 * them for a framework, and the group name taken from the match. */
#ifndef HS_FRAME_MATCH_H
#define HS_FRAME_MATCH_H

#include <stddef.h>

struct frame;
struct frame_match;

/* PATTERN: a glob (fnmatch(3)), or "re:REGEX" (POSIX extended).  NULL
 * with hs_error for an empty pattern or a regex that does not compile. */
struct frame_match *frame_match_create(const char *pattern);
/* A preset by name ("torch", "paddle"); NULL with hs_error otherwise. */
struct frame_match *frame_match_preset(const char *name);
void frame_match_destroy(struct frame_match *m);

/* As the user gave it: the pattern, or the preset's patterns joined by
 * ", "; the preset's name (NULL for a pattern). */
const char *frame_match_pattern(const struct frame_match *m);
const char *frame_match_preset_name(const struct frame_match *m);
/* 1 when no Python frame can match (a preset's C++ names): the stacks'
 * Python frames need not be looked at. */
int frame_match_native_only(const struct frame_match *m);

/* Whether frame f matches: 1 with the group's name in name[0, n), else 0.
 * A native frame is matched by its bare name (frame_match_bare), then
 * by its whole name; a Python frame by its qualified name, then by
 * "file:qualname".  *yields
 * (may be NULL) says the name gives way to a match further out: a
 * preset's operators that only allocate for another one (torch's
 * empty_strided). */
int frame_match(const struct frame_match *m, const struct frame *f,
		char *name, size_t n, int *yields);

/* A demangled C++ name without its return type, parameter list and
 * qualifiers: "at::_ops::add_Tensor::call" from
 * "at::_ops::add_Tensor::call(at::Tensor const&, ...)", into out[0, n);
 * returns out. */
char *frame_match_bare(const char *fn, char *out, size_t n);

#endif
