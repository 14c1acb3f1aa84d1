/* Unit test of frame_match: the bare name of a demangled C++ function,
 * globs and regexes with the group's name taken from the match, Python
 * frames by qualname and file:qualname, the presets, and bad patterns. */
#include <string.h>

#include "analyze/frame_match.h"
#include "analyze/symbols.h"

#include "check.h"

static int bare_is(const char *fn, const char *want)
{
	char out[256];
	frame_match_bare(fn, out, sizeof(out));
	if (strcmp(out, want))
		fprintf(stderr, "bare(%s) = '%s', want '%s'\n", fn, out, want);
	return !strcmp(out, want);
}

static void test_bare(void)
{
	CHECK(bare_is("at::_ops::addmm::call(at::Tensor const&, at::Tensor "
		      "const&, c10::Scalar const&)",
		      "at::_ops::addmm::call"));
	CHECK(bare_is("c10::intrusive_ptr<c10::TensorImpl> c10::TensorImpl::"
		      "shallow_copy_and_detach_core<c10::VariableVersion>("
		      "c10::VariableVersion const&, bool) const",
		      "c10::TensorImpl::shallow_copy_and_detach_core<c10::"
		      "VariableVersion>"));
	CHECK(bare_is("void phi::ReluKernel<float, phi::CPUContext>(phi::"
		      "CPUContext const&, int)",
		      "phi::ReluKernel<float, phi::CPUContext>"));
	CHECK(bare_is("torch::autograd::VariableType::(anonymous namespace)::"
		      "addmm(c10::DispatchKeySet, at::Tensor const&)",
		      "torch::autograd::VariableType::(anonymous namespace)::"
		      "addmm"));
	CHECK(bare_is("main", "main"));
	CHECK(bare_is("operator new(unsigned long)", "operator new"));
	CHECK(bare_is("std::vector<int, std::allocator<int> >::operator[]("
		      "unsigned long)",
		      "std::vector<int, std::allocator<int> >::operator[]"));
	CHECK(bare_is("bool std::operator< <int>(foo const&, foo const&)",
		      "std::operator< <int>"));
	CHECK(bare_is("f(int)::{lambda()#1}::operator()() const",
		      "f(int)::{lambda()#1}::operator()"));
	CHECK(bare_is("foo::operator->() const", "foo::operator->"));
}

/* The group name of a native (python 0) or Python frame, "" when none. */
static const char *group(const struct frame_match *m, const char *fn,
			 const char *file, int python, int *yields)
{
	static char name[256];
	struct frame f = { .function = (char *)fn, .file = (char *)file,
			   .python = python };
	if (!frame_match(m, &f, name, sizeof(name), yields))
		return "";
	return name;
}

static void test_glob(void)
{
	struct frame_match *m = frame_match_create("at::_ops::*::call");
	CHECK(m);
	if (!m)
		return;
	CHECK(!strcmp(group(m, "at::_ops::add_Tensor::call(at::Tensor "
			       "const&)", NULL, 0, NULL), "add_Tensor"));
	CHECK(!strcmp(group(m, "at::_ops::add_Tensor::redispatch(c10::"
			       "DispatchKeySet)", NULL, 0, NULL), ""));
	CHECK(!strcmp(group(m, NULL, NULL, 0, NULL), ""));
	frame_match_destroy(m);
	/* the shortest non-empty text the first * can match */
	m = frame_match_create("ns::*_*");
	CHECK(!strcmp(group(m, "ns::a_b_c", NULL, 0, NULL), "a"));
	frame_match_destroy(m);
	/* no *, or a * that matched nothing: the whole name */
	m = frame_match_create("ns::f?");
	CHECK(!strcmp(group(m, "ns::fg(int)", NULL, 0, NULL), "ns::fg"));
	frame_match_destroy(m);
	m = frame_match_create("[a-z]s::*g");
	CHECK(!strcmp(group(m, "ns::g", NULL, 0, NULL), "ns::g"));
	CHECK(!strcmp(group(m, "ns::xg", NULL, 0, NULL), "x"));
	frame_match_destroy(m);
	/* the whole name, when the bare one does not match */
	m = frame_match_create("*(at::Tensor const&)");
	CHECK(!strcmp(group(m, "at::_ops::relu::call(at::Tensor const&)",
			    NULL, 0, NULL), "at::_ops::relu::call"));
	CHECK(!strcmp(group(m, "at::_ops::relu::call(at::Tensor&)", NULL, 0,
			    NULL), ""));
	frame_match_destroy(m);
	/* Python: qualname, then file:qualname */
	m = frame_match_create("*.forward");
	CHECK(!strcmp(group(m, "LayerNorm.forward", "/x/normalization.py", 1,
			    NULL), "LayerNorm"));
	frame_match_destroy(m);
	m = frame_match_create("*/train.py:*");
	CHECK(!strcmp(group(m, "main", "/home/u/train.py", 1, NULL),
		      "/home/u"));
	CHECK(!strcmp(group(m, "main", "/home/u/eval.py", 1, NULL), ""));
	frame_match_destroy(m);
}

static void test_regex(void)
{
	struct frame_match *m = frame_match_create("re:^myops::op_(.*)$");
	CHECK(m);
	if (!m)
		return;
	CHECK(!strcmp(group(m, "myops::op_leak()", NULL, 0, NULL), "leak"));
	CHECK(!strcmp(group(m, "other::op_leak()", NULL, 0, NULL), ""));
	frame_match_destroy(m);
	m = frame_match_create("re:op_l");
	CHECK(!strcmp(group(m, "myops::op_leak()", NULL, 0, NULL),
		      "myops::op_leak"));
	frame_match_destroy(m);
	m = frame_match_create("re:train\\.py:(.*)");
	CHECK(!strcmp(group(m, "Model.forward", "/a/train.py", 1, NULL),
		      "Model.forward"));
	frame_match_destroy(m);
}

static void test_presets(void)
{
	int yields = -1;
	struct frame_match *m = frame_match_preset("torch");
	CHECK(m && !strcmp(frame_match_preset_name(m), "torch"));
	if (!m)
		return;
	CHECK(!strcmp(frame_match_pattern(m),
		      "at::_ops::*::call, at::_ops::*::redispatch"));
	CHECK(!strcmp(group(m, "at::_ops::native_layer_norm::redispatch(c10::"
			       "DispatchKeySet, at::Tensor const&)", NULL, 0,
			    &yields), "native_layer_norm"));
	CHECK(yields == 0);
	CHECK(!strcmp(group(m, "at::_ops::empty_memory_format::call(c10::"
			       "ArrayRef<c10::SymInt>)", NULL, 0, &yields),
		      "empty_memory_format"));
	CHECK(yields == 1);
	frame_match_destroy(m);
	m = frame_match_preset("paddle");
	CHECK(m);
	if (!m)
		return;
	CHECK(!strcmp(group(m, "paddle::operators::MatMulKernel<float>::"
			       "Compute(paddle::framework::ExecutionContext "
			       "const&) const", NULL, 0, NULL), "MatMul"));
	CHECK(!strcmp(group(m, "void phi::MatmulKernel<float, phi::CPUContext>"
			       "(phi::CPUContext const&)", NULL, 0, NULL),
		      "Matmul"));
	CHECK(!strcmp(group(m, "paddle::operators::WhileOp::RunImpl(paddle::"
			       "framework::Scope const&) const", NULL, 0, NULL),
		      "While"));
	CHECK(!strcmp(group(m, "paddle::framework::OperatorWithKernel::"
			       "RunImpl(paddle::framework::Scope const&) const",
			    NULL, 0, NULL), "OperatorWithKernel"));
	frame_match_destroy(m);
}

static void test_bad(void)
{
	CHECK(!frame_match_create(""));
	CHECK(!frame_match_create("re:"));
	CHECK(!frame_match_create("re:a(b"));
	CHECK(!frame_match_preset("tensorflow"));
	CHECK(!frame_match_preset(""));
	frame_match_destroy(NULL);
}

int main(void)
{
	test_bare();
	test_glob();
	test_regex();
	test_presets();
	test_bad();
	return check_report("test_frame_match");
}
