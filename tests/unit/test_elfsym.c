/* Unit test of the recorder's reading of loaded objects' dynamic symbol
 * tables (elfsym.h): it must give what the loader's own lookups give,
 * default versions only, for objects outside the global scope too, and
 * the vDSO's (whose tables are not relocated). */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <time.h>

#include "check.h"
#include "record/elfsym.h"

int main(void)
{
	/* an object outside the global scope, as a Python extension's
	 * libstdc++ is */
	void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	CHECK(z != NULL);
	void *zv = z ? dlsym(z, "zlibVersion") : NULL;
	CHECK(zv != NULL);
	CHECK(dlsym(RTLD_DEFAULT, "zlibVersion") == NULL);
	CHECK(elfsym_find("zlibVersion", NULL, NULL) == zv);
	CHECK(elfsym_find("zlibVersion", zv, NULL) == zv);
	/* the one object defining it passed over */
	CHECK(elfsym_find("zlibVersion", NULL, zv) == NULL);
	CHECK(elfsym_find("zlibVersion", zv, zv) == NULL);
	CHECK(elfsym_find("no_such_symbol_anywhere", NULL, NULL) == NULL);
	CHECK(elfsym_find("", NULL, NULL) == NULL);

	/* two versions in libc, the older first in its table: the default
	 * one is found, as a new reference binds to it; libc looked at
	 * first (first: an address of libc's) */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	CHECK(libc != NULL);
	void *cw = libc ? dlvsym(libc, "pthread_cond_init", "GLIBC_2.3.2")
			: NULL;
	void *cw_old = libc ? dlvsym(libc, "pthread_cond_init", "GLIBC_2.2.5")
			    : NULL;
	CHECK(cw != NULL && cw_old != NULL && cw != cw_old);
	CHECK(elfsym_find("pthread_cond_init",
			  (const void *)gnu_get_libc_version, NULL) == cw);

	/* the vDSO: found, and it works */
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	void *cg = elfsym_find("__vdso_clock_gettime", NULL, NULL);
	CHECK(vdso != 0 && (uintptr_t)cg > vdso &&
	      (uintptr_t)cg < vdso + (1u << 16));
	if (cg) {
		struct timespec ts = { 0, 0 };
		int (*f)(clockid_t, struct timespec *) =
			(int (*)(clockid_t, struct timespec *))cg;
		CHECK(f(CLOCK_MONOTONIC, &ts) == 0 && ts.tv_sec + ts.tv_nsec);
	}

	/* what stays loaded for good: the program, libstdc++ (unique
	 * symbols); not a plain library dlopen'ed */
	CHECK(elfsym_permanent((const void *)main));
	CHECK(!elfsym_permanent(zv));
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	void *nw = cxx ? dlsym(cxx, "_Znwm") : NULL;
	CHECK(nw != NULL);
	CHECK(elfsym_permanent(nw));
	CHECK(!elfsym_permanent(NULL));
	return check_report("test_elfsym");
}
