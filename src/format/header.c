/* The trace header's body: fields of a varint key and a length-prefixed
 * value (heapslope-trace(5)); keys a reader does not know are skipped. */
#include "reader.h"

#include <stdlib.h>
#include <string.h>

#include "../base/error.h"
#include "varint.h"

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

void header_finish(struct hs_header *h)
{
	if (!h)
		return;
	free(h->exe);
	for (int i = 0; h->argv && i < h->argc; i++)
		free(h->argv[i]);
	free(h->argv);
	free(h->recorder_version);
	free(h->unwind);
	free(h->allocator);
	free(h->malloc_owner);
	memset(h, 0, sizeof(*h));
}

static int set_string(char **dst, const uint8_t *v, size_t n)
{
	free(*dst);
	*dst = dup_bytes(v, n);
	return *dst ? 0 : hs_error("out of memory");
}

int header_parse(const uint8_t *buf, size_t len, unsigned version,
		 struct hs_header *h)
{
	const uint8_t *p = buf, *end = buf + len;
	memset(h, 0, sizeof(*h));
	h->version = version;
	while (p < end) {
		uint64_t key, n, v = 0;
		if (varint_get(&p, end, &key) || varint_get(&p, end, &n) ||
		    n > (uint64_t)(end - p))
			goto corrupt;
		const uint8_t *val = p, *vend = p + n;
		p = vend;
		int is_int = key == HS_HDR_PID || key == HS_HDR_PPID ||
			     key == HS_HDR_START_REALTIME ||
			     key == HS_HDR_START_MONOTONIC ||
			     key == HS_HDR_PAGE_SIZE || key == HS_HDR_DEPTH ||
			     key == HS_HDR_OPTIONS || key == HS_HDR_INTERVAL ||
			     key == HS_HDR_HEAP_START ||
			     key == HS_HDR_PYMALLOC ||
			     key == HS_HDR_BEFORE_ALLOCS ||
			     key == HS_HDR_BEFORE_BYTES;
		if (is_int && varint_get(&val, vend, &v))
			goto corrupt;
		switch (key) {
		case HS_HDR_PID: h->pid = v; break;
		case HS_HDR_PPID: h->ppid = v; break;
		case HS_HDR_START_REALTIME: h->start_realtime_ns = v; break;
		case HS_HDR_START_MONOTONIC: h->start_monotonic_ns = v; break;
		case HS_HDR_PAGE_SIZE: h->page_size = v; break;
		case HS_HDR_DEPTH: h->depth = v; break;
		case HS_HDR_OPTIONS: h->options = v; break;
		case HS_HDR_INTERVAL: h->interval_ms = v; break;
		case HS_HDR_HEAP_START: h->heap_start = v; break;
		case HS_HDR_PYMALLOC: h->pymalloc_set = v == 1; break;
		case HS_HDR_BEFORE_ALLOCS:
			h->before_allocs = v;
			h->has_before = 1;
			break;
		case HS_HDR_BEFORE_BYTES: h->before_bytes = v; break;
		case HS_HDR_EXE:
			if (set_string(&h->exe, val, n))
				goto fail;
			break;
		case HS_HDR_VERSION:
			if (set_string(&h->recorder_version, val, n))
				goto fail;
			break;
		case HS_HDR_UNWIND:
			if (set_string(&h->unwind, val, n))
				goto fail;
			break;
		case HS_HDR_ALLOCATOR:
			if (set_string(&h->allocator, val, n))
				goto fail;
			break;
		case HS_HDR_MALLOC_OWNER:
			if (set_string(&h->malloc_owner, val, n))
				goto fail;
			break;
		case HS_HDR_ARG: {
			char **a = realloc(h->argv, (h->argc + 2) * sizeof(*a));
			if (!a)
				goto oom;
			h->argv = a;
			a[h->argc] = dup_bytes(val, n);
			if (!a[h->argc])
				goto oom;
			a[++h->argc] = NULL;
			break;
		}
		default: /* a newer writer's field: skip it */
			break;
		}
	}
	if (!h->argv) {
		h->argv = calloc(1, sizeof(*h->argv));
		if (!h->argv)
			goto oom;
	}
	return 0;
oom:
	hs_error("out of memory");
	goto fail;
corrupt:
	hs_error("corrupt trace header");
fail:
	header_finish(h);
	return -1;
}

