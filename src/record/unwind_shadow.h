/* The fast unwinder's state of a thread, its shadow: the previous walk,
 * the ways through the recorder's own frames, the walks filed by their
 * first frame (unwind_fast.c says how they are used).  Internal to the
 * fast method. */
#ifndef HS_UNWIND_SHADOW_H
#define HS_UNWIND_SHADOW_H

#include <stdint.h>

#include "unwind.h"
#include "unwind_fast.h"

/* Frames kept per thread: twice the default depth (a walk also passes
 * the recorder's own frames); deeper stacks are still captured, only not
 * reused. */
#define KEEP_MAX 256

/* A frame of a walk: the words it read and the state it used. */
struct kframe {
	uintptr_t slot;   /* where ip was read */
	uintptr_t ip;
	uintptr_t fp;     /* RBP when this frame was stepped */
	uintptr_t rbp_at; /* where the next RBP was read (or 0) | flags */
};
#define CFA_RBP 1 /* this frame's CFA is RBP-based */
#define DYNAMIC 2 /* its rule holds for one loader epoch only */
#define FP_LIVE 4 /* in a filed walk: the RBP this frame read is used */
#define FLAGS 7

/* The recorder's own leading frames, for one way into the unwinder: their
 * return addresses and the offsets from the first slot of each next slot,
 * the last being the first caller's.  All have RSP-based CFAs, so the
 * same addresses mean the same offsets wherever the stack is. */
#define OWN_MAX 12
#define OWN_WAYS 4
struct own {
	int n;               /* 0: empty */
	uintptr_t ip[OWN_MAX];
	uintptr_t off[OWN_MAX];
	uintptr_t rbp_off;   /* where the caller's RBP was saved; 0: in RBP */
};

/* Whole walks made before, filed under their first frame.  A program
 * allocates from a limited set of places, again and again; coming back to
 * one, the walk made there before is the answer if every word it read
 * still holds what it read (the argument of the kept walk: a walk is a
 * function of its starting state and of the words it reads).  Checking
 * that costs a load and a compare per frame, no rule lookup, no step.
 * Only walks that reached the outermost frame are filed, up to
 * RECENT_FRAMES deep; the table is mapped with the shadow and only the
 * entries used become resident.  An entry's walk key names its walk for
 * the caller, who can keep what it knows of the stack by it. */
#define RECENT (1 << UNWIND_WALK_BITS)
#define RECENT_FRAMES 20
struct recent {
	uint32_t n;       /* frames; 0: empty */
	uint16_t fp_used; /* the walk used the first frame's RBP */
	uint16_t old;     /* first of a set: the entry used last is the
			   * second */
	uint32_t out;     /* how many return addresses a recall gives */
	uint32_t live;    /* bit m: frame m's RBP read is used (FP_LIVE) */
	uint64_t key;     /* its walk key (unwind.h) */
	struct kframe f[RECENT_FRAMES]; /* outermost first, as keep */
	uintptr_t ips[RECENT_FRAMES];   /* innermost first, without the
					 * recorder's own frames */
};

/* What says a kept walk still holds: each frame's return address, and
 * the RBPs it read that a frame further out used (an RBP-based CFA)
 * before another was read: an RBP nothing used cannot change the walk. */
struct kcheck {
	uintptr_t slot, ip;
};
struct rcheck {
	uintptr_t at, val;
	int m; /* the frame that read it */
};

struct shadow {
	uintptr_t lo, hi; /* the thread's stack; hi == 0: not known yet */
	int bad;          /* bounds unavailable: always fall back */
	/* The previous walk is keep[0..n), outermost first, so that its
	 * outer part stays in place when reused.  A walk puts its new
	 * frames, innermost first, downwards from the end of keep, then
	 * moves them next to the part it reuses. */
	int n;
	int complete;   /* it reached the outermost frame */
	uint64_t epoch; /* the loader epoch its DYNAMIC rules belong to */
	int dyn;        /* the outermost DYNAMIC frame of keep; KEEP_MAX:
			 * none */
	uint64_t serial; /* keep's number (unwind_walk): each change, one
			  * more */
	struct kframe keep[2 * KEEP_MAX];
	/* made with keep[0..n) as it is kept: the checks of its frames,
	 * outermost first, those of the RBPs it used, rcheck[0..nr) by
	 * frame, whether frame m's RBP was used (from frame m outwards,
	 * before a reload), and the return addresses innermost first
	 * (ending at rip[KEEP_MAX - 1]), to copy a reused part out whole */
	struct kcheck check[KEEP_MAX];
	struct rcheck rcheck[KEEP_MAX];
	int nr;
	uint8_t fp_live[KEEP_MAX];
	uintptr_t rip[KEEP_MAX];
	struct own own[OWN_WAYS];
	int own_next;   /* the way to replace */
	struct unwind_fast_stats st;
	uint64_t filed; /* walks filed so far: the keys' high bits */
	uint32_t recent_tags[RECENT]; /* unwind_fast.c's recent_tag; 0: none */
	struct recent recent[RECENT];
};

/* Mapped on a thread's first capture, unmapped when it exits: static TLS
 * this large would shrink every thread's stack, or stop threads with a
 * minimal one from being created at all. */
extern __thread struct shadow *shadow
	__attribute__((tls_model("initial-exec")));
#define SHADOW_GONE ((struct shadow *)1) /* the thread is exiting */

/* The calling thread's shadow, mapped now; NULL if it cannot be. */
struct shadow *shadow_create(void);
/* Its stack bounds, once (sh->bad when they cannot be had). */
void shadow_bounds(struct shadow *sh);

#endif
