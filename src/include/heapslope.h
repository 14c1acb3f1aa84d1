/* heapslope marker API.
 *
 * Include this header and call HEAPSLOPE_MARK_BATCH() once per batch (or
 * iteration, request, step), and HEAPSLOPE_MARK("label") for any other
 * moment worth a name.  No library needs to be linked: under
 * `heapslope record` the recorder provides the functions; without it the
 * macros do nothing and the program runs unchanged.
 *
 * Regions name the phases of a batch: HEAPSLOPE_REGION_BEGIN("forward")
 * ... HEAPSLOPE_REGION_END().  Each thread has its own regions, which
 * nest; every allocation belongs to the innermost region open on its
 * thread (and to the path of those open, outermost first), and
 * `heapslope analyze` reports the growth per region ("Growth by
 * region").  An end with no region open is ignored.  A region's name is
 * copied (at most 255 bytes), so any string will do.
 *
 * From Python, with and without the recorder:
 *   mark = getattr(ctypes.CDLL(None), "heapslope_mark_batch", lambda: None)
 *   mark()  # once per batch
 * and for regions the context manager in README.md ("Regions").
 */
#ifndef HEAPSLOPE_H
#define HEAPSLOPE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HEAPSLOPE_RECORDER
void heapslope_mark_batch(void);
void heapslope_mark(const char *label);
void heapslope_region_begin(const char *name);
void heapslope_region_end(void);
#else
/* Weak: resolved to the recorder when it is preloaded, else NULL. */
void heapslope_mark_batch(void) __attribute__((weak));
void heapslope_mark(const char *label) __attribute__((weak));
void heapslope_region_begin(const char *name) __attribute__((weak));
void heapslope_region_end(void) __attribute__((weak));

static inline void heapslope_batch(void)
{
	if (heapslope_mark_batch)
		heapslope_mark_batch();
}

static inline void heapslope_label(const char *label)
{
	if (heapslope_mark)
		heapslope_mark(label);
}

static inline void heapslope_region_open(const char *name)
{
	if (heapslope_region_begin)
		heapslope_region_begin(name);
}

static inline void heapslope_region_close(void)
{
	if (heapslope_region_end)
		heapslope_region_end();
}

#define HEAPSLOPE_MARK_BATCH() heapslope_batch()
#define HEAPSLOPE_MARK(label) heapslope_label(label)
#define HEAPSLOPE_REGION_BEGIN(name) heapslope_region_open(name)
#define HEAPSLOPE_REGION_END() heapslope_region_close()
#endif

#ifdef __cplusplus
}
#endif

#endif
