/* The baseline: whatever the C library allocates on its own. */
int main(void)
{
	return 0;
}
