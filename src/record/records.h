/* The records the recorder encodes by hand, in one place until
 * src/format's encoder has them all: the rest (events, stack nodes,
 * times, threads, switches) come from format/encoder.h.  Each takes room
 * for at most its *_MAX bytes at p and returns the end of what it wrote;
 * none allocates. */
#ifndef HS_RECORDS_H
#define HS_RECORDS_H

#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

#include "../format/encoder.h"
#include "modules.h"

#define RECORDS_LABEL_MAX 1024 /* a mark's label, cut there */
#define RECORDS_NAME_MAX 64    /* a thread's name, cut there */

/* a thread's name */
#define RECORDS_THREAD_NAME_MAX(len) (1 + 2 * HS_VARINT_MAX + (len))
uint8_t *records_thread_name(uint8_t *p, uint64_t tid, const char *name,
			     size_t len);

/* a mark at time t */
#define RECORDS_MARK_MAX(len) (1 + 3 * HS_VARINT_MAX + (len))
uint8_t *records_mark(struct hs_enc *e, uint8_t *p, uint64_t t,
		      unsigned kind, const char *label, size_t len);

/* a sample: RSS, mallinfo2 if has_mi, the program break if brk */
#define RECORDS_SAMPLE_MAX (1 + 11 * HS_VARINT_MAX)
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
#define RECORDS_END_MAX (4096 + 600 + (HS_COUNT_MAX + 8) * HS_VARINT_MAX)
size_t records_end(uint8_t *buf, unsigned reason, const char *exec_path,
		   const char *stop, const uint64_t *counts);

#endif
