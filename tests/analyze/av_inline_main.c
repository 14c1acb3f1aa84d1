/* av_inline.c's calls across two files, built with link-time
 * optimization: make and fill (av_inline_lib.c) are inlined into main,
 * and their debug information's abstract definitions are in another
 * unit than the code (test_frames.py). */
#include <stdlib.h>

void *make(size_t n);

static void *kept[4000];

int main(void)
{
	for (int i = 0; i < 4000; i++)
		kept[i] = make(100 + (size_t)(i % 7)); /* main's call */
	return kept[1] == NULL;
}
