/* initorder: what main dlopens; it needs libhsio_a.so. */
int hsio_a(void);
int hsio_root(void);

int hsio_root(void)
{
	return hsio_a();
}
