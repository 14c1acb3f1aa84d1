#include "debugfile.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The search path of the symbols last created (the same for every trace
 * of one command): find_debuginfo gets no context of its own. */
static const char *search_path;

void debugfile_search_path(const char *path)
{
	search_path = path;
}

/* Whether cand (printed by snprintf, returning k) is a readable file. */
static int readable(const char *cand, int k, size_t cap)
{
	return k > 0 && (size_t)k < cap && access(cand, R_OK) == 0;
}

/* Whether a separate debug file of file may lie where libdwfl's search
 * path (-:.debug:DIRS) looks when it has no build-id match: its
 * .gnu_debuglink name, else its basename + ".debug" or its basename,
 * beside the file (an empty entry), in a subdirectory of the file's (a
 * relative one), or under an absolute one followed by the file's
 * directory or any shorter tail of it.  As many places as libdwfl's own
 * search or more: when this says no, so would libdwfl's search. */
static int debug_file_near(const char *file, const char *link,
			   const char *path)
{
	char cand[PATH_MAX], dotdebug[PATH_MAX];
	const char *slash = file ? strrchr(file, '/') : NULL;
	if (!slash || !path)
		return 1; /* cannot tell: let libdwfl look */
	const char *names[2] = { link, NULL };
	if (!link) {
		snprintf(dotdebug, sizeof(dotdebug), "%s.debug", slash + 1);
		names[0] = dotdebug;
		names[1] = slash + 1;
	}
	int dl = (int)(slash - file);
	const char *p = *path == '-' ? path + 1 : path;
	for (;;) { /* every entry, empty ones too */
		int n = (int)strcspn(p, ":");
		for (int i = 0; i < 2 && names[i]; i++) {
			const char *name = names[i];
			if (n == 0) { /* beside the file: not the file itself */
				if (name != slash + 1 &&
				    readable(cand, snprintf(cand, sizeof(cand),
							    "%.*s/%s", dl, file,
							    name),
					     sizeof(cand)))
					return 1;
			} else if (*p != '/') {
				if (readable(cand, snprintf(cand, sizeof(cand),
							    "%.*s/%.*s/%s", dl,
							    file, n, p, name),
					     sizeof(cand)))
					return 1;
			} else {
				for (const char *t = file; t && t <= slash;
				     t = strchr(t + 1, '/'))
					if (readable(cand,
						     snprintf(cand, sizeof(cand),
							      "%.*s%.*s/%s", n,
							      p,
							      (int)(slash - t),
							      t, name),
						     sizeof(cand)))
						return 1;
			}
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

/* libdwfl's standard search, less its last resort: without
 * DEBUGINFOD_URLS it would still load the debuginfod client (libcurl,
 * gnutls and the rest) for every module without a local debug file. */
int debugfile_find_debuginfo(Dwfl_Module *mod, void **user,
			     const char *name, Dwarf_Addr base,
			     const char *file_name, const char *link,
			     GElf_Word crc, char **out)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (urls && *urls)
		return dwfl_standard_find_debuginfo(mod, user, name, base,
						    file_name, link, crc, out);
	int fd = dwfl_build_id_find_debuginfo(mod, user, name, base,
					      file_name, link, crc, out);
	if (fd >= 0)
		return fd;
	char real[PATH_MAX];
	if (!debug_file_near(file_name, link, search_path) &&
	    !(file_name && realpath(file_name, real) &&
	      strcmp(real, file_name) != 0 &&
	      debug_file_near(real, link, search_path)))
		return -1;
	return dwfl_standard_find_debuginfo(mod, user, name, base, file_name,
					    link, crc, out);
}

/* 1 if the ELF file at path has the recorded build-id (or none was
 * recorded), 0 if not or unreadable. */
int debugfile_same_build(const char *path, const uint8_t *build_id,
			 size_t len)
{
	/* a trace names any path: never block on a FIFO or a device */
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	int same = 0;
	Elf *elf = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
			   ? elf_begin(fd, ELF_C_READ_MMAP, NULL)
			   : NULL;
	if (elf) {
		const void *id = NULL;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
		if (!len)
			same = 1;
		else
			same = n == (ssize_t)len &&
			       memcmp(id, build_id, (size_t)n) == 0;
		elf_end(elf);
	}
	close(fd);
	return same;
}

int debugfile_by_build_id(const char *dir, const uint8_t *build_id,
			  size_t len, char *out, size_t cap)
{
	if (!dir || len < 2)
		return 0;
	int o = snprintf(out, cap, "%s/.build-id/%02x/", dir, build_id[0]);
	for (size_t i = 1; i < len && o > 0 && (size_t)o < cap; i++)
		o += snprintf(out + o, cap - (size_t)o, "%02x", build_id[i]);
	if (o <= 0 || (size_t)o + 7 > cap)
		return 0;
	memcpy(out + o, ".debug", 7);
	return debugfile_same_build(out, build_id, len);
}
