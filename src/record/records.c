#include "records.h"

#include <string.h>

uint8_t *records_thread_name(uint8_t *p, uint64_t tid, const char *name,
			     size_t len)
{
	*p++ = HS_REC_THREAD_NAME;
	p = varint_put(p, tid);
	return enc_str(p, name, len);
}

uint8_t *records_mark(struct hs_enc *e, uint8_t *p, uint64_t t,
		      unsigned kind, const char *label, size_t len)
{
	*p++ = HS_REC_MARK;
	p = enc_time(e, p, t);
	p = varint_put(p, kind);
	return enc_str(p, label, len);
}

uint8_t *records_sample(struct hs_enc *e, uint8_t *p, uint64_t t,
			uint64_t rss, const struct mallinfo2 *mi, int has_mi,
			uint64_t brk)
{
	*p++ = HS_REC_SAMPLE;
	p = enc_time(e, p, t);
	p = varint_put(p, rss);
	p = varint_put(p, (has_mi ? HS_SAMPLE_MALLINFO : 0) |
				  (brk ? HS_SAMPLE_BRK : 0));
	if (has_mi) {
		p = varint_put(p, mi->arena);
		p = varint_put(p, mi->ordblks);
		p = varint_put(p, mi->hblks);
		p = varint_put(p, mi->hblkhd);
		p = varint_put(p, mi->uordblks);
		p = varint_put(p, mi->fordblks);
		p = varint_put(p, mi->keepcost);
	}
	if (brk)
		p = varint_put(p, brk);
	return p;
}

size_t records_module_max(const struct module *m)
{
	return 1 + 4 * HS_VARINT_MAX + m->path_len + m->build_id_len +
	       m->nseg * 4 * HS_VARINT_MAX;
}

uint8_t *records_module(uint8_t *p, const struct module *m, const char *pool)
{
	*p++ = HS_REC_MODULE;
	p = varint_put(p, m->base);
	p = enc_str(p, pool + m->path_off, m->path_len);
	p = enc_str(p, m->build_id, m->build_id_len);
	p = varint_put(p, m->nseg);
	for (uint32_t i = 0; i < m->nseg; i++) {
		p = varint_put(p, m->segs[i].vaddr);
		p = varint_put(p, m->segs[i].memsz);
		p = varint_put(p, m->segs[i].offset);
		p = varint_put(p, m->segs[i].flags);
	}
	return p;
}

size_t records_end(uint8_t *buf, unsigned reason, const char *exec_path,
		   const char *stop, const uint64_t *counts)
{
	uint8_t *p = buf;
	if (exec_path) {
		*p++ = HS_REC_EXEC;
		p = enc_str(p, exec_path, strnlen(exec_path, 4000));
	}
	if (stop) {
		*p++ = HS_REC_STOP;
		p = enc_str(p, stop, strnlen(stop, 500));
	}
	*p++ = HS_REC_END;
	p = varint_put(p, stop ? HS_END_ERROR : reason);
	p = varint_put(p, HS_COUNT_MAX);
	for (int i = 0; i < HS_COUNT_MAX; i++)
		p = varint_put(p, __atomic_load_n(&counts[i], __ATOMIC_RELAXED));
	return (size_t)(p - buf);
}
