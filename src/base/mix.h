/* A 64-bit mix in which every bit of the key moves every bit of the
 * result (MurmurHash3's finalizer): hash tables' keys whose low bits
 * alone differ, or their high bits alone, spread over every slot. */
#ifndef HS_MIX_H
#define HS_MIX_H

#include <stdint.h>

static inline uint64_t hs_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	return k ^ k >> 33;
}

#endif
