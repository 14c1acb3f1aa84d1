// opscope: a C++ library whose new binds to libstdc++'s, in its group.
static int *volatile kept; // the compiler may not drop the new and delete

extern "C" int hsoy_run(void)
{
	kept = new int(7);
	int v = *kept;
	delete kept;
	return v;
}
