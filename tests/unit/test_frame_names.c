/* Unit test of the text report's frame names (report/frame_names.h):
 * which frames are the allocator's and runtimes', and the shortening of
 * template argument lists, operators left alone. */
#include <string.h>

#include "analyze/symbols.h"
#include "report/frame_names.h"

#include "check.h"

static int runtime(const char *fn, const char *module)
{
	struct frame f = { .function = (char *)fn, .module = module };
	return frame_is_runtime(&f);
}

static int shortens(const char *in, int utf8, const char *want)
{
	char buf[256];
	const char *got = name_shorten(in, utf8, buf, sizeof(buf));
	if (strcmp(got, want))
		fprintf(stderr, "name_shorten(%s) = %s, want %s\n", in, got,
			want);
	return !strcmp(got, want);
}

static void test_runtime(void)
{
	CHECK(runtime("malloc", "/lib/libc.so.6"));
	CHECK(runtime("operator new(unsigned long)", NULL));
	CHECK(runtime("operator new[](unsigned long, std::nothrow_t const&)",
		      NULL));
	CHECK(runtime("void std::vector<Foo, std::allocator<Foo> >::"
		      "_M_realloc_insert<Foo const&>(__gnu_cxx::__normal_"
		      "iterator<Foo*, std::vector<Foo, std::allocator<Foo> > >, "
		      "Foo const&)", NULL));
	CHECK(runtime("std::__new_allocator<Foo>::allocate(unsigned long, "
		      "void const*)", NULL));
	CHECK(runtime("std::__cxx11::basic_string<char, std::char_traits<"
		      "char>, std::allocator<char> >::_M_create(unsigned long&, "
		      "unsigned long)", NULL));
	CHECK(runtime("gc_alloc", NULL));
	CHECK(runtime("PyMem_RawMalloc", NULL));
	CHECK(runtime(NULL, "/x/libheapslope.so"));
	/* the program's own, and a container's public members */
	CHECK(!runtime("keep_records(long)", NULL));
	CHECK(!runtime("std::vector<Foo, std::allocator<Foo> >::push_back("
		       "Foo const&)", NULL));
	CHECK(!runtime("strdup", "/lib/libc.so.6"));
	CHECK(!runtime(NULL, "/lib/libc.so.6"));
	CHECK(!runtime("my_malloc_wrapper", NULL));
	/* never all of a stack */
	struct frame v[2] = { { .function = "malloc" },
			      { .function = "main" } };
	CHECK(frames_runtime_prefix(v, 2) == 1);
	CHECK(frames_runtime_prefix(v, 1) == 0);
}

static void test_shorten(void)
{
	CHECK(shortens("std::vector<Foo, std::allocator<Foo> >::"
		       "_M_realloc_insert", 0,
		       "std::vector<...>::_M_realloc_insert"));
	CHECK(shortens("std::vector<Foo, std::allocator<Foo> >::push_back", 1,
		       "std::vector<…>::push_back"));
	CHECK(shortens("std::vector<int>::push_back(int const&)", 0,
		       "std::vector<int>::push_back(int const&)"));
	CHECK(shortens("operator<<(std::ostream&, Foo const&)", 0,
		       "operator<<(std::ostream&, Foo const&)"));
	CHECK(shortens("bool operator< <Foo, std::allocator<Foo> >(Foo, Foo)",
		       0, "bool operator< <...>(Foo, Foo)"));
	CHECK(shortens("std::map<std::string, long>::operator[](key_type&&)",
		       0, "std::map<...>::operator[](key_type&&)"));
	CHECK(shortens("f(std::function<void (int, long, char const*)>, a->b)", 0,
		       "f(std::function<...>, a->b)"));
	CHECK(shortens("unbalanced<a, b, c, d, e, f, g, h", 0,
		       "unbalanced<a, b, c, d, e, f, g, h"));
	CHECK(shortens("plain_c_function", 0, "plain_c_function"));
	char tiny[8];
	CHECK(strlen(name_shorten("std::vector<Foo, std::allocator<Foo> >", 0,
				  tiny, sizeof(tiny))) < sizeof(tiny));
}

int main(void)
{
	test_runtime();
	test_shorten();
	return check_report("frame_names");
}
