/* A chunk's records, stored by column: tags, sizes, stack ids, pointers,
 * and the rest, each a stream of its own.  zstd models each stream far
 * better than the interleaved rows (15% smaller traces on the simulator);
 * the recorder's writer thread transposes, the reader transposes back, and
 * everything else sees rows. */
#ifndef HS_COLUMNS_H
#define HS_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

/* Upper bound of the encoded size of n bytes of rows. */
size_t columns_bound(size_t n);
/* rows -> columns, written in place after a pass that sizes them.
 * Returns the length, 0 if the rows do not parse or cap is too small. */
size_t columns_encode(const uint8_t *rows, size_t n, uint8_t *out,
		      size_t cap);
/* columns -> rows (at most cap bytes); (size_t)-1 if corrupt. */
size_t columns_decode(const uint8_t *cols, size_t n, uint8_t *rows,
		      size_t cap);

#endif
