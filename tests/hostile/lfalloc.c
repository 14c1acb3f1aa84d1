/* A tiny lock-free allocator that is safe to call from a signal handler
 * and to siglongjmp out of: every state change is one compare-and-swap,
 * so an interrupted call leaves nothing held.  Blocks come from one
 * reserved arena (power-of-two classes, a bump pointer, a tagged free
 * list per class); the arena is never returned.  Preloaded natively, and
 * given to `heapslope record --allocator` in the hostile tests. */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define ARENA_SIZE (8ull << 30) /* reserved, never committed up front */
#define MIN_CLASS 5		/* 32-byte blocks: a header and 16 bytes */
#define MAX_CLASS 33
#define HDR 16
#define MAGIC 0x4c46414cu
#define FREED 0x46524545u

/* In front of every user pointer: the block's class and the distance from
 * the block's start (more than HDR for aligned requests). */
struct hdr {
	uint32_t magic;
	uint32_t cls;
	uint64_t off;
};

static char *arena;
static uint64_t bump;
/* per class: (tag << 32) | (block index + 1), 0 = empty; the tag grows
 * with every change so that a pop racing a handler's pop+push fails */
static uint64_t heads[MAX_CLASS + 1];

static char *get_arena(void)
{
	char *a = __atomic_load_n(&arena, __ATOMIC_ACQUIRE);
	if (a)
		return a;
	void *m = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	char *expect = NULL;
	if (__atomic_compare_exchange_n(&arena, &expect, (char *)m, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return m;
	munmap(m, ARENA_SIZE); /* a racing first call won */
	return expect;
}

static uint64_t *next_of(char *a, uint32_t idx)
{
	return (uint64_t *)(a + (uint64_t)(idx - 1) * 16);
}

static char *pop(char *a, unsigned cls)
{
	uint64_t old = __atomic_load_n(&heads[cls], __ATOMIC_ACQUIRE);
	while ((uint32_t)old) {
		uint32_t idx = (uint32_t)old;
		/* may read a block another call just took: the tag then
		 * makes the exchange fail */
		uint64_t next = __atomic_load_n(next_of(a, idx),
						__ATOMIC_RELAXED);
		uint64_t new = (((old >> 32) + 1) << 32) | (uint32_t)next;
		if (__atomic_compare_exchange_n(&heads[cls], &old, new, 1,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return (char *)next_of(a, idx);
	}
	return NULL;
}

static void push(char *a, unsigned cls, char *block)
{
	uint32_t idx = (uint32_t)((uint64_t)(block - a) / 16 + 1);
	uint64_t old = __atomic_load_n(&heads[cls], __ATOMIC_ACQUIRE), new;
	do {
		__atomic_store_n(next_of(a, idx), (uint32_t)old,
				 __ATOMIC_RELAXED);
		new = (((old >> 32) + 1) << 32) | idx;
	} while (!__atomic_compare_exchange_n(&heads[cls], &old, new, 1,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
}

/* A block for n bytes at alignment align (a power of two >= 16). */
static void *alloc(size_t n, size_t align)
{
	char *a = get_arena();
	if (!a || n > ARENA_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = n + HDR + (align > 16 ? align : 0);
	unsigned cls = MIN_CLASS;
	while (cls <= MAX_CLASS && ((size_t)1 << cls) < need)
		cls++;
	if (cls > MAX_CLASS) {
		errno = ENOMEM;
		return NULL;
	}
	char *block = pop(a, cls);
	if (!block) {
		uint64_t size = (uint64_t)1 << cls;
		uint64_t off = __atomic_fetch_add(&bump, size, __ATOMIC_RELAXED);
		if (off + size > ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
		block = a + off;
	}
	char *user = block + HDR;
	if (align > 16)
		user = (char *)(((uintptr_t)user + align - 1) & ~(align - 1));
	struct hdr *h = (struct hdr *)(user - HDR);
	h->cls = cls;
	h->off = (uint64_t)(user - block);
	h->magic = MAGIC;
	return user;
}

/* The header of one of our live blocks, or NULL (not ours, or freed). */
static struct hdr *header(void *p)
{
	char *a = __atomic_load_n(&arena, __ATOMIC_ACQUIRE);
	if (!p || !a || (char *)p < a + HDR || (char *)p >= a + ARENA_SIZE)
		return NULL;
	struct hdr *h = (struct hdr *)((char *)p - HDR);
	return h->magic == MAGIC ? h : NULL;
}

static size_t usable(struct hdr *h)
{
	return ((size_t)1 << h->cls) - h->off;
}

EXPORT void *malloc(size_t n)
{
	return alloc(n, 16);
}

EXPORT void free(void *p)
{
	struct hdr *h = header(p);
	if (!h)
		return; /* NULL, or a block of ld.so's early allocator */
	h->magic = FREED;
	push(arena, h->cls, (char *)p - h->off);
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc(total, 16);
	if (p)
		memset(p, 0, total);
	return p;
}

EXPORT void *realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	if (!n) {
		free(p);
		return NULL;
	}
	struct hdr *h = header(p);
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	size_t have = usable(h);
	if (n <= have)
		return p;
	void *q = alloc(n, 16);
	if (!q)
		return NULL;
	memcpy(q, p, have);
	free(p);
	return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

static int bad_align(size_t align)
{
	return !align || (align & (align - 1));
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (bad_align(align)) {
		errno = EINVAL;
		return NULL;
	}
	return alloc(n, align < 16 ? 16 : align);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (bad_align(align) || align % sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = alloc(n, align < 16 ? 16 : align);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t n)
{
	return memalign((size_t)getpagesize(), n);
}

EXPORT void *pvalloc(size_t n)
{
	size_t page = (size_t)getpagesize();
	size_t up = n ? (n + page - 1) & ~(page - 1) : page;
	if (up < n) {
		errno = ENOMEM;
		return NULL;
	}
	return memalign(page, up);
}

EXPORT size_t malloc_usable_size(void *p)
{
	struct hdr *h = header(p);
	return h ? usable(h) : 0;
}
