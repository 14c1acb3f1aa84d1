/* Paths record works with: absolute names, the program a command runs,
 * and a list of names without repeats (the traces written). */
#ifndef HS_PATHS_H
#define HS_PATHS_H

#include <stddef.h>

/* path made absolute against the current directory; -1 if it does not
 * fit. */
int absolute_path(const char *path, char *out, size_t cap);

/* The program execvp would run for cmd: a path, or the first executable
 * file of that name in PATH; -1 if none. */
int program_find(const char *cmd, char *out, size_t cap);

struct paths {
	char **v;
	size_t n;
};

/* Adds s[0..len) unless it is there (dropped if memory runs out). */
void paths_add(struct paths *p, const char *s, size_t len);
void paths_remove(struct paths *p, const char *s);
/* Frees the names; p may be reused. */
void paths_finish(struct paths *p);

#endif
