/* Forks N children GAP ms apart; each sleeps SLEEP ms, allocates K
 * blocks of 777 bytes and writes child.I (the odd ones after exec'ing
 * this program again).  The parent waits for them all and writes
 * summary with each child's wait status: the test kills `heapslope
 * record` meanwhile, and every child must still do its work.
 *   outlive N GAP SLEEP K
 *   outlive --child I K          (what the odd children exec) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pairs.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

static int child_work(int i, long k)
{
	pairs(k, 777);
	char name[32];
	snprintf(name, sizeof(name), "child.%d", i);
	FILE *f = fopen(name, "w");
	if (!f)
		return 1;
	fprintf(f, "child %d: %ld blocks\n", i, k);
	return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_work(atoi(argv[2]), atol(argv[3]));
	if (argc != 5)
		return 2;
	int n = atoi(argv[1]);
	long gap = atol(argv[2]), sleep = atol(argv[3]), k = atol(argv[4]);
	pid_t pids[256];
	if (n > 256)
		return 2;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			sleep_ms(sleep);
			if (i % 2) {
				char num[16], kk[32];
				snprintf(num, sizeof(num), "%d", i);
				snprintf(kk, sizeof(kk), "%ld", k);
				execl("/proc/self/exe", argv[0], "--child", num,
				      kk, (char *)NULL);
				_exit(126);
			}
			exit(child_work(i, k));
		}
		sleep_ms(gap);
	}
	FILE *f = fopen("summary.tmp", "w");
	if (!f)
		return 1;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i])
			st = -1;
		fprintf(f, "child %d: wait status 0x%x\n", i, st);
	}
	/* renamed when complete: the test waits for summary */
	if (fclose(f) || rename("summary.tmp", "summary"))
		return 1;
	return 0;
}
