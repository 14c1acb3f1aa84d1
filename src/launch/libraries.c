/* Finding the recorder library and the allocators, and checking that the
 * dynamic linker can preload them. */
#include "libraries.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract.h"
#include "base/error.h"
#include "paths.h"

#ifndef HS_LIBDIR
#define HS_LIBDIR "/usr/local/lib/heapslope"
#endif

/* The allocators --allocator knows by name, with the Debian package that
 * ships each.  glibc needs no library. */
static const struct allocator {
	const char *name, *soname, *package;
} allocators[] = {
	{ HS_ALLOCATOR_GLIBC, NULL, NULL },
	{ "jemalloc", "libjemalloc.so.2", "libjemalloc2" },
	{ "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
	{ "mimalloc", "libmimalloc.so.2", "libmimalloc2.0" },
};

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int recorder_find(char *out, size_t cap)
{
	const char *env = getenv(HS_ENV_LIB);
	char self[PATH_MAX];
	if (env && *env) {
		if (!realpath(env, out) || !exists(out))
			return hs_error(HS_ENV_LIB "=%s: no such file", env);
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		const char *dir = dirname(self);
		const char *cands[] = { "%s/libheapslope.so",
					"%s/../record/libheapslope.so",
					"%s/../lib/heapslope/libheapslope.so" };
		for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), cands[i], dir);
			if (exists(p) && realpath(p, out))
				return 0;
		}
	}
	snprintf(out, cap, "%s/libheapslope.so", HS_LIBDIR);
	if (exists(out))
		return 0;
	return hs_error("cannot find libheapslope.so (looked next to the "
			"heapslope binary and in %s; set " HS_ENV_LIB ")",
			HS_LIBDIR);
}

/* The start of an ELF file: ident, then e_type and e_machine, which sit
 * at the same offsets in 32- and 64-bit files. */
enum { ELF_HEAD = 20 };

static int elf_head(const char *path, unsigned char head[ELF_HEAD])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, head, ELF_HEAD);
	int e = errno;
	close(fd);
	if (n == ELF_HEAD && !memcmp(head, ELFMAG, SELFMAG))
		return 0;
	errno = n < 0 ? e : ENOEXEC;
	return -1;
}

/* A shared library the dynamic linker can preload next to the recorder,
 * whose head is `like`: same class, byte order and machine. */
static int shared_library(const char *path, const unsigned char *like)
{
	unsigned char h[ELF_HEAD];
	uint16_t type;
	if (elf_head(path, h))
		return -1;
	memcpy(&type, h + 16, sizeof(type));
	if (h[EI_CLASS] != like[EI_CLASS] || h[EI_DATA] != like[EI_DATA] ||
	    memcmp(h + 18, like + 18, 2) || type != ET_DYN) {
		errno = ENOEXEC;
		return -1;
	}
	return 0;
}

static int try_dir(const char *dir, size_t len, const char *soname,
		   const unsigned char *like, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "%.*s/%s", (int)len, dir, soname) >=
	    cap)
		return -1;
	return shared_library(out, like);
}

static int libc_dir(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = strrchr(info->dlpi_name, '/');
	(void)size;
	if (!base || strncmp(base + 1, "libc.so", 7))
		return 0;
	snprintf(data, PATH_MAX, "%.*s", (int)(base - info->dlpi_name),
		 info->dlpi_name);
	return 1;
}

/* Where the dynamic linker would find soname: LD_LIBRARY_PATH, the
 * directory libc came from (the multiarch one, /lib/x86_64-linux-gnu on
 * Debian amd64) and its /usr twin, then the usual ones. */
static int search_library(const char *soname, const unsigned char *like,
			  char *out, size_t cap)
{
	static const char *const fixed[] = { "/usr/local/lib", "/usr/lib64",
					     "/lib64", "/usr/lib", "/lib" };
	char libc[PATH_MAX] = "", usr[PATH_MAX + 4];
	for (const char *s = getenv("LD_LIBRARY_PATH"); s && *s;) {
		size_t l = strcspn(s, ":;");
		if (l && !try_dir(s, l, soname, like, out, cap))
			return 0;
		s += l + (s[l] != 0);
	}
	dl_iterate_phdr(libc_dir, libc);
	if (*libc && !try_dir(libc, strlen(libc), soname, like, out, cap))
		return 0;
	if (!strncmp(libc, "/lib/", 5)) {
		snprintf(usr, sizeof(usr), "/usr%s", libc);
		if (!try_dir(usr, strlen(usr), soname, like, out, cap))
			return 0;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!try_dir(fixed[i], strlen(fixed[i]), soname, like, out,
			     cap))
			return 0;
	return -1;
}

int allocator_find(const char *arg, const char *recorder, char *lib,
		   size_t cap, const char **name)
{
	unsigned char like[ELF_HEAD];
	lib[0] = 0;
	*name = HS_ALLOCATOR_GLIBC;
	if (!arg)
		return 0;
	if (elf_head(recorder, like)) {
		fprintf(stderr, "heapslope record: %s: %s\n", recorder,
			strerror(errno));
		return -1;
	}
	if (strchr(arg, '/')) {
		const char *base = strrchr(arg, '/') + 1;
		errno = ENAMETOOLONG;
		if (!*base || absolute_path(arg, lib, cap) ||
		    shared_library(lib, like)) {
			fprintf(stderr, "heapslope record: allocator %s: %s\n",
				arg, !*base || errno == ENOEXEC
					? "not a shared library for this "
					  "machine"
					: strerror(errno));
			return -1;
		}
		*name = base;
	} else {
		const struct allocator *a = NULL;
		for (size_t i = 0; i < sizeof(allocators) / sizeof(*a); i++)
			if (!strcmp(arg, allocators[i].name))
				a = &allocators[i];
		if (!a) {
			fprintf(stderr, "heapslope record: unknown allocator "
					"'%s' (glibc, jemalloc, tcmalloc, "
					"mimalloc, or a library's path)\n",
				arg);
			return -1;
		}
		*name = a->name;
		if (a->soname && search_library(a->soname, like, lib, cap)) {
			fprintf(stderr, "heapslope record: allocator %s not "
					"found: install %s (%s)\n", a->name,
				a->package, a->soname);
			return -1;
		}
	}
	if (strpbrk(lib, " :")) {
		fprintf(stderr, "heapslope record: allocator %s: LD_PRELOAD "
				"cannot hold a path with a space or a colon\n",
			lib);
		return -1;
	}
	return 0;
}
