/* A victim with "operators" of exactly known growth, for analyze
 * --group-by-frame and --operators (tests/analyze/test_operators.py).
 *
 *   operators mine N     N batches of the functions myops::op_*:
 *                          op_leak     keeps 4096 B a batch (leaked)
 *                          op_stable   allocates and frees 8192 B
 *                          op_cache    keeps 1024 B a batch, freed at exit
 *                        and main keeps 100 B a batch outside any op_*.
 *   operators paddle N   N batches through frames named as PaddlePaddle's
 *                        (namespace paddle::framework, its kernels):
 *                          MatMulKernel<float>::Compute          2048 B
 *                          phi::ReluKernel<float, CPUContext>    1024 B
 *                          OperatorWithKernel::RunImpl itself      512 B
 *                          WhileOp::RunImpl                        256 B
 *                          SoftmaxKernel<float>::Compute         stable
 *                        kept a batch, and main's 100 B.
 * Every allocation is malloc'd in a function that cannot be inlined. */
#include <cstdlib>
#include <cstring>
#include <vector>

#include "heapslope.h"

#define NOINLINE __attribute__((noinline))

static std::vector<void *> kept, cache;

NOINLINE static void *take(size_t n)
{
	void *p = std::malloc(n);
	std::memset(p, 1, n);
	return p;
}

namespace myops {
NOINLINE void op_leak()
{
	kept.push_back(take(4096));
}
NOINLINE void op_stable()
{
	void *p = take(8192);
	std::free(p);
}
NOINLINE void op_cache()
{
	cache.push_back(take(1024));
}
} // namespace myops

namespace phi {
struct CPUContext {
	int unused;
};
template <typename T, typename Context>
NOINLINE void ReluKernel(const Context &, int n)
{
	kept.push_back(take((size_t)n * sizeof(T)));
}
} // namespace phi

namespace paddle {
namespace framework {
struct ExecutionContext {
	int batch;
};
struct Scope {
	int unused;
};
struct OpKernelBase {
	virtual ~OpKernelBase() = default;
	virtual void Compute(const ExecutionContext &ctx) const = 0;
};
class OperatorBase {
public:
	virtual ~OperatorBase() = default;
	NOINLINE void Run(const Scope &scope) const { RunImpl(scope); }

protected:
	virtual void RunImpl(const Scope &scope) const = 0;
};
class OperatorWithKernel : public OperatorBase {
public:
	explicit OperatorWithKernel(const OpKernelBase *k) : kernel_(k) {}

protected:
	NOINLINE void RunImpl(const Scope &) const override
	{
		kept.push_back(take(512)); /* the framework's own */
		kernel_->Compute(ExecutionContext{ 0 });
	}

private:
	const OpKernelBase *kernel_;
};
} // namespace framework

namespace operators {
template <typename T>
struct MatMulKernel : framework::OpKernelBase {
	NOINLINE void Compute(const framework::ExecutionContext &) const override
	{
		kept.push_back(take(2048));
	}
};
template <typename T>
struct SoftmaxKernel : framework::OpKernelBase {
	NOINLINE void Compute(const framework::ExecutionContext &) const override
	{
		std::free(take(4096));
	}
};
template <typename T>
struct ReluKernel : framework::OpKernelBase {
	NOINLINE void Compute(const framework::ExecutionContext &) const override
	{
		phi::ReluKernel<T, phi::CPUContext>(phi::CPUContext{}, 256);
	}
};
class WhileOp : public framework::OperatorBase {
protected:
	NOINLINE void RunImpl(const framework::Scope &) const override
	{
		kept.push_back(take(256));
	}
};
} // namespace operators
} // namespace paddle

int main(int argc, char **argv)
{
	int paddle = argc > 1 && !std::strcmp(argv[1], "paddle");
	long n = argc > 2 ? std::atol(argv[2]) : 20;
	namespace pf = paddle::framework;
	namespace po = paddle::operators;
	po::MatMulKernel<float> matmul;
	po::SoftmaxKernel<float> softmax;
	po::ReluKernel<float> relu;
	pf::OperatorWithKernel mm(&matmul), sm(&softmax), re(&relu);
	po::WhileOp loop;
	kept.reserve((size_t)n * 8);
	cache.reserve((size_t)n);
	for (long b = 0; b < n; b++) {
		if (paddle) {
			pf::Scope scope{ 0 };
			mm.Run(scope);
			sm.Run(scope);
			re.Run(scope);
			loop.Run(scope);
		} else {
			myops::op_leak();
			myops::op_stable();
			myops::op_cache();
		}
		kept.push_back(take(100));
		HEAPSLOPE_MARK_BATCH();
	}
	for (void *p : cache)
		std::free(p);
	return 0;
}
