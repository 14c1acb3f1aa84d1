/* test_elfsym: a definition of hsel_dup; built once with a SysV hash table
 * only (libhseldup_sysv.so, returning 1) and once as usual
 * (libhseldup_gnu.so, returning 2). */
int hsel_dup(void);

int hsel_dup(void)
{
	return HSEL_DUP;
}
