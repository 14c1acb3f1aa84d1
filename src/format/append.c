#include "append.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "columns.h"
#include "encoder.h"
#include "../base/error.h"

static int ends_on_chunk(int fd, off_t size)
{
	uint8_t pre[HS_PREAMBLE_LEN], ch[HS_CHUNK_HEADER_LEN];
	if (pread(fd, pre, sizeof(pre), 0) != (ssize_t)sizeof(pre) ||
	    memcmp(pre, HS_MAGIC, HS_MAGIC_LEN) != 0)
		return 0;
	off_t off = HS_PREAMBLE_LEN + (off_t)le32_get(pre + 12);
	while (off < size) {
		if (pread(fd, ch, sizeof(ch), off) != (ssize_t)sizeof(ch) ||
		    memcmp(ch, HS_CHUNK_MAGIC, 4) != 0)
			return 0;
		off += HS_CHUNK_HEADER_LEN + (off_t)le32_get(ch + 4);
	}
	return off == size;
}

int trace_append_exit(const char *path, int wait_status)
{
	int fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	ZSTD_CCtx *cctx = NULL;
	int rc = -1;
	struct stat st;
	if (fd < 0)
		return hs_error("open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !ends_on_chunk(fd, st.st_size)) {
		rc = hs_error("%s does not end on a whole chunk", path);
		goto out;
	}
	uint8_t rec[1 + HS_VARINT_MAX], work[256], out[256];
	size_t n = (size_t)(enc_u64(rec, HS_REC_EXIT, (uint64_t)wait_status) -
			    rec);
	cctx = ZSTD_createCCtx();
	if (!cctx) {
		rc = hs_error("out of memory");
		goto out;
	}
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	size_t len = columns_bound(n) <= sizeof(work)
			     ? chunk_encode_plain(cctx, rec, n, out, sizeof(out),
						  work)
			     : 0;
	ssize_t w = len ? write(fd, out, len) : 0;
	if (w != (ssize_t)len || !len) {
		int err = w < 0 ? errno : ENOSPC;
		/* a full disk took part of it: the trace ends on its last
		 * whole chunk, as before */
		if (w > 0)
			(void)!ftruncate(fd, st.st_size);
		rc = hs_error("append to %s: %s", path,
			      len ? strerror(err) : "zstd error");
		goto out;
	}
	rc = 0;
out:
	ZSTD_freeCCtx(cctx);
	close(fd);
	return rc;
}
