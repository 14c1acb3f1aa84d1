#include "words.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "format/trace_format.h"

const char *words_bytes(double v, char *buf, size_t cap)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
					     "TiB" };
	double a = fabs(v);
	int u = 0;
	while (a >= 1024 && u < 4) {
		a /= 1024;
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%.0f B", v);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

enum words_exit words_exit(uint64_t wait_status, int *value)
{
	int st = (int)wait_status;
	if (WIFEXITED(st)) {
		*value = WEXITSTATUS(st);
		return WORDS_EXIT_STATUS;
	}
	if (WIFSIGNALED(st)) {
		*value = WTERMSIG(st);
		return WORDS_EXIT_SIGNAL;
	}
	return WORDS_EXIT_OTHER;
}

const char *words_end_reason(unsigned reason)
{
	return reason < HS_END_REASONS ? hs_end_reasons[reason] : NULL;
}

const char *words_verdict(enum verdict v)
{
	static const char *const names[] = {
		[VERDICT_STABLE] = "stable",
		[VERDICT_LEAK] = "leak",
		[VERDICT_RETENTION] = "retention",
		[VERDICT_FRAGMENTATION] = "fragmentation",
		[VERDICT_MIXED] = "mixed",
		[VERDICT_MAPPED] = "mapped",
		[VERDICT_TOUCHING] = "touching",
		[VERDICT_OTHER] = "other",
	};
	return v <= VERDICT_OTHER ? names[v] : "?";
}

const char *words_file(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}
