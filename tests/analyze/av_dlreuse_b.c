/* av_dlreuse's second library, the same size as the first: keep_b comes
 * first, the filler after, so that keep_a's old addresses now hold other
 * code. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, used))

void filler_b(void);
void *keep_b(size_t n);

volatile int av_sink;

NOINLINE void *keep_b(size_t n)
{
	void *p = malloc(n);
	av_sink++;
	return p;
}

NOINLINE void filler_b(void)
{
	for (int i = 0; i < 64; i++)
		av_sink += i * 3;
	av_sink ^= 0x55;
	av_sink += 7;
}
