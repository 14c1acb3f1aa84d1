/* chroot into DIR, then exec PROG there, with the recorder's library
 * out of reach of the new image's loader:
 *   chrootexec DIR PROG [ARGS...] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sink.h"

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	sink(malloc(1234));
	if (chroot(argv[1]) || chdir("/")) {
		perror("chrootexec: chroot");
		return 3;
	}
	execv(argv[2], argv + 2);
	perror("chrootexec: exec");
	return 4;
}
