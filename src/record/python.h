/* Python frames: the allocating thread's own CPython frame chain, read at
 * each captured stack, and the code objects they run, each written to the
 * trace once (HS_EXT_PY_CODE).  Nothing here calls into the interpreter:
 * the structures are read where the interpreter's version puts them. */
#ifndef HS_PYTHON_H
#define HS_PYTHON_H

#include <stddef.h>
#include <stdint.h>

/* Frames kept per stack, innermost first; deeper ones are left out. */
#define PY_DEPTH 128

/* One Python frame as read: its code object, the address of that code's
 * line table (with the code's, what tells a code object from a later
 * one at the same address), and the instruction it is at, in code units,
 * shifted left by 2 with HS_PY_* flags below. */
struct py_raw {
	uintptr_t code, lines;
	uint64_t where;
};
#define PY_WHERE(offset, flags) ((uint64_t)(offset) << 2 | (flags))

/* At start-up and when modules change: finds the interpreter the process
 * runs, if any (Py_Version, _PyRuntime); on names capture on (settings:
 * `record --no-python` turns it off). */
void python_init(int on);
/* Whether this process runs an interpreter whose frames are read
 * (python.c's to set; every event asks). */
extern int python_active;
static inline int python_on(void)
{
	return __atomic_load_n(&python_active, __ATOMIC_RELAXED);
}

/* What a capture read of the interpreter's frame chain, innermost first:
 * the frames it put out (raw), and each frame it went through (begun or
 * not), with the words it read there.  The next capture of the thread
 * reads the chain until it meets a frame of this one, then only checks
 * that every word read from there outwards is the same: an interpreter
 * inside deep Python code (an import) allocates under 30 frames or more,
 * and most of them stay as they were. */
#define PY_VISITS (PY_DEPTH + 64)
#define PY_SEEK 16
#define PY_SEEK_MIN 8 /* fewer visits: the next capture reads them all */
struct py_visit {
	uintptr_t fr, code, instr, lines;
	uint32_t flags; /* is_entry | owner << 8 | (an entry pending) << 16 */
	uint32_t rem;   /* frames put out from this one to the chain's end
			 * (in a chain of PY_SEEK_MIN visits or more) */
};
struct py_trail {
	int n;    /* frames in raw */
	int seen; /* visits in v; -1: the chain's end was not reached */
	struct py_raw raw[PY_DEPTH];
	struct py_visit v[PY_VISITS];
	/* by frame address (py_seek), a visit as seen - its index (0: none),
	 * which the visits of last copied keep; set from PY_SEEK_MIN visits */
	uint16_t seek[PY_SEEK];
};

/* The calling thread's Python frames into now->raw[0..PY_DEPTH),
 * innermost first, with what the capture read (last: the thread's
 * previous capture, or NULL).  *common: how many outermost frames are
 * those of last->raw, -1 if not known.  0 when the thread never ran
 * Python, the interpreter is finalizing, or capture is off.  No lock,
 * no call into Python. */
int python_capture(struct py_trail *now, const struct py_trail *last,
		   int *common);
/* python_capture's *common when the chain is last's, frame for frame and
 * word for word: now was not written, last's frames are the capture's;
 * PY_MOVED: the same but for the place of the innermost frame, which
 * has begun then and now: last with now->raw[0] and now->v[0].instr for
 * its own (nothing else of now written). */
#define PY_SAME (-2)
#define PY_MOVED (-3)

/* The native stack ips[0..n) of a thread that runs Python, without the
 * interpreter's own frames outside its innermost eval loop frame
 * (_PyEval_EvalFrameDefault): they only call from one Python function to
 * the next, and the Python frames stand for them.  The eval frames stay
 * (the analyzer puts the Python frames there), and so does every frame
 * of other modules.  Returns the new n; *eval: the index of the
 * innermost eval frame (the same before and after), n if none. */
int python_trim(uintptr_t *ips, int n, int *eval);

/* Where the interpreter's code is (python_trim): its eval loop
 * (return addresses into it are eval frames), and its module. */
struct python_code {
	uintptr_t eval_lo, eval_hi;
	uintptr_t interp_lo, interp_hi;
};
extern struct python_code python_code;
static inline int python_is_eval(uintptr_t ip)
{
	return ip > python_code.eval_lo && ip <= python_code.eval_hi;
}
/* A frame python_trim leaves out outside the innermost eval frame: the
 * interpreter's own, not its eval loop. */
static inline int python_is_interp(uintptr_t ip)
{
	return !python_is_eval(ip) && ip > python_code.interp_lo &&
	       ip <= python_code.interp_hi;
}

/* Lock held.  The trace's ids of the codes of f[0..n) into ids[], 0 for
 * a code not written yet; returns the bytes its records need. */
size_t python_codes_need(const struct py_raw *f, int n, uint32_t *ids);
/* Lock held, after python_codes_need: writes the records of the codes
 * whose ids[] is 0 at p and fills in their ids; returns the new end. */
uint8_t *python_codes_put(const struct py_raw *f, int n, uint32_t *ids,
			  uint8_t *p);
/* A forked child's trace starts without codes. */
void python_reset(void);

#endif
