/* av_dlreuse's first library: keep_a lies after a filler, so that its
 * addresses are those of other code in av_dlreuse_b.c, loaded at the
 * same place. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, used))

void filler_a(void);
void *keep_a(size_t n);

volatile int av_sink;

NOINLINE void filler_a(void)
{
	for (int i = 0; i < 64; i++)
		av_sink += i * 3;
	av_sink ^= 0x55;
	av_sink += 7;
}

NOINLINE void *keep_a(size_t n)
{
	void *p = malloc(n);
	av_sink++;
	return p;
}
