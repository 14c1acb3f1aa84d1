/* Where a module's files are found after the process is gone: its ELF
 * file when the build-id is the recorded one, a debug file by build-id
 * under a directory, and libdwfl's search for separate debug files. */
#ifndef HS_DEBUGFILE_H
#define HS_DEBUGFILE_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

/* 1 if the ELF file at path has build_id (or none was recorded, len 0),
 * 0 if not or unreadable. */
int debugfile_same_build(const char *path, const uint8_t *build_id,
			 size_t len);
/* 1 with the path in out when dir/.build-id/ holds a file with
 * build_id, else 0. */
int debugfile_by_build_id(const char *dir, const uint8_t *build_id,
			  size_t len, char *out, size_t cap);

/* The search path (libdwfl's syntax) debugfile_find_debuginfo uses. */
void debugfile_search_path(const char *path);
/* A Dwfl_Callbacks.find_debuginfo: libdwfl's standard search, less its
 * last resort (debuginfod) unless DEBUGINFOD_URLS asks for it. */
int debugfile_find_debuginfo(Dwfl_Module *mod, void **user,
			     const char *name, Dwarf_Addr base,
			     const char *file_name, const char *link,
			     GElf_Word crc, char **out);

#endif
