/* Memory for the recorder's own data, taken from mmap so that it never
 * enters (or disturbs) the heap being recorded. */
#ifndef HS_RMEM_H
#define HS_RMEM_H

#include <stddef.h>

void *rmem_map(size_t size);           /* zeroed; NULL on failure */
/* The same, resident from the start: the recorder's fixed buffers must not
 * show up as RSS growth of the program while they fill. */
void *rmem_map_resident(size_t size);
/* The same for a large table reached at random: in huge pages. */
void *rmem_map_table(size_t size);
void rmem_unmap(void *p, size_t size); /* accepts NULL */

#endif
