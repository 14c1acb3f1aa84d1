/* Python frames of a trace (HS_EXT_PY_CODE, _FRAME, _STACK records): the
 * code objects, the tree of Python frames, and which stack nodes carry
 * one; lines come from each code's line table, computed here.  Memory is
 * proportional to the distinct codes and frames, never to events. */
#ifndef HS_PYFRAMES_H
#define HS_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

struct hs_record;
struct frame;
struct pyframes;

/* How analyze shows Python frames (--python-frames). */
enum pyframes_mode {
	PYFRAMES_MERGED, /* each interpreter frame replaced by the Python
			  * frames it ran */
	PYFRAMES_PYTHON, /* Python frames alone (native where none) */
	PYFRAMES_NATIVE, /* none: the records are skipped, as a reader that
			  * does not know them would */
};

struct pyframes *pyframes_create(void);
void pyframes_destroy(struct pyframes *p);

/* An extension record: the Python ones are kept, others ignored; -1
 * (hs_error) for one that cannot be right. */
int pyframes_record(struct pyframes *p, const struct hs_record *rec);
/* Whether the trace had any Python frame (p may be NULL), and the
 * Py_Version of the interpreter that ran them (0: none). */
int pyframes_any(const struct pyframes *p);
uint64_t pyframes_version(const struct pyframes *p);

/* The thread whose records come next (HS_REC_SWITCH), and whether it
 * runs Python frames now (its events' stacks are then joined). */
int pyframes_thread(struct pyframes *p, uint64_t tid);
int pyframes_joining(const struct pyframes *p);
/* The stack of an event of that thread whose native stack is `stack`:
 * with the thread's Python frames (HS_EXT_PY_AT), their joint, a stack
 * of its own whose node carries them, made by make(ctx, id, stack) the
 * first time (0; 1 when stack is none, which then stays as it is; -1 with
 * hs_error); ids from PYFRAMES_JOINED on, one after the other.  Without
 * Python frames, stack itself; 0 on failure. */
#define PYFRAMES_JOINED (1ull << 32)
typedef int (*pyframes_make_fn)(void *ctx, uint64_t id, uint64_t native);
uint64_t pyframes_join(struct pyframes *p, uint64_t stack,
		       pyframes_make_fn make, void *ctx);

/* Stacks are given by their nodes, innermost first (stacks_ids): the
 * Python frames are joined to one of them.
 * With Python frames, the key of a stack's site: its innermost Python
 * line (PYFRAMES_SITE set); 0 when it has none. */
#define PYFRAMES_SITE (1ull << 63)
uint64_t pyframes_site(struct pyframes *p, const uint64_t *ids, size_t n);
/* The frame of a site key, appended to *frames (*n of *cap). */
int pyframes_site_frame(struct pyframes *p, uint64_t key,
			struct frame **frames, size_t *n, size_t *cap);

/* The stack of nodes ids[0..nids): its native frames nv[0..nn)
 * (innermost first, from symbols_resolve; taken over, freed or moved)
 * with its Python frames as the mode says, into a new array *out of
 * *nout.  -1 when out of memory (nv freed). */
int pyframes_merge(struct pyframes *p, const uint64_t *ids, size_t nids,
		   enum pyframes_mode mode, struct frame *nv, size_t nn,
		   struct frame **out, size_t *nout);

/* For grouping stacks by a frame (groups.h): the Python node a stack's
 * frames hang from (nodes ids[0..n), innermost first; 0: none), a
 * node's parent (0: none), and the names of its frame: 0 with the
 * qualified name and the file, -1 when the node is no frame. */
uint32_t pyframes_stack_node(const struct pyframes *p, const uint64_t *ids,
			     size_t n);
uint32_t pyframes_parent(const struct pyframes *p, uint32_t k);
int pyframes_names(const struct pyframes *p, uint32_t k,
		   const char **function, const char **file);
size_t pyframes_nodes(const struct pyframes *p); /* ids below this */

/* Line of the instruction at offset (16-bit code units) in a code whose
 * line table (CPython 3.11's format) is lt[0..n) and first line first;
 * 0 when the table has none for it. */
unsigned pyframes_line(const uint8_t *lt, size_t n, unsigned first,
		       uint64_t offset);

#endif
