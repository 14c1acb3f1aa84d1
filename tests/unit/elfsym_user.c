/* test_elfsym: a library whose group (it needs libhseldup_gnu.so) defines
 * hsel_dup, loaded after another object that defines it too. */
int hsel_dup(void);
int hsel_user(void);

int hsel_user(void)
{
	return hsel_dup();
}
