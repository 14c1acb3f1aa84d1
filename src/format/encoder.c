#include "encoder.h"

#include <zstd.h>

#include "columns.h"

static void put_bytes(struct hs_header_buf *h, unsigned key, const void *v,
		      size_t n)
{
	if (h->overflow || h->len + n + 2 * HS_VARINT_MAX > h->cap) {
		h->overflow = 1;
		return;
	}
	uint8_t *p = h->buf + h->len;
	p = varint_put(p, key);
	p = enc_str(p, v, n);
	h->len = (size_t)(p - h->buf);
}

void header_put_u64(struct hs_header_buf *h, unsigned key, uint64_t v)
{
	uint8_t tmp[HS_VARINT_MAX];
	put_bytes(h, key, tmp, (size_t)(varint_put(tmp, v) - tmp));
}

void header_put_str(struct hs_header_buf *h, unsigned key, const char *s)
{
	put_bytes(h, key, s, strlen(s));
}

size_t header_write(const struct hs_header_buf *h, uint8_t *dst, size_t cap)
{
	if (h->overflow || cap < HS_PREAMBLE_LEN + h->len)
		return 0;
	memcpy(dst, HS_MAGIC, HS_MAGIC_LEN);
	dst[8] = HS_FORMAT_VERSION & 0xff;
	dst[9] = HS_FORMAT_VERSION >> 8;
	dst[10] = dst[11] = 0;
	le32_put(dst + 12, (uint32_t)h->len);
	memcpy(dst + HS_PREAMBLE_LEN, h->buf, h->len);
	return HS_PREAMBLE_LEN + h->len;
}

size_t chunk_bound(size_t n)
{
	return HS_CHUNK_HEADER_LEN + ZSTD_compressBound(columns_bound(n));
}

/* work: the columns, then the pointer model's tables */
static size_t tables_at(size_t n)
{
	return (columns_bound(n) + 63) & ~(size_t)63;
}

size_t chunk_work_size(size_t n)
{
	return tables_at(n) + columns_tables_size();
}

static size_t encode(struct ZSTD_CCtx_s *cctx, const void *rows, size_t n,
		     void *dst, size_t cap, uint8_t *work,
		     struct hs_ptr_tables *tables)
{
	size_t c = columns_encode(rows, n, work, columns_bound(n), tables);
	return c ? chunk_pack(cctx, work, c, dst, cap) : 0;
}

size_t chunk_encode(struct ZSTD_CCtx_s *cctx, const void *rows, size_t n,
		    void *dst, size_t cap, uint8_t *work)
{
	return encode(cctx, rows, n, dst, cap, work,
		      (struct hs_ptr_tables *)(void *)(work + tables_at(n)));
}

size_t chunk_encode_plain(struct ZSTD_CCtx_s *cctx, const void *rows,
			  size_t n, void *dst, size_t cap, uint8_t *work)
{
	return encode(cctx, rows, n, dst, cap, work, NULL);
}

size_t chunk_pack(struct ZSTD_CCtx_s *cctx, const void *src, size_t n,
		   void *dst, size_t cap)
{
	uint8_t *d = dst;
	if (cap < HS_CHUNK_HEADER_LEN)
		return 0;
	size_t c = ZSTD_compress2(cctx, d + HS_CHUNK_HEADER_LEN,
				  cap - HS_CHUNK_HEADER_LEN, src, n);
	if (ZSTD_isError(c))
		return 0;
	memcpy(d, HS_CHUNK_MAGIC, 4);
	le32_put(d + 4, (uint32_t)c);
	le32_put(d + 8, (uint32_t)n);
	return HS_CHUNK_HEADER_LEN + c;
}
