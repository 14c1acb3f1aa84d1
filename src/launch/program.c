#include "program.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Whether the ELF file at fd has a program interpreter (the dynamic
 * loader, which honours LD_PRELOAD). */
static int has_interp(int fd)
{
	unsigned char id[EI_NIDENT];
	if (pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return -1;
	int is64 = id[EI_CLASS] == ELFCLASS64;
	uint64_t phoff;
	unsigned phnum, phentsize;
	if (is64) {
		Elf64_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			return -1;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	} else {
		Elf32_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			return -1;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	}
	for (unsigned i = 0; i < phnum && i < 4096; i++) {
		uint32_t type;
		if (pread(fd, &type, sizeof(type), (off_t)(phoff + (uint64_t)i *
							     phentsize)) !=
		    (ssize_t)sizeof(type))
			return -1;
		if (type == PT_INTERP)
			return 1;
	}
	return 0;
}

static const char *unloadable(const char *path, int depth)
{
	static char why[PATH_MAX + 100];
	struct stat st;
	char head[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL; /* exec will say */
	}
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	const char *r = NULL;
	if ((st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
	    (st.st_mode & S_ISGID && st.st_gid != getegid()) ||
	    fgetxattr(fd, "security.capability", NULL, 0) > 0) {
		snprintf(why, sizeof(why), "%s runs with other privileges "
			 "(setuid, setgid or file capabilities): the loader "
			 "ignores LD_PRELOAD for it", path);
		r = why;
	} else if (n >= 4 && !memcmp(head, ELFMAG, SELFMAG)) {
		if (has_interp(fd) == 0) {
			snprintf(why, sizeof(why), "%s is statically linked: "
				 "it loads no library, the recorder included",
				 path);
			r = why;
		}
	} else if (n > 2 && head[0] == '#' && head[1] == '!' && depth < 4) {
		/* a script: its interpreter is what runs */
		head[n] = 0;
		char *s = head + 2 + strspn(head + 2, " \t");
		s[strcspn(s, " \t\n")] = 0;
		close(fd);
		return *s ? unloadable(s, depth + 1) : NULL;
	}
	close(fd);
	return r;
}

const char *program_unloadable(const char *path)
{
	return unloadable(path, 0);
}
