#include "writer_alive.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format/reader.h"

/* Clock ticks and the clocks' reading: a second of slack. */
#define SLACK_NS 1000000000ull

int writer_alive(const struct hs_header *h)
{
	return writer_alive_at(h->pid, h->start_realtime_ns,
			       h->start_monotonic_ns);
}

int writer_alive_at(uint64_t pid, uint64_t start_realtime_ns,
		    uint64_t start_monotonic_ns)
{
	char path[64], buf[1024];
	if (!pid || pid > 0x7fffffff || !start_realtime_ns)
		return 0;
	snprintf(path, sizeof(path), "/proc/%llu/stat",
		 (unsigned long long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the name may hold spaces and parentheses: fields follow the last
	 * ')'; state is field 3, then 18 fields, starttime is field 22
	 * (proc(5)) */
	char *p = strrchr(buf, ')');
	char state;
	unsigned long long start_ticks;
	if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			       "%*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
			 &state, &start_ticks) != 2)
		return 0;
	if (state == 'Z' || state == 'X' || state == 'x')
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec rt, bt, mt;
	if (hz <= 0 || clock_gettime(CLOCK_REALTIME, &rt) ||
	    clock_gettime(CLOCK_BOOTTIME, &bt) ||
	    clock_gettime(CLOCK_MONOTONIC, &mt))
		return 0;
	/* starttime counts ticks since boot: the same instant in realtime */
	uint64_t now_rt = (uint64_t)rt.tv_sec * 1000000000ull +
			  (uint64_t)rt.tv_nsec;
	uint64_t now_bt = (uint64_t)bt.tv_sec * 1000000000ull +
			  (uint64_t)bt.tv_nsec;
	uint64_t since_boot = start_ticks / (uint64_t)hz * 1000000000ull +
			      start_ticks % (uint64_t)hz * 1000000000ull /
				      (uint64_t)hz;
	if (since_boot > now_bt || now_bt - since_boot > now_rt)
		return 0;
	uint64_t age = now_bt - since_boot;
	/* a process started after the recording began reuses the pid */
	if (now_rt - age > start_realtime_ns + SLACK_NS)
		return 0;
	if (!start_monotonic_ns)
		return 1;
	uint64_t now_mt = (uint64_t)mt.tv_sec * 1000000000ull +
			  (uint64_t)mt.tv_nsec;
	return age >= now_mt || now_mt - age <= start_monotonic_ns + SLACK_NS;
}
