#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static char last_error[512];

int hs_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return -1;
}

const char *hs_last_error(void)
{
	return last_error[0] ? last_error : "unknown error";
}
