/* A library whose constructor allocates before the recorder's runs (the
 * constructors of a program's libraries come first): PRESTART_N blocks of
 * PRESTART_SIZE bytes, freed when the program asks. */
#include <stdlib.h>

#define PRESTART_N 3
#define PRESTART_SIZE 4321

void prestart_release(void);

static void *kept[PRESTART_N];

__attribute__((constructor)) static void prestart_init(void)
{
	for (int i = 0; i < PRESTART_N; i++)
		kept[i] = malloc(PRESTART_SIZE);
}

__attribute__((visibility("default"))) void prestart_release(void)
{
	for (int i = 0; i < PRESTART_N; i++) {
		free(kept[i]);
		kept[i] = NULL;
	}
}
