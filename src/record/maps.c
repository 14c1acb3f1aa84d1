#include "maps.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../base/rmem.h"
#include "../format/trace_format.h"

/* Sorted, disjoint [start, end) ranges. */
struct range {
	uintptr_t start, end;
};

static struct range *ranges;
static size_t count, cap;

static int reserve_one(void)
{
	if (count < cap)
		return 0;
	size_t ncap = cap ? cap * 2 : 1024;
	struct range *r = rmem_map(ncap * sizeof(*r));
	if (!r)
		return -1;
	if (ranges)
		memcpy(r, ranges, count * sizeof(*r));
	rmem_unmap(ranges, cap * sizeof(*r));
	ranges = r;
	cap = ncap;
	return 0;
}

/* First range whose end is past addr. */
static size_t lower(uintptr_t addr)
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ranges[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the kernel maps and unmaps whole pages */
static uintptr_t page_end(uintptr_t start, size_t len)
{
	static uintptr_t page;
	if (!page)
		page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t end = start + len;
	if (end < start)
		return UINTPTR_MAX & ~(page - 1);
	return end + page - 1 < end ? end : (end + page - 1) & ~(page - 1);
}

int maps_add(uintptr_t start, size_t len)
{
	uintptr_t end = page_end(start, len);
	/* a MAP_FIXED mapping may replace part of a known one */
	maps_remove(start, len);
	if (reserve_one())
		return -1;
	size_t i = lower(start);
	memmove(&ranges[i + 1], &ranges[i], (count - i) * sizeof(*ranges));
	ranges[i] = (struct range){ start, end };
	count++;
	return 0;
}

int maps_remove(uintptr_t start, size_t len)
{
	uintptr_t end = page_end(start, len);
	int found = 0;
	size_t i = lower(start);
	while (i < count && ranges[i].start < end) {
		struct range r = ranges[i];
		found = 1;
		if (r.start < start && r.end > end) { /* a hole in the middle */
			if (reserve_one())
				return found;
			memmove(&ranges[i + 1], &ranges[i],
				(count - i) * sizeof(*ranges));
			count++;
			ranges[i].end = start;
			ranges[i + 1].start = end;
			return found;
		}
		if (r.start < start) {
			ranges[i++].end = start;
		} else if (r.end > end) {
			ranges[i].start = end;
			i++;
		} else {
			memmove(&ranges[i], &ranges[i + 1],
				(count - i - 1) * sizeof(*ranges));
			count--;
		}
	}
	return found;
}

int maps_overlaps(uintptr_t start, size_t len)
{
	size_t i = lower(start);
	return i < count && ranges[i].start < page_end(start, len);
}

size_t maps_length_at(uintptr_t start)
{
	size_t i = lower(start);
	return i < count && ranges[i].start == start
		       ? ranges[i].end - ranges[i].start
		       : 0;
}

void maps_clear(void)
{
	count = 0;
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(s, prefix, k) == 0;
}

void maps_describe(int fd, struct map_file *f)
{
	/* one at a time (the lock): no room on the program's stack */
	static char path[1024];
	char link[32] = "/proc/self/fd/";
	char digits[12];
	int nd = 0;
	unsigned v = (unsigned)fd;
	struct stat st;
	memset(f, 0, sizeof(*f));
	f->kind = HS_MAP_OTHER;
	f->path = path;
	if (fd < 0 || fstat(fd, &st))
		return;
	f->dev = (uint64_t)st.st_dev;
	f->ino = (uint64_t)st.st_ino;
	do
		digits[nd++] = (char)('0' + v % 10);
	while ((v /= 10) && nd < (int)sizeof(digits));
	size_t at = strlen(link);
	while (nd)
		link[at++] = digits[--nd];
	link[at] = 0;
	ssize_t n = readlink(link, path, sizeof(path));
	f->path_len = n > 0 ? (size_t)n : 0;
	if (!S_ISREG(st.st_mode))
		return;
	if (starts_with(path, f->path_len, "/memfd:"))
		f->kind = HS_MAP_MEMFD;
	else if (starts_with(path, f->path_len, "/dev/shm/"))
		f->kind = HS_MAP_SHM;
	else
		f->kind = HS_MAP_FILE;
}
