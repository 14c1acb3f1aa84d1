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

struct rules_entry {
	uint64_t key, rule;
};
#define RULES_BITS 14
#define RULES_SIZE (1u << RULES_BITS)
#define RULES_PROBES 4
extern struct rules_entry *rules_cache;

static inline unsigned rules_hash(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> (64 - RULES_BITS));
}

/* A writer zeroes the key before changing the rule: the same key seen
 * before and after reading the rule makes a consistent pair. */
static inline int rules_lookup(uint64_t key, uint64_t *rule)
{
	unsigned h = rules_hash(key);
	for (unsigned i = 0; i < RULES_PROBES; i++) {
		struct rules_entry *e = &rules_cache[(h + i) % RULES_SIZE];
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		if (k == key) {
			*rule = __atomic_load_n(&e->rule, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
			return k == key;
		}
		if (k == 0)
			return 0;
	}
	return 0;
}

/* The rule when the bare address missed. */
uint64_t rules_miss(uintptr_t ip, uint64_t *epoch);

/* The rule of the frame whose return address is ip.  *epoch is 0 until
 * the loader has been checked during this capture (only needed for code
 * loaded later), then the epoch that was found. */
static inline uint64_t rules_get(uintptr_t ip, uint64_t *epoch)
{
	uint64_t rule;
	if (__builtin_expect(rules_lookup(ip, &rule), 1))
		return rule;
	return rules_miss(ip, epoch);
}

/* The loader epoch now: a new one whenever a module was unloaded. */
uint64_t rules_epoch(void);

#endif
