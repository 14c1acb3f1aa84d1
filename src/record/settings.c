/* The recorder's side of the contract with `heapslope record`
 * (launch/contract.h), read once at start-up: later, getenv may be the
 * program's own (bash's reads its shell variables).  A value missing or
 * out of range is the default, which is also what the library preloaded
 * by hand gets. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct settings hs_settings;
struct launch_env hs_env;

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return def;
	return v;
}

static void env_copy(const char *name, char *out, size_t cap)
{
	const char *s = getenv(name);
	snprintf(out, cap, "%s", s ? s : "");
}

void settings_read(void)
{
	struct settings *s = &hs_settings;
	s->depth = (int)env_long(HS_ENV_DEPTH, HS_DEPTH_DEFAULT, HS_DEPTH_MIN,
				 HS_DEPTH_MAX);
	s->interval_ms = (int)env_long(HS_ENV_INTERVAL, HS_INTERVAL_DEFAULT, 0,
				       HS_INTERVAL_MAX);
	s->follow = (int)env_long(HS_ENV_FOLLOW, HS_FOLLOW_DEFAULT, 0, 1);
	s->writer_stall_ms = (int)env_long(HS_ENV_TEST_WRITER_STALL, 0, 0,
					   10000);
	s->test_py_verify = (int)env_long(HS_ENV_TEST_PY_VERIFY, 0, 0, 1);
	s->record_mmap = (int)env_long(HS_ENV_MMAP, HS_MMAP_DEFAULT, 0, 1);
	s->python = (int)env_long(HS_ENV_PYTHON, HS_PYTHON_DEFAULT, 0, 1);
	const char *pym = getenv("PYTHONMALLOC");
	s->pymalloc_set = env_long(HS_ENV_PYMALLOC, 0, 0, 1) == 1 && pym &&
			  !strcmp(pym, "malloc");
	s->mallinfo = (int)env_long(HS_ENV_MALLINFO, HS_MALLINFO_DEFAULT,
				    HS_MALLINFO_NEVER, HS_MALLINFO_ALWAYS);
	env_copy(HS_ENV_ALLOCATOR, hs_env.allocator, sizeof(hs_env.allocator));
	if (!hs_env.allocator[0])
		snprintf(hs_env.allocator, sizeof(hs_env.allocator), "%s",
			 HS_ALLOCATOR_GLIBC);
	s->glibc_heap = strcmp(hs_env.allocator, HS_ALLOCATOR_GLIBC) == 0;
	/* glibc's C++ runtime calls malloc and free, which record; the
	 * others' operators are their own */
	s->record_operators = !s->glibc_heap;
	env_copy(HS_ENV_UNWIND, hs_env.unwind, sizeof(hs_env.unwind));
	env_copy(HS_ENV_OUTPUT, hs_env.output, sizeof(hs_env.output));
	env_copy(HS_ENV_REPORT, hs_env.report, sizeof(hs_env.report));
	env_copy(HS_ENV_FD, hs_env.fd_token, sizeof(hs_env.fd_token));
	env_copy(HS_ENV_FD_PATH, hs_env.fd_path, sizeof(hs_env.fd_path));
	hs_env.root_pid = env_long(HS_ENV_ROOT, 0, 0, INT_MAX);
	hs_env.execed_pid = env_long(HS_ENV_EXECED, 0, 0, INT_MAX);
	/* a courtesy to the program: where unsetenv is libc's; nothing here
	 * relies on it */
	unsetenv(HS_ENV_FD);
	unsetenv(HS_ENV_FD_PATH);
}
