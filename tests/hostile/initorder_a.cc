// initorder: the C++ library that needs z and p; its hook makes the
// process's first operator new and delete, from inside p's constructor.
#include <cstdio>

extern "C" int hsio_z(void);
extern "C" int hsio_p(void);

static int ready;

extern "C" void hsio_hook(void)
{
	int *x = new int(ready);
	std::printf("hook: a ready %d, z ready %d\n", *x, hsio_z());
	delete x;
}

struct A {
	A()
	{
		ready = 1;
		std::puts("a init");
	}
} a;

extern "C" int hsio_a(void)
{
	return ready + hsio_z() + hsio_p();
}
