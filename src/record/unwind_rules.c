/* The rule cache.  A slot is (key, rule); readers take no lock: a writer
 * marks the key busy before changing the rule, so a reader that sees the
 * same key before and after reading the rule has a consistent pair.
 *
 * Code loaded before the recorder started is never unloaded: its rules
 * are kept under the bare address.  Code loaded later may be unloaded and
 * other code mapped in its place, so its keys carry a loader epoch (bits
 * 48-63) that changes whenever a module goes away; checking for that
 * costs a dl_iterate_phdr, paid only by captures that meet such code. */
#include "unwind_rules.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "../base/rmem.h"
#include "modules.h"
#include "unwind.h"
#include "unwind_cfi.h"

#define STAYING_MAX 128

struct rules_entry *rules_cache;
static uint64_t epoch = 1;
static unsigned long long seen_subs;

/* address ranges of the modules loaded at start, sorted */
static struct {
	uintptr_t lo, hi;
} staying[STAYING_MAX];
static int nstaying;

static int note_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size, (void)data;
	uintptr_t lo, hi;
	unwind_module_range(info, &lo, &hi);
	if (lo >= hi || nstaying == STAYING_MAX)
		return 0;
	int i = nstaying++;
	for (; i > 0 && staying[i - 1].lo > lo; i--)
		staying[i] = staying[i - 1];
	staying[i].lo = lo;
	staying[i].hi = hi;
	return 0;
}

__thread uint64_t rules_generation __attribute__((tls_model("initial-exec")));

struct loader_now {
	unsigned long long subs;
	uint64_t generation;
};

static int read_subs(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loader_now *now = data;
	now->generation = modules_generation_of(info, size);
	if (now->generation)
		now->subs = info->dlpi_subs;
	return 1;
}

/* The loader's count of modules removed; notes its generation for the
 * thread (rules_generation). */
static unsigned long long loader_subs(void)
{
	struct loader_now now = { 0, 0 };
	dl_iterate_phdr(read_subs, &now);
	rules_generation = now.generation;
	return now.subs;
}

int rules_init(void)
{
	if (__atomic_load_n(&rules_cache, __ATOMIC_ACQUIRE))
		return 0;
	size_t size = RULES_SIZE * sizeof(struct rules_entry);
	struct rules_entry *c = rmem_map(size), *none = NULL;
	if (!c)
		return -1;
	__atomic_store_n(&seen_subs, loader_subs(), __ATOMIC_RELAXED);
	dl_iterate_phdr(note_module, NULL);
	if (!__atomic_compare_exchange_n(&rules_cache, &none, c, 0,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		rmem_unmap(c, size);
	return 0;
}

static int stays(uintptr_t ip)
{
	int lo = 0, hi = nstaying;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (ip < staying[mid].lo)
			hi = mid;
		else if (ip >= staying[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

/* The next epoch, published: its low 16 bits, the ones keys carry, are
 * never 0 (a key's 0 there means code that stays).  When they wrap,
 * every key is dropped before the epoch is published: the keys of the
 * epoch 65,535 back carry the same bits. */
static void next_epoch(void)
{
	uint64_t e = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE), n;
	do {
		n = e + 1;
		if (!(n & 0xffff)) {
			n++;
			for (unsigned i = 0; i < RULES_SIZE; i++)
				__atomic_store_n(&rules_cache[i].key, 0,
						 __ATOMIC_RELAXED);
		}
	} while (!__atomic_compare_exchange_n(&epoch, &e, n, 0,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
}

/* The epoch is bumped before seen_subs is published, so that a thread
 * which sees the new count also sees the new epoch.  0 is never one. */
uint64_t rules_epoch(void)
{
	unsigned long long subs = loader_subs();
	if (subs != __atomic_load_n(&seen_subs, __ATOMIC_ACQUIRE)) {
		next_epoch();
		__atomic_store_n(&seen_subs, subs, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&epoch, __ATOMIC_ACQUIRE) & 0xffff;
}

/* Takes an empty slot, or one of an older epoch, or the first.  A writer
 * marks the slot RULES_BUSY while it changes the rule: a second writer
 * skips it (it is only a cache), so no slot ends with one writer's key
 * and the other's rule. */
static void insert(uint64_t key, uint64_t rule)
{
	unsigned h = rules_hash(key & RULES_IP_MASK), pick = h & (RULES_SIZE - 1);
	for (unsigned i = 0; i < RULES_PROBES; i++) {
		unsigned s = (h + i) & (RULES_SIZE - 1);
		uint64_t k = __atomic_load_n(&rules_cache[s].key,
					     __ATOMIC_RELAXED);
		if (k == 0 || (k >> 48 && k >> 48 != key >> 48)) {
			pick = s;
			break;
		}
	}
	struct rules_entry *e = &rules_cache[pick];
	uint64_t old = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
	if (old == RULES_BUSY ||
	    !__atomic_compare_exchange_n(&e->key, &old, RULES_BUSY, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return; /* another writer is here: skip, it is only a cache */
	__atomic_store_n(&e->rule, rule, __ATOMIC_RELAXED);
	__atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
}

static uint64_t compute(uintptr_t ip)
{
	struct cfi_rule r = { CFI_UNKNOWN, 0, 0, 0 };
#ifdef UNWIND_FAST_SUPPORTED
	struct dl_find_object obj;
	/* a return address may follow a call that ends its function */
	if (_dl_find_object((void *)(ip - 1), &obj) == 0)
		cfi_rule_at(obj.dlfo_eh_frame, ip - 1, &r);
#else
	(void)ip;
#endif
	return cfi_pack(&r);
}

uint64_t rules_miss(uintptr_t ip, uint64_t *ep)
{
	uint64_t rule;
	if (ip >> 48) { /* no room for the epoch */
		struct cfi_rule r = { CFI_UNKNOWN, 0, 0, 0 };
		return cfi_pack(&r);
	}
	if (stays(ip)) {
		rule = compute(ip);
		insert(ip, rule);
		return rule;
	}
	/* not filed for this epoch: rules_lookup saw no slot of ip's for
	 * it (a slot of ip's of another one made it check the epoch) */
	if (!*ep)
		*ep = rules_epoch();
	uint64_t key = ip | *ep << 48;
	rule = compute(ip) | RULE_DYNAMIC;
	insert(key, rule);
	return rule;
}
