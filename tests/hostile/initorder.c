/* Library constructors run in the loader's order under the recorder too.
 * main dlopens libhsio_root.so RTLD_LOCAL (as Python loads an extension),
 * which needs libhsio_a.so (C++), which needs libhsio_z.so (C++) and
 * libhsio_p.so (C).  The loader runs p's constructor before z's and a's;
 * p's calls a's hook, the process's first operator new, which the
 * recorder must find in libstdc++ (not in the global scope here) without
 * running the constructors of z and a early, inside p's. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: initorder LIBHSIO_ROOT\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "initorder: %s\n", dlerror());
		return 1;
	}
	int (*root)(void) = (int (*)(void))dlsym(h, "hsio_root");
	printf("root %d\n", root ? root() : -1);
	return 0;
}
