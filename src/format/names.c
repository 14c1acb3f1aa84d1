#include "trace_format.h"

static const char *const fn_names[HS_FN_COUNT] = {
	[HS_FN_MALLOC] = "malloc",
	[HS_FN_CALLOC] = "calloc",
	[HS_FN_REALLOC] = "realloc",
	[HS_FN_REALLOCARRAY] = "reallocarray",
	[HS_FN_POSIX_MEMALIGN] = "posix_memalign",
	[HS_FN_ALIGNED_ALLOC] = "aligned_alloc",
	[HS_FN_MEMALIGN] = "memalign",
	[HS_FN_VALLOC] = "valloc",
	[HS_FN_PVALLOC] = "pvalloc",
	[HS_FN_FREE] = "free",
	[HS_FN_MMAP] = "mmap",
	[HS_FN_MUNMAP] = "munmap",
	[HS_FN_MREMAP] = "mremap",
};

const char *hs_fn_name(unsigned fn)
{
	return fn < HS_FN_COUNT ? fn_names[fn] : "unknown";
}

const char *const hs_end_reasons[HS_END_REASONS + 1] = {
	[HS_END_EXIT] = "exit",
	[HS_END_EXEC] = "exec",
	[HS_END__EXIT] = "_exit",
	[HS_END_ERROR] = "error",
	[HS_END_SIGNAL] = "signal",
};

const char *hs_end_reason_name(unsigned reason)
{
	return reason < HS_END_REASONS ? hs_end_reasons[reason] : "?";
}
