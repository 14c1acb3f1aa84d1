/* Trace names, for record and for the recorder: no malloc, no stdio. */
#include "contract.h"

#include <string.h>

/* Appends n bytes of s at out + *len, keeping room for the final NUL. */
static int put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	return 0;
}

static int put_decimal(char *out, size_t cap, size_t *len, long v)
{
	char digits[24];
	size_t n = sizeof(digits);
	unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
	do
		digits[--n] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		digits[--n] = '-';
	return put(out, cap, len, digits + n, sizeof(digits) - n);
}

int trace_name_expand(const char *tmpl, const char *prog, long pid,
		      char *out, size_t cap)
{
	size_t len = 0;
	for (const char *s = tmpl; *s; s++) {
		int rc;
		if (*s == '%' && (s[1] == 'p' || s[1] == 'e' || s[1] == '%')) {
			s++;
			rc = *s == 'p'	 ? put_decimal(out, cap, &len, pid)
			     : *s == 'e' ? put(out, cap, &len, prog, strlen(prog))
					 : put(out, cap, &len, "%", 1);
		} else {
			rc = put(out, cap, &len, s, 1);
		}
		if (rc)
			return -1;
	}
	if (!cap)
		return -1;
	out[len] = 0;
	return 0;
}

int trace_name_try(const char *base, int i, char *out, size_t cap)
{
	size_t len = 0;
	if (put(out, cap, &len, base, strlen(base)) ||
	    (i && (put(out, cap, &len, ".", 1) ||
		   put_decimal(out, cap, &len, i))))
		return -1;
	out[len] = 0;
	return 0;
}
