/* Row-level mutation of whole traces: the trace is decoded with the
 * project's reader, some records (or header fields) get absurd values (0,
 * 1, 2^31, 2^32, 2^63, 2^64 - 1, sizes near the end of the address space,
 * pointers near 2^64, huge negative deltas, unknown ids, huge counts,
 * records repeated thousands of times), and every chunk is encoded again
 * with the project's encoder: valid rows, columns, zstd frames with
 * checksums and chunk headers.  Mutated traces pass the framing, so what
 * they test is how the analyzer handles the values.
 *
 * Used by the libFuzzer target's custom mutator and by trace_mutate, the
 * tool of the deterministic test (tests/analyze/test_absurd_values.py). */
#ifndef HS_MUTATE_H
#define HS_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* What a rule changes.  Record fields apply to records that have them
 * (a pointer of an event, an id of a stack node...); the header's to the
 * header. */
enum mutate_field {
	MF_PTR,      /* events: the (new) pointer; modules: the base */
	MF_OLD,      /* realloc: the old pointer */
	MF_SIZE,     /* events: size or length */
	MF_STACK,    /* events: stack id */
	MF_ID,       /* stack node: id */
	MF_PARENT,   /* stack node: parent id */
	MF_IP,       /* stack node: return address */
	MF_TID,      /* thread, thread name, switch */
	MF_TIME,     /* mark, sample, time */
	MF_KIND,     /* mark: kind */
	MF_RSS,      /* sample: RSS */
	MF_BRK,      /* sample: the program break */
	MF_MALLINFO, /* sample: every mallinfo2 field */
	MF_FN,       /* events: the allocation function (low nibble) */
	MF_VADDR,    /* module: every segment's vaddr */
	MF_MEMSZ,    /* module: every segment's memsz */
	MF_NSEG,     /* module: that many segments (copies of the last) */
	MF_REASON,   /* end: reason */
	MF_COUNT,    /* end: every counter */
	MF_NCOUNT,   /* end: that many counters */
	MF_STATUS,   /* exit: wait status */
	MF_REPEAT,   /* the record, written that many times */
	MF_PAGE_SIZE, /* header fields */
	MF_HEAP_START,
	MF_OPTIONS,
	MF_COUNT_
};

#define MUTATE_HEADER UINT64_MAX /* the index of the header in a rule */

struct mutate_rule {
	uint64_t index; /* record number, from 0; or MUTATE_HEADER */
	enum mutate_field field;
	uint64_t value;
	int add; /* value is added to the field's (mod 2^64): a pointer moved
		  * by -2^62 is a huge negative delta */
};

/* "INDEX:FIELD=VALUE", "INDEX:FIELD+=VALUE" or "header:FIELD=VALUE"
 * (VALUE in C notation, negative ones too) into *r; -1 if it is not
 * one. */
int mutate_parse_rule(const char *s, struct mutate_rule *r);

/* The trace in[0, n) again, with the rules applied, into *out (malloc'd,
 * *outn bytes).  Records after a corrupt or truncated chunk are left out.
 * -1 (hs_error) when in is not a trace or out of memory. */
int mutate_apply(const uint8_t *in, size_t n, const struct mutate_rule *rules,
		 size_t nrules, uint8_t **out, size_t *outn);

/* The same with rules drawn from seed: a few records of the trace, their
 * fields and the absurd values. */
int mutate_random(const uint8_t *in, size_t n, uint64_t seed, uint8_t **out,
		  size_t *outn);

#endif
