/* The recorder's records that need more than an encoder call: its own
 * types turned into src/format's encoders (format/encoder.h, where every
 * record is encoded).  Each takes room for at most its *_MAX bytes at p
 * and returns the end of what it wrote; none allocates. */
#ifndef HS_RECORDS_H
#define HS_RECORDS_H

#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

#include "../format/encoder.h"
#include "modules.h"

#define RECORDS_LABEL_MAX 1024 /* a mark's label, cut there */
#define RECORDS_NAME_MAX 64    /* a thread's name, cut there */
#define RECORDS_THREAD_NAME_MAX(len) (1 + 2 * HS_VARINT_MAX + (len))

/* a sample: RSS, mallinfo2 if has_mi, the program break if brk */
#define RECORDS_SAMPLE_MAX HS_SAMPLE_MAX
uint8_t *records_sample(struct hs_enc *e, uint8_t *p, uint64_t t,
			uint64_t rss, const struct mallinfo2 *mi, int has_mi,
			uint64_t brk);

/* a loaded module */
size_t records_module_max(const struct module *m);
uint8_t *records_module(uint8_t *p, const struct module *m,
			const char *pool);

/* The trace's last records: the exec about to happen (exec_path, or
 * NULL), why recording stopped (stop, or NULL), the end with its reason
 * and the counters. */
#define RECORDS_END_MAX (4096 + 600 + 2 * (1 + HS_VARINT_MAX) + HS_END_MAX)
size_t records_end(uint8_t *buf, unsigned reason, const char *exec_path,
		   const char *stop, const uint64_t *counts);

#endif
