/* Call-stack capture for the recorder.  Whatever the method, the result is
 * the same: return addresses of the calling thread, innermost first,
 * starting at the caller of the interposed allocation function. */
#ifndef HS_UNWIND_H
#define HS_UNWIND_H

#include <link.h>
#include <stdint.h>

#include "../launch/contract.h" /* HS_DEPTH_MAX */

enum unwind_method {
	UNWIND_LIBUNWIND, /* unw_backtrace with a per-thread cache */
	UNWIND_FAST,      /* own CFI unwinder, x86_64; libunwind fallback */
};

/* Picks the method by name ("libunwind", "fast"); NULL or "" is the
 * default, fast where available; -1 if unknown or not available here. */
int unwind_init(const char *name);
const char *unwind_name(void);
/* Up to max return addresses into ips; returns how many.  *walk is set
 * to the key of the walk that found them, or 0: the
 * unwinder keeps some walks per thread, and a later capture by the same
 * thread with the same key returned the same frames, whatever max it
 * asked for.  A key is never reused by the thread; its low
 * UNWIND_WALK_BITS bits tell which of the kept walks it is, so that a
 * table of 1 << UNWIND_WALK_BITS entries indexed by them holds one entry
 * per kept walk. */
int unwind_capture(uintptr_t *ips, int max, uint64_t *walk);
#define UNWIND_WALK_BITS 10

/* What a capture tells of the thread's kept walk, besides its frames.
 * The fast method keeps the thread's latest walk (its frames counted
 * from the outermost, position 0), numbered anew each time it changes:
 * - prior, kept: its number before and after the capture (0: none);
 * - shared: how many of its outermost frames the capture left as they
 *   were (a walk that reuses the outer part of the kept one);
 * - rooted: the frames returned are the kept walk's after the capture,
 *   position for position from the outermost (ips[n - 1 - j] is frame j),
 *   though perhaps fewer at the inner end.
 * A caller that keeps something per frame of the kept walk (stacks.c
 * keeps tree nodes) can keep the shared part of it. */
struct unwind_walk {
	uint64_t key; /* as unwind_capture's *walk */
	uint64_t prior, kept;
	int shared, rooted;
};
int unwind_capture_walk(uintptr_t *ips, int max, struct unwind_walk *walk);
/* The same with libunwind alone, which keeps no state of the thread's
 * that an interrupted capture may be changing: for nested calls. */
int unwind_capture_plain(uintptr_t *ips, int max);
/* The pipe libunwind opened to probe memory with (preload.c's pipe2):
 * while the program holds other files on its numbers, libunwind is not
 * used (stacks it would have captured are empty). */
void unwind_note_pipe(const int fds[2]);
/* Forgets what the thread's captures kept (one was left unfinished). */
void unwind_forget(void);

/* The address range a loaded object's PT_LOAD segments cover. */
void unwind_module_range(const struct dl_phdr_info *info, uintptr_t *lo,
			 uintptr_t *hi);

#endif
