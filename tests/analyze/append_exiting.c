/* append_exiting TRACE SECONDS: appends an HS_EXT_EXITING record at
 * SECONDS since the start of the recording, as the recorder writes when
 * the process begins to exit (test_time_range.py: the teardown cut). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

#include "format/columns.h"
#include "format/encoder.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: append_exiting TRACE SECONDS\n");
		return 2;
	}
	uint64_t t = (uint64_t)(strtod(argv[2], NULL) * 1e9);
	uint8_t rec[HS_EXITING_MAX], work[1024], out[1024];
	size_t n = (size_t)(enc_exiting(rec, t) - rec);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	int fd = open(argv[1], O_WRONLY | O_APPEND);
	if (!cctx || fd < 0 || columns_bound(n) > sizeof(work)) {
		perror(argv[1]);
		return 1;
	}
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	size_t len = chunk_encode_plain(cctx, rec, n, out, sizeof(out), work);
	if (!len || write(fd, out, len) != (ssize_t)len) {
		fprintf(stderr, "append_exiting: cannot append to %s\n",
			argv[1]);
		return 1;
	}
	close(fd);
	ZSTD_freeCCtx(cctx);
	return 0;
}
