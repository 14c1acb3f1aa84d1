#include "anonmap.h"

#include <string.h>

#include "../base/rmem.h"

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

int anonmap_add(uintptr_t start, size_t len)
{
	/* a MAP_FIXED mapping may replace part of a known one */
	anonmap_remove(start, len);
	if (reserve_one())
		return -1;
	size_t i = lower(start);
	memmove(&ranges[i + 1], &ranges[i], (count - i) * sizeof(*ranges));
	ranges[i] = (struct range){ start, start + len };
	count++;
	return 0;
}

int anonmap_remove(uintptr_t start, size_t len)
{
	uintptr_t end = start + len;
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
