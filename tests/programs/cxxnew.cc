/* Known numbers of calls to every C++ operator new and delete.
 *   cxxnew N        N rounds; round i, with n = 16 + i % 64, makes 15
 *                   allocations and 15 frees: 8 plain (6 n, 1 24, 1 4 n
 *                   bytes), 7 aligned (6 n, 1 128 bytes)
 *   cxxnew N throw    N rounds, 4 operator news that throw bad_alloc,
 *                     caught (the fourth after the new-handler ran once),
 *                     N rounds again
 *   cxxnew N nothrow  N rounds, 3 nothrow operator news that return NULL,
 *                     N rounds again
 * Built as libhscxxnew.so too, for dlopener: victimlib_alloc(N, out)
 * makes N rounds, then N blocks of 50000 + i bytes with malloc; with
 * CXXNEW_THROW set in the environment, its first call is a new[] that
 * throws bad_alloc, caught (libstdc++'s new[] jumps to new: both must be
 * found, although libstdc++ is not in the global scope).
 * Exits 0 when every operator behaved as the standard says; prints
 * nothing: stdio would allocate its buffers. */
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sink.h"

namespace {

const std::align_val_t al{64};
const std::size_t huge = PTRDIFF_MAX;

struct plain {
	long v[3];
};

struct alignas(128) over {
	char v[128];
};

bool aligned(void *p, std::size_t a)
{
	return ((std::uintptr_t)p & (a - 1)) == 0;
}

/* new and delete side by side, as the operators pair up */
__attribute__((noinline)) bool one_round(std::size_t i)
{
	std::size_t n = 16 + i % 64;
	void *p[6], *q[6];
	p[0] = ::operator new(n);
	p[1] = ::operator new[](n);
	p[2] = ::operator new(n, std::nothrow);
	p[3] = ::operator new[](n, std::nothrow);
	p[4] = ::operator new(n);
	p[5] = ::operator new[](n);
	plain *g = new plain();
	int *h = new int[n]();
	q[0] = ::operator new(n, al);
	q[1] = ::operator new[](n, al);
	q[2] = ::operator new(n, al, std::nothrow);
	q[3] = ::operator new[](n, al, std::nothrow);
	q[4] = ::operator new(n, al);
	q[5] = ::operator new[](n, al);
	over *o = new over();
	bool ok = g && h && o && aligned(o, alignof(over));
	for (int k = 0; k < 6; k++) {
		ok = ok && p[k] && q[k] && aligned(q[k], 64);
		sink(p[k]);
		sink(q[k]);
	}
	sink(g);
	sink(h);
	sink(o);
	::operator delete(p[0]);
	::operator delete[](p[1]);
	::operator delete(p[2], n);
	::operator delete[](p[3], n);
	::operator delete(p[4], std::nothrow);
	::operator delete[](p[5], std::nothrow);
	delete g;
	delete[] h;
	::operator delete(q[0], al);
	::operator delete[](q[1], al);
	::operator delete(q[2], n, al);
	::operator delete[](q[3], n, al);
	::operator delete(q[4], al, std::nothrow);
	::operator delete[](q[5], al, std::nothrow);
	delete o;
	return ok;
}

bool rounds(std::size_t n)
{
	for (std::size_t i = 0; i < n; i++)
		if (!one_round(i))
			return false;
	return true;
}

template <typename F> bool throws_bad_alloc(F f)
{
	try {
		sink(f());
	} catch (const std::bad_alloc &) {
		return true;
	}
	return false;
}

#ifndef CXXNEW_LIB

int handler_calls;

void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); /* the next attempt throws */
}

/* mimalloc, a C library, aborts where the others throw */
bool failures_throwing()
{
	bool ok = throws_bad_alloc([] { return ::operator new(huge); }) &&
		  throws_bad_alloc([] { return ::operator new[](huge); }) &&
		  throws_bad_alloc([] { return ::operator new(huge, al); });
	std::set_new_handler(handler);
	return ok && throws_bad_alloc([] { return ::operator new(huge); }) &&
	       handler_calls == 1;
}

bool failures_nothrow()
{
	return !opaque(::operator new(huge, std::nothrow)) &&
	       !opaque(::operator new[](huge, std::nothrow)) &&
	       !opaque(::operator new(huge, al, std::nothrow));
}

#endif

} // namespace

#ifdef CXXNEW_LIB

extern "C" __attribute__((visibility("default"), noinline)) int
victimlib_alloc(int n, void **out)
{
	if (std::getenv("CXXNEW_THROW") &&
	    !throws_bad_alloc([] { return ::operator new[](huge); }))
		return -1;
	if (!rounds((std::size_t)n))
		return -1;
	for (int i = 0; i < n; i++) {
		out[i] = std::malloc(50000 + (std::size_t)i);
		if (!out[i])
			return -1;
		sink(out[i]);
	}
	return 0;
}

#else

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		return 2;
	std::size_t n = std::strtoul(argv[1], nullptr, 10);
	const char *fail = argc == 3 ? argv[2] : "";
	if (!rounds(n))
		return 1;
	if (!std::strcmp(fail, "throw") && !failures_throwing())
		return 1;
	if (!std::strcmp(fail, "nothrow") && !failures_nothrow())
		return 1;
	return *fail && !rounds(n);
}

#endif
