#include "records.h"

#include <string.h>

uint8_t *records_sample(struct hs_enc *e, uint8_t *p, uint64_t t,
			uint64_t rss, const struct mallinfo2 *mi, int has_mi,
			uint64_t brk)
{
	const uint64_t v[HS_MALLINFO_FIELDS] = {
		mi->arena,    mi->ordblks,  mi->hblks,   mi->hblkhd,
		mi->uordblks, mi->fordblks, mi->keepcost,
	};
	return enc_sample(e, p, t, rss, has_mi ? v : NULL, brk);
}

size_t records_module_max(const struct module *m)
{
	return HS_MODULE_MAX(m->path_len, m->build_id_len, m->nseg);
}

uint8_t *records_module(uint8_t *p, const struct module *m, const char *pool)
{
	uint64_t segs[MOD_MAX_SEGS][4];
	for (uint32_t i = 0; i < m->nseg; i++) {
		segs[i][0] = m->segs[i].vaddr;
		segs[i][1] = m->segs[i].memsz;
		segs[i][2] = m->segs[i].offset;
		segs[i][3] = m->segs[i].flags;
	}
	return enc_module(p, m->base, pool + m->path_off, m->path_len,
			  m->build_id, m->build_id_len, m->nseg, segs);
}

size_t records_end(uint8_t *buf, unsigned reason, const char *exec_path,
		   const char *stop, const uint64_t *counts)
{
	uint64_t now[HS_COUNT_MAX];
	uint8_t *p = buf;
	if (exec_path)
		p = enc_strrec(p, HS_REC_EXEC, exec_path,
			       strnlen(exec_path, 4000));
	if (stop)
		p = enc_strrec(p, HS_REC_STOP, stop, strnlen(stop, 500));
	for (int i = 0; i < HS_COUNT_MAX; i++)
		now[i] = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
	p = enc_end(p, stop ? HS_END_ERROR : reason, now);
	return (size_t)(p - buf);
}
