/* A small shared library for the dlopen test: its allocations must show
 * stacks through its own code. */
#include <stdlib.h>

int victimlib_alloc(int n, void **out);

__attribute__((visibility("default"), noinline)) int
victimlib_alloc(int n, void **out)
{
	for (int i = 0; i < n; i++) {
		out[i] = malloc(50000 + (size_t)i);
		if (!out[i])
			return -1;
		__asm__ volatile("" : : "r"(out[i]) : "memory");
	}
	return 0;
}
