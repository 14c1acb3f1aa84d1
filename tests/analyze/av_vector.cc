/* A C++ victim for the text report's frame controls (test_frames.py).
 *   av_vector N   N batches; each batch appends 64 Foo records to a
 *                 std::vector<Foo> that is kept (it grows through
 *                 libstdc++'s _M_realloc_insert or _M_realloc_append, and
 *                 operator new) and churns a std::map<std::string, Foo>.
 * Every kept allocation's stack is, innermost first: operator new,
 * allocator internals, the vector's growth member, push_back,
 * keep_records, run_batch, main. */
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "heapslope.h"

#define NOINLINE __attribute__((noinline))

struct Foo {
	long id;
	char pad[56];
};

static std::vector<Foo> kept;

NOINLINE static void keep_records(long batch)
{
	for (long i = 0; i < 64; i++) {
		Foo f{};
		f.id = batch * 64 + i;
		kept.push_back(f);
	}
}

NOINLINE static void churn_map(long batch)
{
	std::map<std::string, Foo> m;
	for (long i = 0; i < 32; i++)
		m[std::to_string(batch * 1000 + i) + "-a-key-longer-than-sso"] =
			Foo{};
}

NOINLINE static void run_batch(long batch)
{
	keep_records(batch);
	churn_map(batch);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 40;
	for (long b = 0; b < n; b++) {
		run_batch(b);
		HEAPSLOPE_MARK_BATCH();
	}
	return kept.size() == (size_t)n * 64 ? 0 : 1;
}
