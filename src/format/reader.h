/* Streaming trace reader: header, then one decoded record at a time.
 * Memory stays bounded by one chunk, whatever the trace's length. */
#ifndef HS_READER_H
#define HS_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

#define HS_MAX_SEGS 16

struct hs_header {
	unsigned version;
	uint64_t pid, ppid;
	uint64_t start_realtime_ns, start_monotonic_ns;
	uint64_t page_size, depth, options, interval_ms;
	uint64_t heap_start; /* start of the brk heap; 0: unknown */
	char *exe;
	char **argv; /* NULL-terminated */
	int argc;
	char *recorder_version;
	char *unwind;
	char *allocator;
	char *malloc_owner; /* the program's malloc is not the recorder's */
	int pymalloc_set;   /* `record` set PYTHONMALLOC=malloc */
	int has_before;     /* the before-start counts are in the header */
	uint64_t before_allocs, before_bytes; /* allocations made before
					       * recording started */
};

struct hs_segment {
	uint64_t vaddr, memsz, offset, flags;
};

struct hs_record {
	unsigned tag;   /* full tag byte */
	unsigned kind;  /* HS_TAG_KIND(tag) for events, else the tag */
	unsigned fn;    /* HS_FN_* for events */
	uint64_t tid;   /* thread of events, or the tid a thread record names */
	uint64_t time_ns; /* latest known time since the start of recording */
	uint64_t ptr, old_ptr, size, stack;
	/* HS_REC_STACK */
	uint64_t id, parent, ip;
	/* HS_REC_MODULE / MODULE_GONE: base; strings are not NUL-terminated
	 * and live until the next call to reader_next */
	uint64_t base;
	const char *str;
	size_t str_len; /* path, thread name, mark label, exec path */
	const uint8_t *build_id;
	size_t build_id_len;
	unsigned nseg;
	struct hs_segment segs[HS_MAX_SEGS];
	/* HS_REC_MARK */
	unsigned mark_kind;
	/* HS_REC_SAMPLE */
	uint64_t rss;
	uint64_t flags; /* HS_SAMPLE_* */
	int has_mallinfo;
	uint64_t mi_arena, mi_ordblks, mi_hblks, mi_hblkhd, mi_uordblks,
		mi_fordblks, mi_keepcost;
	uint64_t brk; /* end of the brk heap; 0: not in the sample */
	/* HS_REC_END / HS_REC_EXIT */
	unsigned end_reason;
	uint64_t counts[HS_COUNT_MAX];
	uint64_t wait_status;
	uint64_t signal; /* HS_EXT_SIGNAL */
	/* HS_REC_EXT: its type and payload; a known type's fields are
	 * decoded into the fields above (ptr, size, stack, str) and map */
	uint64_t ext_type;
	const uint8_t *ext;
	size_t ext_len;
	/* HS_EXT_MAP, HS_EXT_REMAP: ptr is the address, size the length;
	 * HS_EXT_REMAP: old_ptr and map.old_size the old mapping;
	 * HS_EXT_EXITING: time_ns; HS_EXT_PROTECT: ptr, size, map.prot;
	 * HS_EXT_REGION_NAME: id, str (the name); HS_EXT_REGION_BEGIN:
	 * time_ns, id; HS_EXT_REGION_END: time_ns */
	struct hs_map_info {
		uint64_t prot, flags; /* PROT_*, MAP_* (shmat: SHM_* flags) */
		uint64_t kind;        /* HS_MAP_* */
		uint64_t dev, ino;    /* the file's identity, 0 if none */
		uint64_t offset;      /* in the file (shmat: the shm id) */
		uint64_t old_size;
	} map;
	/* HS_EXT_PY_CODE: code, version (CPython's Py_Version), first_line,
	 * str (the file), name, qualname and lines (the line table, in the
	 * version's format); HS_EXT_PY_FRAME: id, parent, code, offset (of
	 * the instruction, in 16-bit code units), flags (HS_PY_*);
	 * HS_EXT_PY_STACK: id (the stack node), python (its innermost
	 * Python frame node); HS_EXT_PY_AT: python (the thread's innermost
	 * Python frame node from now on, 0: none) */
	struct hs_py_info {
		uint64_t code, version, first_line, offset, flags, python;
		const char *name, *qualname;
		const uint8_t *lines;
		size_t name_len, qualname_len, lines_len;
	} py;
};

/* A heap event (kind >= HS_REC_ALLOC), as reader_events decodes it: the
 * fields of struct hs_record that the replay needs, and no more. */
struct hs_event {
	uint64_t ptr, old_ptr, size, stack;
	unsigned kind, fn;
};

struct hs_reader;

/* Opens and validates the header; NULL with hs_last_error() on failure. */
struct hs_reader *reader_open(const char *path);
/* The same from a descriptor, from its current offset (the caller keeps
 * it: the reader reads a duplicate, which shares the offset) or from memory (read in place: buf must outlive the
 * reader); name is how messages call the trace. */
struct hs_reader *reader_open_fd(int fd, const char *name);
struct hs_reader *reader_open_mem(const void *buf, size_t n,
				  const char *name);
const struct hs_header *reader_header(const struct hs_reader *r);
/* From the first chunk on, decode chunks ahead on a thread of their own
 * (reading, decompressing and reordering overlap with the caller's work).
 * Records are the same either way. */
void reader_prefetch(struct hs_reader *r);
/* 1: a record; 0: clean end of file; -1: error (hs_last_error()), such as
 * a corrupt or truncated chunk.  Records before the error were valid. */
int reader_next(struct hs_reader *r, struct hs_record *rec);
/* Decodes the heap events that come next in the current chunk, at most
 * max, into ev; returns how many.  0 when the next record is another kind,
 * a malformed event, or in the next chunk: reader_next reads (or reports)
 * it.  The events' thread and time are those of reader_next's last record. */
size_t reader_events(struct hs_reader *r, struct hs_event *ev, size_t max);
/* After reader_next returned -1: whether the file simply ends inside a
 * chunk (a trace cut short), as opposed to corrupt or foreign bytes. */
int reader_truncated(const struct hs_reader *r);
/* Byte offset just past the last complete chunk read. */
uint64_t reader_offset(const struct hs_reader *r);
uint64_t reader_chunks(const struct hs_reader *r);
/* Goes on reading at the chunk that starts at byte offset (found by
 * walking the chunk headers; without prefetch): the records of a trace's
 * last chunks, without decoding the ones before. */
int reader_seek(struct hs_reader *r, uint64_t offset);
void reader_destroy(struct hs_reader *r);

/* Parses a header from memory (used by the reader and by tests). */
int header_parse(const uint8_t *buf, size_t len, unsigned version,
		 struct hs_header *h);
void header_finish(struct hs_header *h);

#endif
