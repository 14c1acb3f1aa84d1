/* Zeroed memory for the analyzer's large tables.  Past BIGMEM_MIN bytes
 * it is mapped on a 2 MiB boundary and offered to the kernel for
 * transparent huge pages: filling a table then takes one page fault per
 * 2 MiB instead of 512 (page faults are a good part of analyzing a short
 * trace).  Smaller tables come from calloc.  bigmem_free takes the size
 * bigmem_zalloc was given. */
#ifndef HS_BIGMEM_H
#define HS_BIGMEM_H

#include <stddef.h>

#define BIGMEM_MIN (256u << 10)

void *bigmem_zalloc(size_t bytes);
void bigmem_free(void *p, size_t bytes);
/* p, of old bytes, grown to bytes (the part past old zeroed); NULL, with p
 * untouched, when out of memory. */
void *bigmem_realloc(void *p, size_t old, size_t bytes);
/* Room for index i in *v, an array of *n elements of size bytes from
 * bigmem (*n 0: none yet), doubled from first elements until it holds i,
 * the new ones zeroed; -1, with *v untouched, when out of memory. */
int bigmem_room(void **v, size_t *n, size_t i, size_t size, size_t first);

#endif
