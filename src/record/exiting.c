/* When the process begins to exit, for the analyzer, which leaves the
 * teardown out of the growth: the program calling exit() (preload.c), and
 * CPython's finalization, which frees most of the heap before main even
 * returns.  CPython is found by its exported runtime state, read at each
 * free (its teardown is frees) and by the writer thread at each tick: no
 * call into the interpreter, no hook. */
#include <dlfcn.h>
#include <stdint.h>

#include "internal.h"

/* _PyRuntime._finalizing: the thread state finalizing, once
 * Py_FinalizeEx began (after the atexit callbacks); after five ints in
 * 3.11 and 3.12.  Later versions describe their own layout
 * (_Py_DebugOffsets): issue 12's reader of Python frames. */
#define PY_FINALIZING_OFFSET 24

const uintptr_t *exiting_py_finalizing;
static int python_image;

int exiting_in_python(void)
{
	return python_image;
}

void exiting_init(void)
{
	const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
	const uint8_t *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	exiting_py_finalizing = NULL;
	python_image = version != NULL || runtime != NULL;
	if (!version || !runtime)
		return;
	unsigned long major_minor = *version >> 16;
	if (major_minor == 0x030b || major_minor == 0x030c)
		exiting_py_finalizing =
			(const uintptr_t *)(runtime + PY_FINALIZING_OFFSET);
}

int exiting_python(void)
{
	return exiting_py_finalizing &&
	       __atomic_load_n(exiting_py_finalizing, __ATOMIC_RELAXED) != 0;
}
