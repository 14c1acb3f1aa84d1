#include "frame_names.h"

#include <string.h>

#include "analyze/symbols.h"

/* Exact names of allocation entry points. */
static const char *const entries[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_memalign",
	"__libc_valloc", "__libc_pvalloc", "__posix_memalign", "_int_malloc",
	"_PyObject_GC_Alloc", "_PyObject_GC_New", "_PyObject_GC_NewVar",
	"gc_alloc", "pymalloc_alloc", "pymalloc_realloc", "_PyObject_New",
	"_PyObject_NewVar", "PyType_GenericAlloc", "_PyType_AllocNoTrack",
};

/* Name prefixes: C++ operators, the recorder, CPython's wrappers,
 * libstdc++'s allocators. */
static const char *const prefixes[] = {
	"operator new", "operator delete", "hs_", "heapslope_",
	"PyMem_", "_PyMem_", "PyObject_Malloc", "PyObject_Calloc",
	"PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc",
	"_PyObject_Realloc", "std::allocator<", "std::allocator_traits<",
	"std::__new_allocator<", "__gnu_cxx::new_allocator<",
	"__gnu_cxx::__alloc_traits<", "std::__allocated_ptr<",
	"std::_Vector_base<", "std::_Hashtable_alloc<", "std::__detail::",
};

/* The containers whose growth internals (members named _M_* or __*)
 * are hidden: vector's _M_realloc_insert, _M_default_append... */
static const char *const containers[] = {
	"std::vector<", "std::deque<", "std::_Deque_base<", "std::_Hashtable<",
	"std::unordered_map<", "std::unordered_set<", "std::_Rb_tree<",
	"std::map<", "std::set<", "std::__cxx11::list<", "std::list<",
	"std::_List_base<", "std::__shared_count<", "std::__cxx11::basic_string<",
	"std::basic_string<",
};

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* The last component of a qualified name, after the template arguments
 * and before the parameters: "_M_realloc_insert" of
 * "std::vector<Foo>::_M_realloc_insert<Foo const&>(...)". */
static const char *member(const char *name, size_t *len)
{
	const char *last = name;
	int depth = 0;
	const char *p = name;
	for (; *p && !(depth == 0 && *p == '('); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (depth == 0 && p[0] == ':' && p[1] == ':')
			last = p + 2;
	}
	size_t n = 0;
	while (last[n] && last[n] != '<' && last[n] != '(')
		n++;
	*len = n;
	return last;
}

static int is_module(const char *path, const char *base)
{
	const char *b = strrchr(path, '/');
	return starts(b ? b + 1 : path, base);
}

/* name past a return type ("void std::vector<...>::_M_realloc_insert<>"
 * of a function template), or name itself. */
static const char *past_return_type(const char *name)
{
	const char *after = name;
	int depth = 0;
	for (const char *p = name; *p && !(depth == 0 && *p == '('); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (depth == 0 && *p == ' ')
			after = p + 1;
	}
	return after;
}

static int runtime_name(const char *fn)
{
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(fn, entries[i]))
			return 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (starts(fn, prefixes[i]))
			return 1;
	for (size_t i = 0; i < sizeof(containers) / sizeof(containers[0]);
	     i++) {
		if (!starts(fn, containers[i]))
			continue;
		size_t n;
		const char *m = member(fn, &n);
		if (n > 2 && (starts(m, "_M_") || starts(m, "__")))
			return 1;
	}
	return 0;
}

int frame_is_runtime(const struct frame *f)
{
	if (f->module && is_module(f->module, "libheapslope.so"))
		return 1;
	const char *fn = f->function;
	return fn && (runtime_name(fn) || runtime_name(past_return_type(fn)));
}

int frame_is_own(const struct frame *f)
{
	static const char *const system[] = { "/lib/", "/lib64/", "/usr/lib/",
					      "/usr/lib64/" };
	if (f->python || !f->module || frame_is_runtime(f))
		return 0;
	for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++)
		if (starts(f->module, system[i]))
			return 0;
	return 1;
}

size_t frames_runtime_prefix(const struct frame *v, size_t n)
{
	size_t k = 0;
	while (k < n && frame_is_runtime(&v[k]))
		k++;
	return k == n ? 0 : k;
}

/* The operator that p (at "operator") names, if it holds '<' or '>':
 * its length, else 0. */
static size_t angle_operator(const char *p)
{
	static const char *const ops[] = { "operator<=>", "operator<<=",
					   "operator>>=", "operator<<",
					   "operator>>", "operator<=",
					   "operator>=", "operator->*",
					   "operator->", "operator<",
					   "operator>" };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (starts(p, ops[i]))
			return strlen(ops[i]);
	return 0;
}

const char *name_shorten(const char *name, int utf8, char *buf, size_t cap)
{
	const char *dots = utf8 ? "…" : "...";
	size_t o = 0;
	if (!cap)
		return buf;
	for (const char *p = name; *p && o + 1 < cap;) {
		size_t op = starts(p, "operator") ? angle_operator(p) : 0;
		if (op) {
			for (size_t i = 0; i < op && o + 1 < cap; i++)
				buf[o++] = *p++;
			continue;
		}
		if (*p != '<') {
			buf[o++] = *p++;
			continue;
		}
		/* the matching '>', past nested lists and angle operators */
		const char *q = p + 1;
		int depth = 1;
		while (*q && depth) {
			size_t qop = starts(q, "operator") ? angle_operator(q)
							   : 0;
			if (qop) {
				q += qop;
				continue;
			}
			depth += *q == '<' ? 1 : *q == '>' ? -1 : 0;
			q++;
		}
		if (depth || (size_t)(q - p - 2) <= TEMPLATE_ARGS_SHOWN) {
			/* unbalanced, or short enough: as it is */
			buf[o++] = *p++;
			continue;
		}
		size_t d = strlen(dots);
		if (o + d + 3 > cap)
			break;
		buf[o++] = '<';
		memcpy(buf + o, dots, d);
		o += d;
		buf[o++] = '>';
		p = q;
	}
	buf[o] = 0;
	return buf;
}
