/* Unwind rules per return address, cached for all threads without locks.
 * A rule is a cfi_pack() value plus the flag below. */
#ifndef HS_UNWIND_RULES_H
#define HS_UNWIND_RULES_H

#include <stdint.h>

/* x86_64 only; _dl_find_object needs glibc 2.35 */
#if defined(__x86_64__) && defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define UNWIND_FAST_SUPPORTED 1
#endif

/* The code may be unloaded: the rule holds for one loader epoch only. */
#define RULE_DYNAMIC (1ull << 37)

/* Maps the cache and notes the modules loaded now, which stay; -1 on
 * failure. */
int rules_init(void);

/* A slot: key is the return address, with the loader epoch in bits
 * 48-63 for code loaded later (0 there for code that stays), and 0 for
 * an empty slot.  Slots are chosen by the address alone, so a lookup
 * finds either kind in one run of probes. */
struct rules_entry {
	uint64_t key, rule;
};
#define RULES_BITS 14
#define RULES_SIZE (1u << RULES_BITS)
#define RULES_PROBES 4
#define RULES_IP_MASK ((1ull << 48) - 1)
/* A slot a writer is changing: matches no lookup */
#define RULES_BUSY 1ull
extern struct rules_entry *rules_cache;

/* The first slot of ip's probes. */
static inline unsigned rules_hash(uintptr_t ip)
{
	return (unsigned)((ip * 0x9e3779b97f4a7c15ull) >> (64 - RULES_BITS));
}

/* The loader epoch now: a new one whenever a module was unloaded.  It
 * also notes the loader's generation for the calling thread. */
uint64_t rules_epoch(void);

/* The loader's generation (modules_generation's value) as rules_epoch
 * (or rules_init) last read it on this thread, 0 if it has not since
 * the thread's last capture began (unwind_capture_walk and
 * unwind_capture_plain zero it): a capture's stack was in modules loaded
 * by then, so the events code takes it instead of asking the loader
 * again. */
extern __thread uint64_t rules_generation
	__attribute__((tls_model("initial-exec")));

/* The rule of ip filed for code that stays or, for code loaded later,
 * for the epoch now (*epoch: 0 until the loader was checked, then the
 * epoch found; checked only when a slot of ip's is of that kind).  A
 * writer marks the slot busy before changing the rule: the same key seen
 * before and after reading the rule makes a consistent pair. */
static inline int rules_lookup(uintptr_t ip, uint64_t *epoch, uint64_t *rule)
{
	unsigned h = rules_hash(ip);
	for (unsigned i = 0; i < RULES_PROBES; i++) {
		struct rules_entry *e = &rules_cache[(h + i) % RULES_SIZE];
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		if (k == 0)
			return 0;
		if ((k & RULES_IP_MASK) != ip || k == RULES_BUSY)
			continue;
		if (k >> 48) {
			if (!*epoch)
				*epoch = rules_epoch();
			if (k >> 48 != *epoch)
				continue; /* an older epoch's */
		}
		*rule = __atomic_load_n(&e->rule, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		return __atomic_load_n(&e->key, __ATOMIC_RELAXED) == k;
	}
	return 0;
}

/* The rule when the lookup missed: computed and filed. */
uint64_t rules_miss(uintptr_t ip, uint64_t *epoch);

/* The rule of the frame whose return address is ip.  *epoch is 0 until
 * the loader has been checked during this capture (only needed for code
 * loaded later), then the epoch that was found. */
static inline uint64_t rules_get(uintptr_t ip, uint64_t *epoch)
{
	uint64_t rule;
	if (__builtin_expect(rules_lookup(ip, epoch, &rule), 1))
		return rule;
	return rules_miss(ip, epoch);
}

#endif
