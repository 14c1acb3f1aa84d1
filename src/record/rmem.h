/* Memory for the recorder's own data, taken from mmap so that it never
 * enters (or disturbs) the heap being recorded. */
#ifndef HS_RMEM_H
#define HS_RMEM_H

#include <stddef.h>

void *rmem_map(size_t size);           /* zeroed; NULL on failure */
void rmem_unmap(void *p, size_t size); /* accepts NULL */
/* malloc-like, for libraries we hand a custom allocator (zstd) */
void *rmem_alloc(void *opaque, size_t size);
void rmem_free(void *opaque, void *p);

#endif
