/* Puts a file of its own on descriptors 700 and 701 (where the recorder
 * keeps its own), then forks: the child must still have them, and what
 * it writes there must reach the file.
 *   forkfd700 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	int f = open("mine.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(f, 700);
	dup2(f, 701);
	pid_t c = fork();
	if (c == 0) {
		int a = fcntl(700, F_GETFD), b = fcntl(701, F_GETFD);
		printf("child: fd 700 %s, fd 701 %s\n", a < 0 ? "CLOSED" : "open", b < 0 ? "CLOSED" : "open");
		if (a >= 0) write(700, "child\n", 6);
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	return 0;
}
