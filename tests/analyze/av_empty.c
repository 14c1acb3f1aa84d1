/* The baseline of the analyzer tests: whatever the C library allocates on
 * its own (and leaves live at exit). */
int main(void)
{
	return 0;
}
