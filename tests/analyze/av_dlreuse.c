/* Symbols after dlclose (test_dlreuse.py).
 *   av_dlreuse LIBA LIBB
 * dlopens LIBA, keeps 50 blocks of 1111 bytes that its keep_a allocates,
 * dlcloses it, dlopens LIBB, which the kernel maps at LIBA's old address
 * (the same size), and keeps 50 blocks of 2222 bytes from its keep_b.
 * Prints "base A B" with both load addresses; exits 3 when LIBB did not
 * land at LIBA's address (the test then means nothing), 2 when a library
 * cannot be loaded. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 50

static void *kept[2 * BLOCKS];

static void *load(const char *path, const char *fn, void *(**f)(size_t),
		  unsigned long *base)
{
	struct link_map *lm;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 ||
	    !(*(void **)f = dlsym(h, fn))) {
		fprintf(stderr, "av_dlreuse: %s: %s\n", path, dlerror());
		exit(2);
	}
	*base = (unsigned long)lm->l_addr;
	return h;
}

int main(int argc, char **argv)
{
	void *(*keep)(size_t);
	unsigned long a, b;
	if (argc != 3) {
		fprintf(stderr, "usage: av_dlreuse LIBA LIBB\n");
		return 2;
	}
	void *h = load(argv[1], "keep_a", &keep, &a);
	for (int i = 0; i < BLOCKS; i++)
		kept[i] = keep(1111);
	dlclose(h);
	h = load(argv[2], "keep_b", &keep, &b);
	for (int i = 0; i < BLOCKS; i++)
		kept[BLOCKS + i] = keep(2222);
	printf("base %#lx %#lx\n", a, b);
	if (a != b) {
		fprintf(stderr, "av_dlreuse: %s loaded at %#lx, not at %s's "
				"%#lx\n", argv[2], b, argv[1], a);
		return 3;
	}
	return 0;
}
