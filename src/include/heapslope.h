/* heapslope marker API.
 *
 * Include this header and call HEAPSLOPE_MARK_BATCH() once per batch (or
 * iteration, request, step), and HEAPSLOPE_MARK("label") for any other
 * moment worth a name.  No library needs to be linked: under
 * `heapslope record` the recorder provides the functions; without it the
 * macros do nothing and the program runs unchanged.
 *
 * From Python, with and without the recorder:
 *   mark = getattr(ctypes.CDLL(None), "heapslope_mark_batch", lambda: None)
 *   mark()  # once per batch
 */
#ifndef HEAPSLOPE_H
#define HEAPSLOPE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HEAPSLOPE_RECORDER
void heapslope_mark_batch(void);
void heapslope_mark(const char *label);
#else
/* Weak: resolved to the recorder when it is preloaded, else NULL. */
void heapslope_mark_batch(void) __attribute__((weak));
void heapslope_mark(const char *label) __attribute__((weak));

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

#define HEAPSLOPE_MARK_BATCH() heapslope_batch()
#define HEAPSLOPE_MARK(label) heapslope_label(label)
#endif

#ifdef __cplusplus
}
#endif

#endif
