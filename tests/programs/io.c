/* Writes to stdout and stderr, echoes its arguments and stdin, allocates,
 * exits with the status given.
 *   io STATUS ARGS... < input */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char line[256];
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=[%s]\n", i, argv[i]);
	fprintf(stderr, "to stderr before the input\n");
	while (fgets(line, sizeof(line), stdin)) {
		char *copy = strdup(line);
		printf("in: %s", copy);
		fflush(stdout);
		fprintf(stderr, "err: %zu bytes\n", strlen(copy));
		free(copy);
	}
	const char *v = getenv("IO_VICTIM_VAR");
	printf("IO_VICTIM_VAR=%s\n", v ? v : "(unset)");
	for (int i = 0; i < 1000; i++)
		printf("line %d %s\n", i, i % 2 ? "odd" : "even");
	fprintf(stderr, "last words on stderr\n");
	return argc > 1 ? atoi(argv[1]) : 0;
}
