// T std::async tasks, each on a thread of its own, all started before the
// first is waited for; each makes K operator new/delete pairs of 777
// bytes (glibc: malloc(777)) and returns a checksum.
//   async T K
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

static long work(long k, long seed)
{
	long sum = 0;
	for (long i = 0; i < k; i++) {
		char *p = static_cast<char *>(::operator new(777));
		p[i % 777] = static_cast<char>(seed + i);
		sum += p[i % 777];
		::operator delete(p);
	}
	return sum;
}

int main(int argc, char **argv)
{
	long t = argc > 1 ? std::atol(argv[1]) : 1000;
	long k = argc > 2 ? std::atol(argv[2]) : 100;
	std::vector<std::future<long>> tasks;
	tasks.reserve(static_cast<size_t>(t));
	for (long i = 0; i < t; i++)
		tasks.push_back(std::async(std::launch::async, work, k, i));
	long sum = 0;
	for (auto &f : tasks)
		sum += f.get();
	std::printf("async: %ld tasks of %ld blocks, checksum %ld\n", t, k, sum);
	return 0;
}
