/* opscope: an operator new in a group of its own (a C library may define
 * one: a custom allocator loaded RTLD_LOCAL). */
#include <stdlib.h>

int hsox_calls(void);
void *_Znwm(size_t n);

static int calls;

void *_Znwm(size_t n)
{
	calls++;
	return malloc(n ? n : 1);
}

int hsox_calls(void)
{
	return calls;
}
