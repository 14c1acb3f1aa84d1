// initorder: a C++ library whose constructor the loader runs after p's.
#include <cstdio>

static int ready;

struct Z {
	Z()
	{
		ready = 1;
		std::puts("z init");
	}
} z;

extern "C" int hsio_z(void)
{
	return ready;
}
