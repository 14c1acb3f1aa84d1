/* The mappings the program made itself (recorded as map records), so that
 * only their munmaps, mremaps and shmdts are recorded, not those of the
 * allocator's or the loader's; and what a mapped descriptor is.  Not
 * thread-safe: callers hold the recorder lock. */
#ifndef HS_MAPS_H
#define HS_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* [start, start+len), whole pages, replacing what it overlaps. */
int maps_add(uintptr_t start, size_t len);
/* Forgets [start, start+len); returns whether any of it was known. */
int maps_remove(uintptr_t start, size_t len);
/* Whether any of [start, start+len) is known. */
int maps_overlaps(uintptr_t start, size_t len);
/* The length of the known mapping that starts at start, 0 if none. */
size_t maps_length_at(uintptr_t start);
/* Forgets them all (a forked child's trace starts without). */
void maps_clear(void);

/* What a mapping of descriptor fd is backed by (enum hs_map_kind), its
 * file's identity and path; the path lives until the next call. */
struct map_file {
	unsigned kind;
	uint64_t dev, ino;
	const char *path;
	size_t path_len;
};
void maps_describe(int fd, struct map_file *f);

#endif
