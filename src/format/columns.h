/* A chunk's records, stored by column: tags, sizes, stack ids, pointers,
 * and the rest, each a stream of its own.  zstd models each stream far
 * better than the interleaved rows (15% smaller traces on the simulator);
 * the recorder's writer thread transposes, the reader transposes back, and
 * everything else sees rows. */
#ifndef HS_COLUMNS_H
#define HS_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

/* Layouts (the chunk's first byte): plain, 5 then the five columns'
 * lengths and the columns; modeled, 0x85, the rows' length, the lengths
 * of all but the pointer column, those columns, then the pointer column
 * to the end, its pointers written as references to recent allocations
 * and frees where they can be (columns.c); that makes pointers, most of a
 * trace of reused memory, about three times smaller. */

/* Upper bound of the encoded size of n bytes of rows. */
size_t columns_bound(size_t n);
/* The pointer model's tables, for columns_encode: 1.5 MiB. */
struct hs_ptr_tables;
size_t columns_tables_size(void);
/* rows -> columns, written in place after a pass that sizes them;
 * modeled if tables is not NULL (and the model fits in cap).  Returns
 * the length, 0 if the rows do not parse or cap is too small. */
size_t columns_encode(const uint8_t *rows, size_t n, uint8_t *out,
		      size_t cap, struct hs_ptr_tables *tables);
/* The room the rows of n bytes of columns need: their length (modeled),
 * at most n (plain); (size_t)-1 if corrupt. */
size_t columns_rows_size(const uint8_t *cols, size_t n);
/* columns -> rows (at most cap bytes); (size_t)-1 if corrupt. */
size_t columns_decode(const uint8_t *cols, size_t n, uint8_t *rows,
		      size_t cap);

#endif
