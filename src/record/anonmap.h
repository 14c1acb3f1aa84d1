/* The anonymous mappings the program made itself (recorded with --mmap),
 * so that only their munmaps are recorded, not those of file mappings.
 * Not thread-safe: callers hold the recorder lock. */
#ifndef HS_ANONMAP_H
#define HS_ANONMAP_H

#include <stddef.h>
#include <stdint.h>

int anonmap_add(uintptr_t start, size_t len);
/* Forgets [start, start+len); returns whether any of it was known. */
int anonmap_remove(uintptr_t start, size_t len);

#endif
