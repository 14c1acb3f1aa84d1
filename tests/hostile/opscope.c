/* The C++ operator a library's new would bind to is its own group's, under
 * the recorder too.  main dlopens libhsox.so (C, RTLD_LOCAL), which
 * defines an operator new of its own that counts its calls, then
 * libhsoy.so (C++, RTLD_LOCAL), whose new binds to libstdc++'s, in its
 * group: libhsox.so's is in another group and must not be called. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: opscope LIBHSOX LIBHSOY\n");
		return 2;
	}
	void *x = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	void *y = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!x || !y) {
		fprintf(stderr, "opscope: %s\n", dlerror());
		return 1;
	}
	int (*calls)(void) = (int (*)(void))dlsym(x, "hsox_calls");
	int (*run)(void) = (int (*)(void))dlsym(y, "hsoy_run");
	if (!calls || !run)
		return 1;
	printf("hsoy_run %d\n", run());
	printf("libhsox's operator new called %d times\n", calls());
	return 0;
}
