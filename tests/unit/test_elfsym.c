/* Unit test of the recorder's reading of loaded objects' dynamic symbol
 * tables (elfsym.h): it must give what the loader's own lookups give,
 * default versions only, for objects outside the global scope too, by the
 * group of the object asking before any other object, through SysV hash
 * tables too, and the vDSO's (whose tables are not relocated).
 * Arguments: libhseldup_sysv.so, libhseluser.so. */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <time.h>

#include "check.h"
#include "record/elfsym.h"

/* Two objects define hsel_dup: dup_sysv (SysV table only), loaded first,
 * and the one user's group has, found from user as the loader's local
 * scope of user finds it. */
static void group_and_sysv(const char *dup_sysv, const char *user)
{
	void *a = dlopen(dup_sysv, RTLD_NOW | RTLD_LOCAL);
	void *b = dlopen(user, RTLD_NOW | RTLD_LOCAL);
	CHECK(a != NULL && b != NULL);
	if (!a || !b)
		return;
	int (*first)(void) = (int (*)(void))dlsym(a, "hsel_dup");
	int (*in_group)(void) = (int (*)(void))dlsym(b, "hsel_dup");
	void *user_fn = dlsym(b, "hsel_user");
	CHECK(first && in_group && user_fn && first() == 1 &&
	      in_group() == 2);
	/* from user: its group's, not the one loaded first */
	CHECK(elfsym_find("hsel_dup", user_fn, NULL) == (void *)in_group);
	/* from nowhere: the first in load order's, by its SysV table */
	CHECK(elfsym_find("hsel_dup", NULL, NULL) == (void *)first);
	/* the first passed over: the other */
	CHECK(elfsym_find("hsel_dup", NULL, (void *)first) ==
	      (void *)in_group);
	CHECK(elfsym_find("hsel_user", NULL, NULL) == user_fn);
}

int main(int argc, char **argv)
{
	elfsym_note_startup(); /* as the recorder does, before any dlopen */
	CHECK(argc == 3);
	if (argc == 3)
		group_and_sysv(argv[1], argv[2]);
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

	/* what stays loaded for good: the program and what it was started
	 * with (libc), libstdc++ (unique symbols); not a plain library
	 * dlopen'ed */
	CHECK(elfsym_permanent((const void *)main));
	CHECK(elfsym_permanent((const void *)gnu_get_libc_version));
	CHECK(!elfsym_permanent(zv));
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	void *nw = cxx ? dlsym(cxx, "_Znwm") : NULL;
	CHECK(nw != NULL);
	CHECK(elfsym_permanent(nw));
	CHECK(!elfsym_permanent(NULL));
	return check_report("test_elfsym");
}
