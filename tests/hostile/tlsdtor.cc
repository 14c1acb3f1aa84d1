// thread_local objects whose destructors allocate: T threads and the main
// thread each construct one (a 777-byte block) and its destructor, run at
// thread exit (for main: in exit()), allocates and frees 555 bytes.
//   tlsdtor T
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

struct Tracked {
	char *block;
	Tracked() : block(static_cast<char *>(std::malloc(777)))
	{
		std::memset(block, 1, 777);
	}
	~Tracked()
	{
		char *p = static_cast<char *>(std::malloc(555));
		std::memcpy(p, block, 555);
		__asm__ volatile("" : : "r"(p) : "memory");
		std::free(p);
		std::free(block);
	}
};

static thread_local Tracked tracked;

static void touch()
{
	tracked.block[0] = 2;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? std::atoi(argv[1]) : 50;
	std::vector<std::thread> threads;
	for (int i = 0; i < t; i++)
		threads.emplace_back(touch);
	for (auto &th : threads)
		th.join();
	touch();
	std::printf("tlsdtor: %d threads and main, one object each\n", t);
	return 0;
}
