/* Deletes the blocks its C++ library made before recording started.
 *   prestartcxx (HS_PRESTART_N: how many) */
#include <stdio.h>

void prestartcxx_release(void);

int main(void)
{
	prestartcxx_release();
	printf("prestartcxx: released\n");
	return 0;
}
