/* initorder: a C library whose constructor calls a hook another library
 * of the same group defines (bound through the group's scope). */
#include <stdio.h>

extern void hsio_hook(void) __attribute__((weak));
int hsio_p(void);

int hsio_p(void)
{
	return 1;
}

__attribute__((constructor)) static void p_init(void)
{
	puts("p init begins");
	if (hsio_hook)
		hsio_hook();
	puts("p init ends");
}
