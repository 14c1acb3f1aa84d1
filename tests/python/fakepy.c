/* A program that looks like a CPython to the recorder, which finds an
 * interpreter by its exported Py_Version, _PyRuntime and PyCode_Type
 * (built with -rdynamic; the recorder reads them as it starts), but is
 * none it can read:
 *   fakepy313 unknown   Py_Version 3.13.0: a version with no frame layout
 *   fakepy311 garbled   Py_Version 3.11.2, whose _PyRuntime says, once
 *                       main runs, that a thread state is set for this
 *                       thread (the 3.11 layout's gilstate key at
 *                       +592/+596) which is not laid out as a 3.11 one
 *                       (zeros): the first one read fails the probe
 * Either way it then allocates 100 blocks of 1000 bytes, frees them and
 * prints "fakepy done". */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long Py_Version = FAKEPY_VERSION;
_Alignas(64) unsigned char _PyRuntime[1 << 17];
unsigned char PyCode_Type[256];

static _Alignas(64) unsigned char fake_tstate[4096];

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (!strcmp(argv[1], "garbled")) {
		pthread_key_t key;
		if (pthread_key_create(&key, NULL) ||
		    pthread_setspecific(key, fake_tstate))
			return 3;
		uint32_t init = 1, k = (uint32_t)key;
		memcpy(_PyRuntime + 592, &init, sizeof(init));
		memcpy(_PyRuntime + 596, &k, sizeof(k));
	} else if (strcmp(argv[1], "unknown")) {
		return 2;
	}
	void *p[100];
	for (int i = 0; i < 100; i++)
		p[i] = malloc(1000);
	for (int i = 0; i < 100; i++)
		free(p[i]);
	puts("fakepy done");
	return 0;
}
