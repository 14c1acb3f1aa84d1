/* Memory straight from mmap, by raw system calls: the recorder's own data
 * never enters (or disturbs) the heap being recorded, nor passes through
 * its own mmap interposer.  The analyzer maps its large tables here too
 * (bigmem.h). */
#ifndef HS_RMEM_H
#define HS_RMEM_H

#include <stddef.h>

void *rmem_map(size_t size);           /* zeroed; NULL on failure */
/* The same, resident from the start: the recorder's fixed buffers must not
 * show up as RSS growth of the program while they fill. */
void *rmem_map_resident(size_t size);
/* The same, made resident by rmem_settle, later, on a thread that has the
 * time: a program's start does not wait for 9 MiB of the recorder's
 * pages to be cleared.  Resident at once where the kernel cannot do that
 * on request (MADV_POPULATE_WRITE, Linux 5.14).  Offered as transparent
 * huge pages, as rmem_map_table's.  Single-threaded: at start-up only. */
void *rmem_map_later(size_t size);
/* Makes what rmem_map_later mapped resident, unless done; stops early,
 * returning -1, when stop (if not NULL) says so between steps of 512 KiB.
 * Safe while other threads write that memory: no byte changes. */
int rmem_settle(int (*stop)(void));
/* The same for a large table reached at random: from 2 MiB on, mapped on
 * a 2 MiB boundary and offered as transparent huge pages, so that a
 * lookup does not also miss the TLB and filling it takes one page fault
 * per 2 MiB. */
void *rmem_map_table(size_t size);
/* p's mapping of size bytes, grown to new_size, maybe moved: the kernel
 * moves the pages, nothing is copied or zeroed again; NULL on failure (p
 * is kept then). */
void *rmem_remap(void *p, size_t size, size_t new_size);
/* rmem_remap for a table reached at random: grown to 2 MiB or more, it
 * is moved (not copied) onto a 2 MiB boundary and offered as transparent
 * huge pages, as rmem_map_table's: the pages it had stay small (unless
 * the kernel collapses them later), the ones it gains can be huge.  The
 * same failures as rmem_remap; a failed move may leave the aligned
 * mapping it made, untouched (address space only). */
void *rmem_remap_table(void *p, size_t size, size_t new_size);
void rmem_unmap(void *p, size_t size); /* accepts NULL */

#endif
