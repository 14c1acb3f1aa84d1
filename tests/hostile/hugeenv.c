/* execve of /bin/echo with an environment holding four LD_PRELOAD
 * entries of 4,211 characters each (the recorder rebuilds the
 * environment it passes on, and under --no-follow edits LD_PRELOAD).
 *   hugeenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	char *envp[6];
	for (int e = 0; e < 4; e++) {
		char *s = malloc(4300);
		strcpy(s, "LD_PRELOAD=");
		for (int i = 0; i < 2100; i++) strcat(s, ":/");
		envp[e] = s;
	}
	envp[4] = "X=1";
	envp[5] = NULL;
	char *argv[] = { "/bin/echo", "exec'd", NULL };
	execve("/bin/echo", argv, envp);
	perror("execve");
	return 1;
}
