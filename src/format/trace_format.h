/* The heapslope trace format, version 2: the one thing the recorder and the
 * analyzer share. man/heapslope-trace.5 documents it byte by byte. */
#ifndef HS_TRACE_FORMAT_H
#define HS_TRACE_FORMAT_H

#include <stdint.h>

/* File = preamble + header body + chunks.
 *   preamble: magic[8], u16 version, u16 flags, u32 header body length (LE)
 *   header body: fields, each varint key, varint length, bytes
 *   chunk: "HSFR", u32 compressed size, u32 decompressed size (LE), then one
 *          zstd frame (with content checksum) holding whole records */
#define HS_MAGIC "\x89HSLOPE\n"
#define HS_MAGIC_LEN 8
#define HS_FORMAT_VERSION 2
/* version 1 had no modeled chunks (columns.h); it reads as it did */
#define HS_FORMAT_VERSION_MIN 1
#define HS_PREAMBLE_LEN 16
#define HS_HEADER_MAX (1u << 20)
#define HS_CHUNK_MAGIC "HSFR"
#define HS_CHUNK_HEADER_LEN 12
#define HS_CHUNK_MAX (16u << 20) /* decompressed bytes per chunk, at most */

/* Header fields.  Integers are varints inside the field's bytes; a reader
 * skips keys it does not know. */
enum hs_hdr_key {
	HS_HDR_PID = 1,
	HS_HDR_PPID = 2,
	HS_HDR_EXE = 3,         /* string */
	HS_HDR_ARG = 4,         /* string, repeated once per argv element */
	HS_HDR_START_REALTIME = 5, /* ns since the epoch */
	HS_HDR_START_MONOTONIC = 6, /* ns, CLOCK_MONOTONIC */
	HS_HDR_PAGE_SIZE = 7,
	HS_HDR_DEPTH = 8,       /* stack depth limit */
	HS_HDR_OPTIONS = 9,     /* HS_OPT_* bits */
	HS_HDR_VERSION = 10,    /* recorder version string */
	HS_HDR_INTERVAL = 11,   /* sample interval, ms */
	HS_HDR_UNWIND = 12,     /* unwinder name */
	HS_HDR_ALLOCATOR = 13,  /* allocator name (glibc unless told) */
	HS_HDR_HEAP_START = 14, /* start of the brk heap (start_brk), 0 if
				 * unknown */
	HS_HDR_MALLOC_OWNER = 15, /* string: the object whose malloc the
				   * program calls, when it is not the
				   * recorder's: nothing through it is
				   * recorded */
	HS_HDR_PYMALLOC = 16,   /* 1: `record` set PYTHONMALLOC=malloc for
				 * the program (CPython's own allocator
				 * replaced by malloc) */
	HS_HDR_BEFORE_ALLOCS = 17, /* allocations the program made before
				    * recording started (not recorded);
				    * absent in a forked process's trace */
	HS_HDR_BEFORE_BYTES = 18,  /* their bytes */
};

enum hs_opt {
	HS_OPT_MMAP = 1,    /* anonymous mmap/munmap/mremap are recorded */
	HS_OPT_FORKED = 2,  /* this process was forked from a recorded one */
	HS_OPT_EXECED = 4,  /* this image was exec'd by a recorded process */
	HS_OPT_MAPS = 8,    /* every mapping the program makes is recorded
			     * (HS_EXT_MAP...): anonymous and file-backed,
			     * private and shared */
};

/* Types of extension records (HS_REC_EXT); a reader skips the others. */
enum hs_ext_type {
	HS_EXT_MAP = 1,     /* a mapping the program made (mmap, shmat) */
	HS_EXT_UNMAP = 2,   /* a range given back (munmap; shmdt: len 0) */
	HS_EXT_REMAP = 3,   /* mremap: a mapping moved or resized */
	HS_EXT_EXITING = 4, /* the process began to exit (exit(), the end of
			     * main): what follows is teardown */
	HS_EXT_PROTECT = 5, /* mprotect of a mapping the program made: a
			     * reservation committed, or made PROT_NONE */
	HS_EXT_PY_CODE = 6,  /* a Python code object, once: its names, file,
			      * first line and line table */
	HS_EXT_PY_FRAME = 7, /* a node of the Python frame tree: (parent,
			      * code, instruction) */
	HS_EXT_PY_STACK = 8, /* a stack node that is a native stack with
			      * Python frames: its STACK record copies the
			      * native stack's innermost node, so a reader
			      * that skips this sees the native stack (read;
			      * the recorder writes HS_EXT_PY_AT now) */
	HS_EXT_REGION_NAME = 9,   /* a region's name, once per id, before the
				   * first REGION_BEGIN that uses it */
	HS_EXT_REGION_BEGIN = 10, /* the writing thread opens region id
				   * (heapslope_region_begin), inside the
				   * ones it has open */
	HS_EXT_REGION_END = 11,   /* the writing thread closes its innermost
				   * open region (none open: ignored) */
	HS_EXT_PY_AT = 12, /* the Python frames the thread runs from now on:
			    * its next stacks are native stacks (without
			    * the interpreter frames the Python ones stand
			    * for) under this Python frame node (0: none),
			    * until the next HS_EXT_PY_AT of the thread */
	HS_EXT_SIGNAL = 13, /* the signal the process dies of, just before
			     * an end of reason HS_END_SIGNAL */
};

/* HS_EXT_PY_FRAME flags. */
enum hs_py_frame_flags {
	HS_PY_ENTRY = 1, /* the outermost frame one native call of the
			  * interpreter's eval loop runs: the frames up to
			  * and including it belong to one native
			  * _PyEval_EvalFrameDefault frame */
	HS_PY_NONE = 2,  /* no Python frame: that eval call has none that
			  * has begun (code 0) */
};

/* What a mapping is backed by (the kind field of HS_EXT_MAP). */
enum hs_map_kind {
	HS_MAP_ANON = 0,   /* anonymous, private or shared */
	HS_MAP_FILE = 1,   /* a regular file */
	HS_MAP_SHM = 2,    /* POSIX shared memory: a file under /dev/shm */
	HS_MAP_MEMFD = 3,  /* a memfd */
	HS_MAP_SYSV = 4,   /* System V shared memory (shmat) */
	HS_MAP_OTHER = 5,  /* a device, or a file of another kind */
};

/* Record tags.  Every record is one tag byte and its fields; integers are
 * LEB128 varints.  Each record's fields are declared once, in records.c
 * (and documented from it in heapslope-trace(5)); what each record means: */
enum hs_tag {
	HS_REC_STACK = 0x01,   /* one node of the stack tree */
	HS_REC_MODULE = 0x02,  /* a loaded object and its segments */
	HS_REC_MODULE_GONE = 0x03, /* a module unloaded by dlclose */
	HS_REC_THREAD = 0x04,  /* a thread seen for the first time */
	HS_REC_THREAD_NAME = 0x05, /* its name */
	HS_REC_SWITCH = 0x06,  /* the following events are this thread's */
	HS_REC_MARK = 0x07,    /* a batch mark or a labelled mark */
	HS_REC_SAMPLE = 0x08,  /* RSS, and what flags (HS_SAMPLE_*) add */
	HS_REC_TIME = 0x09,    /* ns since the start of recording */
	HS_REC_END = 0x0a,     /* the trace was closed: reason, counters */
	HS_REC_EXIT = 0x0b,    /* wait status of the process, from `record` */
	HS_REC_EXEC = 0x0c,    /* the process is about to exec */
	HS_REC_STOP = 0x0d,    /* recording stopped early, on an error; an END
	                        * record follows if it can */
	HS_REC_EXT = 0x0e,     /* an extension record: a type and a payload;
	                        * a reader skips the types it does not know */
	/* events: the low nibble is the function (HS_FN_*) */
	HS_REC_ALLOC = 0x10,   /* a block allocated */
	HS_REC_FREE = 0x20,    /* a block freed */
	HS_REC_REALLOC = 0x30, /* a block moved or resized */
	HS_REC_FAIL = 0x40,    /* a call that returned NULL */
	HS_REC_MUNMAP = 0x50,  /* a range of anonymous mmap memory given
	                        * back (may be partial) */
};
#define HS_TAG_KIND(t) ((t) & 0xf0)

/* What a sample record carries besides RSS. */
enum hs_sample_flags { HS_SAMPLE_MALLINFO = 1, HS_SAMPLE_BRK = 2 };
#define HS_SAMPLE_KNOWN ((uint64_t)(HS_SAMPLE_MALLINFO | HS_SAMPLE_BRK))
/* mallinfo2 fields a sample carries with HS_SAMPLE_MALLINFO */
#define HS_MALLINFO_FIELDS 7
#define HS_TAG_FN(t) ((t) & 0x0f)

/* The allocation function an event came from (low nibble of the tag). */
enum hs_fn {
	HS_FN_MALLOC = 0,
	HS_FN_CALLOC = 1,
	HS_FN_REALLOC = 2,
	HS_FN_REALLOCARRAY = 3,
	HS_FN_POSIX_MEMALIGN = 4,
	HS_FN_ALIGNED_ALLOC = 5,
	HS_FN_MEMALIGN = 6,
	HS_FN_VALLOC = 7,
	HS_FN_PVALLOC = 8,
	HS_FN_FREE = 9,
	HS_FN_MMAP = 10,
	HS_FN_MUNMAP = 11,
	HS_FN_MREMAP = 12,
	HS_FN_COUNT
};

enum hs_mark_kind { HS_MARK_BATCH = 0, HS_MARK_LABEL = 1 };

enum hs_end_reason {
	HS_END_EXIT = 0,  /* exit() or return from main */
	HS_END_EXEC = 1,  /* the image was replaced by exec */
	HS_END__EXIT = 2, /* _exit()/_Exit() */
	HS_END_ERROR = 3, /* recording stopped on an error */
	HS_END_SIGNAL = 4, /* a signal whose default action ends the process
			    * came (HS_EXT_SIGNAL says which): the process
			    * dies of it, exit handlers unrun */
	HS_END_REASONS
};

/* Counters carried by the end record, in this order. */
enum hs_count {
	HS_COUNT_EVENTS,
	HS_COUNT_ALLOCATIONS,
	HS_COUNT_FREES,
	HS_COUNT_REALLOCS,
	HS_COUNT_FAILED,
	HS_COUNT_MARKS,
	HS_COUNT_SAMPLES,
	HS_COUNT_STACKS,
	HS_COUNT_THREADS,
	HS_COUNT_MMAPS,
	HS_COUNT_MUNMAPS,
	HS_COUNT_UNRECORDED, /* calls the recorder saw but could not record */
	HS_COUNT_MAX
};

const char *hs_fn_name(unsigned fn);
/* "exit", "exec", "_exit", "error", "signal"; "?" for others */
const char *hs_end_reason_name(unsigned reason);
extern const char *const hs_end_reasons[HS_END_REASONS + 1]; /* NULL-ended */

#endif
