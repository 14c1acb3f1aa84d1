// A C++ library whose constructor makes HS_PRESTART_N blocks of 4321
// bytes with new[] before the recorder starts (a program's libraries run
// their constructors first); prestartcxx_release deletes them.  Under a
// preloaded allocator its operator new does not reach malloc.
#include <cstdlib>

extern "C" void prestartcxx_release(void);

static char *kept[16];
static int nkept;

__attribute__((constructor)) static void prestartcxx_init(void)
{
	const char *n = std::getenv("HS_PRESTART_N");
	nkept = n ? std::atoi(n) : 0;
	if (nkept < 0 || nkept > 16)
		nkept = 0;
	for (int i = 0; i < nkept; i++)
		kept[i] = new char[4321];
}

extern "C" __attribute__((visibility("default"))) void
prestartcxx_release(void)
{
	for (int i = 0; i < nkept; i++)
		delete[] kept[i];
	nkept = 0;
}
