/* Creates the file named by its argument: proves it ran. */
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fputs("ran\n", f);
	return fclose(f) ? 1 : 0;
}
