/* Frees the blocks its library's constructor allocated before recording
 * started, then forks a child that allocates one block of 777 bytes.
 *   prestart */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void prestart_release(void);

int main(void)
{
	prestart_release();
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		void *p = malloc(777);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	printf("prestart: released, child done\n");
	return 0;
}
