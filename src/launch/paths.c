#include "paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

int absolute_path(const char *path, char *out, size_t cap)
{
	char cwd[PATH_MAX];
	if (path[0] == '/')
		return snprintf(out, cap, "%s", path) >= (int)cap ? -1 : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(out, cap, "%s/%s", cwd, path) >= (int)cap ? -1 : 0;
}

int program_find(const char *cmd, char *out, size_t cap)
{
	if (strchr(cmd, '/'))
		return snprintf(out, cap, "%s", cmd) >= (int)cap ? -1 : 0;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *s = path;;) {
		size_t l = strcspn(s, ":");
		struct stat st;
		if ((size_t)snprintf(out, cap, "%.*s%s%s", (int)l, s,
				     l ? "/" : "", cmd) < cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return 0;
		if (!s[l])
			return -1;
		s += l + 1;
	}
}

void paths_remove(struct paths *p, const char *s)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->v[i], s))
			p->v[k++] = p->v[i];
		else
			free(p->v[i]);
	}
	p->n = k;
}

void paths_add(struct paths *p, const char *s, size_t len)
{
	for (size_t i = 0; i < p->n; i++)
		if (strlen(p->v[i]) == len && !memcmp(p->v[i], s, len))
			return;
	char **v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v)
		return;
	p->v = v;
	p->v[p->n] = strndup(s, len);
	if (p->v[p->n])
		p->n++;
}

void paths_finish(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}
