/* Offline symbolization with libdw: module maps (path, base, build-id,
 * segments) from the trace's HS_REC_MODULE records, looked up after the
 * process is gone.  Never fails: what cannot be resolved is shown as
 * module+offset, or as the raw address. */
#ifndef HS_SYMBOLS_H
#define HS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct hs_record;

struct frame {
	uint64_t address;     /* as recorded (a return address) */
	const char *module;   /* path, owned by the symbols; NULL: unknown */
	uint64_t offset;      /* address relative to the module's base */
	char *function;       /* demangled where possible; NULL: unknown */
	char *file;           /* NULL: unknown */
	unsigned line;        /* 0: unknown */
	int inlined;          /* inlined into the frame that follows */
	int python;           /* a Python frame (pyframes.h): function is
			       * the code's qualified name, offset its
			       * instruction's, module NULL */
};

struct symbols;

/* debuginfo_path: a directory searched for separate debug files (by
 * build-id under DIR/.build-id/ and by name), or NULL. */
struct symbols *symbols_create(const char *debuginfo_path);
void symbols_destroy(struct symbols *s);

/* Module records tick a clock: stack nodes written between the same
 * records were captured while the same modules were mapped.  SYMBOLS_NOW:
 * no time (the module mapped last). */
#define SYMBOLS_NOW UINT64_MAX

/* Remembers an HS_REC_MODULE record; -1 only when out of memory. */
int symbols_module(struct symbols *s, const struct hs_record *rec);
/* An HS_REC_MODULE_GONE record: the module at base was unloaded. */
void symbols_module_gone(struct symbols *s, uint64_t base);
/* The module and module-gone records so far. */
uint64_t symbols_clock(const struct symbols *s);
size_t symbols_module_count(const struct symbols *s);
/* Starts loading the files and debug information of the modules known so
 * far on a thread of its own, once, while the caller goes on (modules may
 * still be added); symbols_resolve waits for it.  0 while no module is
 * known, else 1 (also when the thread could not start: then the modules
 * are loaded when resolving, as without it). */
int symbols_preload(struct symbols *s);
/* Modules whose file has changed since the recording (another build-id,
 * no matching debug file) and which a frame resolved is in: how many, and
 * the first one's path.  Known once frames have been resolved. */
size_t symbols_stale(const struct symbols *s, const char **first);

/* 1 if ip lies in a runtime library whose frames only wrap malloc
 * (libstdc++'s operator new, libc, libgcc): not an allocation site. */
int symbols_in_runtime(void *symbols, uint64_t ip);

/* Appends the frames of return address ip (one, or more with inlined
 * calls, innermost first) to *frames; -1 only when out of memory. */
int symbols_resolve(struct symbols *s, uint64_t ip, struct frame **frames,
		    size_t *n, size_t *cap);
/* The same for a return address captured at clock `when`
 * (symbols_clock when its stack node was read): resolved against the
 * module mapped then, not one loaded at its address later. */
int symbols_resolve_at(struct symbols *s, uint64_t ip, uint64_t when,
		       struct frame **frames, size_t *n, size_t *cap);
void symbols_frames_free(struct frame *f, size_t n);

/* For matching many addresses by function name without resolving each
 * (groups.c).  The number (1-based) of the module that held ip at `when`
 * (0: none).  Then its function symbols: fn(ctx, lo, hi, name) for each,
 * [lo, hi) as mapped, name demangled (valid during the call); unless
 * *inlined says its debug information has inlined calls, frames of their
 * own that only symbols_resolve_at gives.  0, or fn's -1. */
uint32_t symbols_module_number(const struct symbols *s, uint64_t ip,
			       uint64_t when);
typedef int (*symbols_function_fn)(void *ctx, uint64_t lo, uint64_t hi,
				   const char *name);
int symbols_functions(struct symbols *s, uint64_t ip, uint64_t when,
		      symbols_function_fn fn, void *ctx, int *inlined);

#endif
