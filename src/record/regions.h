/* The names of the program's regions (heapslope_region_begin): each
 * distinct name gets an id, written once per trace before its first use.
 * Called with the recorder lock held; nothing here allocates. */
#ifndef HS_RECORD_REGIONS_H
#define HS_RECORD_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#define REGIONS_NAME_MAX 255 /* a name's bytes, cut there */
#define REGIONS_MAX 4095     /* distinct names per trace */
#define REGIONS_OTHER (REGIONS_MAX + 1) /* the names past them */

/* The id of name (n bytes) in trace generation gen (a forked child's
 * trace starts the ids again); *fresh is set when the name record must
 * be written first, with the name regions_name gives. */
uint32_t regions_id(const char *name, size_t n, uint32_t gen, int *fresh);
/* The name of id, and its length. */
const char *regions_name(uint32_t id, size_t *n);

#endif
