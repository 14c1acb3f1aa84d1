/* The fast capture method.  Each frame is stepped with the cached rule of
 * its return address (CFA = RSP or RBP + offset, return address at CFA-8,
 * RBP saved at a constant offset); every stack read is checked against
 * the thread's stack bounds.
 *
 * The thread's previous walk is kept: per frame the slot its return
 * address was read from, that address, its RBP and where the next RBP
 * was read.  A walk is a function of its starting state and of the words
 * it reads, so once the new walk reaches a kept frame with the same state
 * and every word the kept walk read from there outwards is unchanged,
 * the rest of the kept stack is the answer.  Stale words left in the
 * stack by returned calls cannot fool this: they are never both in the
 * same place and consistent with the current state.
 *
 * Short of that, a kept frame with the same return address shows the
 * step to take without a rule lookup (moved, if its CFA is RSP-based),
 * and the recorder's own leading frames, whose place moves with the
 * caller's depth, are stepped over in one go as a walk went through them
 * before.
 *
 * Anything unusual returns -1 and the caller uses libunwind instead. */
#include "unwind_fast.h"

#include <string.h>

#include "unwind_cfi.h"
#include "unwind_rules.h"
#include "unwind_shadow.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

/* libunwind stops at a return address below this; so do we */
#define IP_MIN 0x4000

#ifdef UNWIND_FAST_SUPPORTED

/* One walk.  Reads are allowed in [lo, lo + span]; lo is the first slot
 * and lo + span + 8 the end of the stack. */
struct walk {
	uintptr_t lo, span;
	uintptr_t self_lo, self_hi;
	struct unwind_walk *out_walk; /* for the caller */
	uintptr_t *ips;
	int max, out;
	int n;          /* new frames, at the end of keep */
	int dropped;    /* more new frames than KEEP_MAX */
	uint64_t epoch; /* 0 until the loader was checked */
	/* matching against the kept walk: candidates are keep[0..i];
	 * keep[0..ok) are verified (and rcheck[0..rk), theirs),
	 * keep[bad] (and so all inside it) not */
	int i, ok, bad, rk;
};

static inline uintptr_t load(uintptr_t a)
{
	return *(const uintptr_t *)a;
}

/* Appends ip unless it is a leading frame of our own; 1 when full. */
static inline int emit(struct walk *w, uintptr_t ip)
{
	if (w->out == 0 && ip >= w->self_lo && ip < w->self_hi)
		return 0;
	w->ips[w->out++] = ip;
	return w->out == w->max;
}

/* Whether every word the kept walk read from keep[i] outwards and used
 * still holds the value it read.  Every allocation of a deep stack checks
 * its whole outer part, so the checks are made when the frames are kept
 * (keep_walk): a load and a compare per frame, and per RBP used.  The
 * words lie between this walk's first slot, keep[i].slot, and the
 * stack's end, as they did when read: a frame's slots go outwards, and
 * an RBP is read above the slot of the frame that reads it (walk_from). */
static int outer_intact(const struct shadow *sh, struct walk *w, int i)
{
	const struct kcheck *c = &sh->check[w->ok];
	int m = w->ok, r = w->rk;
	if (i >= w->bad)
		return 0;
	/* four at a time, compared at once (any of keep[0..i] may be
	 * read), then one by one to the first that differs */
	for (; m + 3 <= i; m += 4, c += 4)
		if ((load(c[0].slot) ^ c[0].ip) | (load(c[1].slot) ^ c[1].ip) |
		    (load(c[2].slot) ^ c[2].ip) | (load(c[3].slot) ^ c[3].ip))
			break;
	for (; m <= i; m++, c++)
		if (load(c->slot) != c->ip)
			break;
	for (; r < sh->nr && sh->rcheck[r].m < m; r++)
		if (load(sh->rcheck[r].at) != sh->rcheck[r].val) {
			m = sh->rcheck[r].m;
			break;
		}
	w->ok = m;
	w->rk = r;
	if (m <= i) {
		w->bad = m;
		return 0;
	}
	return 1;
}

/* Walking a kept walk outwards (the frame's rbp_at; *used: whether the
 * RBP frame m - 1 was stepped with is used, by frame m or further out,
 * before RBP is read again): whether the RBP frame m reads from the
 * stack is so used, and so must be checked; *used becomes frame m's. */
static inline int rbp_step(uintptr_t rbp_at, int *used)
{
	int reloads = (rbp_at & ~(uintptr_t)FLAGS) != 0;
	int live = reloads && *used;
	*used = (rbp_at & CFA_RBP) || (!reloads && *used);
	return live;
}

/* Whether the kept walk from keep[i] outwards used keep[i].fp: until a
 * frame reloads RBP from the stack, an RBP-based CFA uses it. */
static int fp_used(const struct shadow *sh, int i)
{
	for (int m = i; m >= 0; m--) {
		uintptr_t r = sh->keep[m].rbp_at;
		if (r & CFA_RBP)
			return 1;
		if (r & ~(uintptr_t)FLAGS)
			return 0;
	}
	return !sh->complete; /* the outermost frame was not stepped */
}

/* A kept frame with the current return address stepped as the current
 * frame will, moved by the difference of their slots, if its rule still
 * holds and its CFA was not based on another RBP or at another place. */
static int steps_alike(const struct shadow *sh, const struct kframe *f,
		       uintptr_t slot, uintptr_t fp, uint64_t *epoch)
{
	if ((f->rbp_at & CFA_RBP) && (f->fp != fp || f->slot != slot))
		return 0;
	if (f->rbp_at & DYNAMIC) {
		if (!*epoch)
			*epoch = rules_epoch();
		return *epoch == sh->epoch;
	}
	return 1;
}

/* keep[i] has the current frame's slot and return address: whether the
 * rest of the kept walk is the rest of this one. */
static int reusable(const struct shadow *sh, struct walk *w, int i,
		    uintptr_t fp)
{
	if (sh->keep[i].fp != fp && fp_used(sh, i))
		return 0;
	if (!outer_intact(sh, w, i))
		return 0;
	if (sh->dyn <= i) { /* the rules of unloadable code were used */
		if (!w->epoch)
			w->epoch = rules_epoch();
		if (w->epoch != sh->epoch)
			return 0;
	}
	return 1;
}

/* Keeps keep[0..outer) followed by the new frames. */
static void keep_walk(struct shadow *sh, struct walk *w, int outer,
		      int complete)
{
	if (outer + w->n > KEEP_MAX) {
		sh->n = 0;
		return;
	}
	memmove(&sh->keep[outer], &sh->keep[2 * KEEP_MAX - w->n],
		(size_t)w->n * sizeof(struct kframe));
	sh->n = outer + w->n;
	sh->serial++;
	w->out_walk->shared = outer;
	if (sh->dyn >= outer)
		sh->dyn = KEEP_MAX;
	while (sh->nr > 0 && sh->rcheck[sh->nr - 1].m >= outer)
		sh->nr--;
	/* as remember's FP_LIVE: the RBP frame m - 1 was stepped with is
	 * used by it or further out */
	int used = outer > 0 ? sh->fp_live[outer - 1] : 0;
	for (int m = outer; m < sh->n; m++) {
		const struct kframe *f = &sh->keep[m];
		uintptr_t at = f->rbp_at & ~(uintptr_t)FLAGS;
		sh->check[m] = (struct kcheck){ f->slot, f->ip };
		if (rbp_step(f->rbp_at, &used))
			sh->rcheck[sh->nr++] = (struct rcheck){ at, f[-1].fp, m };
		sh->fp_live[m] = (uint8_t)used;
		sh->rip[KEEP_MAX - 1 - m] = f->ip;
		if ((f->rbp_at & DYNAMIC) && sh->dyn > m)
			sh->dyn = m;
	}
	sh->complete = complete && !w->dropped;
	if (w->epoch)
		sh->epoch = w->epoch;
}

/* Emits keep[i], keep[i-1]... keep[0]; 0 if those do not reach as far
 * as a fresh walk would. */
static int take_outer(struct shadow *sh, struct walk *w, int i)
{
	int out = w->out, m = i;
	while (w->out == 0 && m >= 0)
		emit(w, sh->keep[m--].ip);
	int room = w->max - w->out;
	int full = m + 1 >= room && w->out;
	if (!full && !sh->complete) {
		w->out = out;
		w->bad = 0; /* kept frames further out are fewer still */
		return 0;
	}
	int take = m + 1 < room ? m + 1 : room;
	memcpy(&w->ips[w->out], &sh->rip[KEEP_MAX - 1 - m],
	       (size_t)take * sizeof(*w->ips));
	w->out += take;
	keep_walk(sh, w, i + 1, sh->complete);
	w->out_walk->rooted = take == m + 1; /* down to keep[0] */
	sh->st.reused++;
	return 1;
}

/* Notes how the walk went through our own frames: the n innermost new
 * frames, up to caller_slot. */
static void learn_own(struct shadow *sh, int n, uintptr_t caller_slot)
{
	const struct kframe *f = sh->keep + 2 * KEEP_MAX - 1; /* innermost */
	uintptr_t base = f->slot;
	struct own o;
	if (n < 1 || n > OWN_MAX)
		return;
	memset(&o, 0, sizeof(o));
	o.n = n;
	for (int m = 0; m < n; m++, f--) {
		uintptr_t at = f->rbp_at & ~(uintptr_t)FLAGS;
		if (f->rbp_at & (CFA_RBP | DYNAMIC))
			return;
		o.ip[m] = f->ip;
		o.off[m] = (m + 1 < n ? f[-1].slot : caller_slot) - base;
		if (at)
			o.rbp_off = at - base;
	}
	for (int i = 0; i < OWN_WAYS; i++)
		if (!memcmp(&sh->own[i], &o, sizeof(o)))
			return;
	sh->own[sh->own_next] = o;
	sh->own_next = (sh->own_next + 1) % OWN_WAYS;
}

/* Steps over our own frames as a walk did before: *slot and *fp become
 * the first caller's, if the return addresses are those seen then. */
static int skip_own(const struct shadow *sh, uintptr_t span,
		    uintptr_t *slot, uintptr_t *fp)
{
	uintptr_t s0 = *slot, ip0 = load(s0);
	for (int i = 0; i < OWN_WAYS; i++) {
		const struct own *o = &sh->own[i];
		int k = 1;
		if (!o->n || o->ip[0] != ip0 || o->off[o->n - 1] > span ||
		    o->rbp_off > span)
			continue;
		while (k < o->n && load(s0 + o->off[k - 1]) == o->ip[k])
			k++;
		if (k < o->n)
			continue;
		*slot = s0 + o->off[o->n - 1];
		if (o->rbp_off)
			*fp = load(s0 + o->rbp_off);
		return 1;
	}
	return 0;
}

/* Where a walk beginning at slot is filed: a hash giving the set of two
 * entries (recent_index) and, in the thread's tags, a tag that answers
 * most lookups without touching the entries (recent_tag), which are large
 * and far apart. */
static inline uint64_t recent_hash(uintptr_t slot, uintptr_t ip)
{
	return (slot ^ ip * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull;
}

static inline int recent_index(uint64_t h)
{
	return (int)(h >> 40 & (RECENT / 2 - 1)) * 2;
}

static inline uint32_t recent_tag(uint64_t h)
{
	return (uint32_t)h | 1;
}

static inline int recent_is(const struct recent *r, uintptr_t slot,
			    uintptr_t ip)
{
	return r->n && r->f[r->n - 1].slot == slot && r->f[r->n - 1].ip == ip;
}

/* The walk filed under the frame at slot, checked against the stack now:
 * its output count, or -1 if there is none or it does not hold. */
static int recall(struct shadow *sh, const struct walk *w, uintptr_t slot,
		  uintptr_t fp)
{
	uintptr_t ip = load(slot);
	uint64_t h = recent_hash(slot, ip);
	int i = recent_index(h);
	uint32_t tag = recent_tag(h);
	struct recent *set = &sh->recent[i], *r;
	if (sh->recent_tags[i] == tag && recent_is(set, slot, ip))
		r = set;
	else if (sh->recent_tags[i + 1] == tag && recent_is(set + 1, slot, ip))
		r = set + 1;
	else
		return -1;
	uint32_t n = r->n;
	if (r->fp_used && r->f[n - 1].fp != fp)
		return -1;
	const uintptr_t lo = w->lo, span = w->span;
	/* slots lie between this walk's first slot (the innermost one's)
	 * and the stack's end, as they did when read: all are read, and
	 * compared at once */
	_Static_assert(RECENT_FRAMES <= 32, "live is a 32-bit mask");
	uintptr_t differ = 0;
	uint32_t m = 0;
	for (; m + 4 <= n; m += 4)
		differ |= (load(r->f[m].slot) ^ r->f[m].ip) |
			  (load(r->f[m + 1].slot) ^ r->f[m + 1].ip) |
			  (load(r->f[m + 2].slot) ^ r->f[m + 2].ip) |
			  (load(r->f[m + 3].slot) ^ r->f[m + 3].ip);
	for (; m < n; m++)
		differ |= load(r->f[m].slot) ^ r->f[m].ip;
	if (differ)
		return -1;
	for (uint32_t live = r->live; live; live &= live - 1) {
		const struct kframe *f = &r->f[__builtin_ctz(live)];
		uintptr_t at = f->rbp_at & ~(uintptr_t)FLAGS;
		if (at - lo > span || load(at) != f[-1].fp)
			return -1;
	}
	if ((int)r->out > w->max)
		return -1; /* cut short: not the filed stack */
	if (w->max >= RECENT_FRAMES) /* a move of a constant size */
		memcpy(w->ips, r->ips, sizeof(r->ips));
	else
		memcpy(w->ips, r->ips, r->out * sizeof(*r->ips));
	set[0].old = r != set;
	w->out_walk->key = r->key;
	w->out_walk->shared = sh->n; /* keep is as it was */
	sh->st.recalled++;
	return (int)r->out;
}

/* Files the kept walk, which began at slot, if it is whole, with a new
 * key for the caller. */
static void remember(struct shadow *sh, const struct walk *w)
{
	uint32_t n = (uint32_t)sh->n;
	if (!sh->complete || n < 1 || n > RECENT_FRAMES)
		return;
	for (uint32_t m = 0; m < n; m++)
		if (sh->keep[m].rbp_at & DYNAMIC)
			return; /* code that may be unloaded: not for long */
	uintptr_t slot = sh->keep[n - 1].slot, ip = sh->keep[n - 1].ip;
	uint64_t h = recent_hash(slot, ip);
	struct recent *set = &sh->recent[recent_index(h)], *r = set;
	/* the entry of this place if it went stale, else the one not used
	 * last */
	if (recent_is(&set[1], slot, ip) ||
	    (!recent_is(set, slot, ip) && !set[0].old))
		r = &set[1];
	set[0].old = r != set;
	sh->recent_tags[r - sh->recent] = recent_tag(h);
	memcpy(r->f, sh->keep, n * sizeof(*r->f));
	/* an RBP read matters only if a frame further out has an RBP-based
	 * CFA before RBP is read again: the outermost frame of a whole walk
	 * was stepped (to its end), so nothing beyond it does */
	int used = 0; /* frame m-1's RBP is used */
	r->live = 0;
	for (uint32_t m = 0; m < n; m++) {
		struct kframe *f = &r->f[m];
		if (rbp_step(f->rbp_at, &used)) {
			f->rbp_at |= FP_LIVE;
			r->live |= 1u << m;
		}
	}
	r->n = n;
	r->fp_used = (uint16_t)used;
	/* what a recall returns, innermost first without our own leading
	 * frames, ready to copy */
	uint32_t out = 0;
	for (uint32_t m = n; m > 0;) {
		uintptr_t fip = r->f[--m].ip;
		if (out == 0 && fip >= w->self_lo && fip < w->self_hi)
			continue;
		r->ips[out++] = fip;
	}
	r->out = out;
	/* a new key: whatever the caller kept for the entry's last walk
	 * is not for this one */
	r->key = ++sh->filed << UNWIND_WALK_BITS |
		 (uint64_t)(r - sh->recent);
	w->out_walk->key = r->key;
}

/* Steps outwards from the frame whose return address sits in slot, with
 * fp its RBP; returns the output count, or -1.  The hot state lives in
 * locals: stack reads could alias anything else. */
static int walk_from(struct shadow *sh, struct walk *w, uintptr_t slot,
		     uintptr_t fp)
{
	struct kframe *const keep = sh->keep;
	struct kframe *const end = keep + 2 * KEEP_MAX;
	struct kframe spare;
	const uintptr_t lo = w->lo, span = w->span;
	const uintptr_t self_lo = w->self_lo, self_hi = w->self_hi;
	uintptr_t *const ips = w->ips;
	const int max = w->max;
	int out = 0, n = 0, i = w->i, complete = 0;
	/* the kept frame as deep as this one, while the return addresses
	 * agree: our own frames sit lower or higher with the caller's
	 * depth, but step alike */
	int d = sh->n - 1;
	uint64_t epoch = 0;
	uintptr_t ip = load(slot), sp = slot + 8;
	for (;;) {
		const struct kframe *g = NULL; /* a kept frame to step like */
		while (i >= 0 && keep[i].slot < slot)
			i--;
		if (i >= 0 && keep[i].slot == slot && keep[i].ip == ip) {
			w->out = out;
			w->n = n;
			w->epoch = epoch;
			if (reusable(sh, w, i, fp) && take_outer(sh, w, i))
				return w->out;
			epoch = w->epoch;
			if (i > 0 &&
			    steps_alike(sh, &keep[i], slot, fp, &epoch))
				g = &keep[i];
		}
		if (d >= 0 && keep[d].ip != ip)
			d = -1;
		if (!g && d > 0 && steps_alike(sh, &keep[d], slot, fp, &epoch))
			g = &keep[d];
		d--;
		struct kframe *k = &spare;
		if (n < KEEP_MAX) {
			k = end - ++n;
		} else {
			w->dropped = 1; /* too deep to keep: no reuse either */
			i = -1;
		}
		k->slot = slot;
		k->ip = ip;
		k->fp = fp;
		k->rbp_at = 0;
		if (out || ip < self_lo || ip >= self_hi) {
			if (!out && keep[2 * KEEP_MAX - 1].slot == lo)
				learn_own(sh, n - 1, slot);
			ips[out++] = ip;
			if (out == max)
				break;
		}
		if (g) {
			/* the kept walk took this step: follow it, moved */
			uintptr_t shift = slot - g->slot;
			uintptr_t a = g->rbp_at & ~(uintptr_t)FLAGS;
			k->rbp_at = g->rbp_at & FLAGS;
			if (a) {
				a += shift;
				if (a - lo > span || a <= slot)
					return -1;
				fp = load(a);
				k->rbp_at |= a;
			}
			slot = g[-1].slot + shift;
			if (slot - lo > span)
				return -1;
			sp = slot + 8;
			ip = load(slot);
			if (ip < IP_MIN)
				break;
			continue;
		}
		struct cfi_rule r;
		uint64_t rule = rules_get(ip, &epoch);
		cfi_unpack(rule, &r);
		if (rule & RULE_DYNAMIC)
			k->rbp_at = DYNAMIC;
		if (r.kind == CFI_END) {
			complete = 1;
			break;
		}
		if (r.kind != CFI_RSP && r.kind != CFI_RBP)
			return -1;
		uintptr_t cfa = r.kind == CFI_RSP ? sp : fp;
		cfa += (intptr_t)r.cfa_off;
		/* the stack only grows outwards: this also stops loops;
		 * slots are aligned (their low bits hold a frame's flags) */
		if (cfa - 8 <= slot || cfa - 8 - lo > span || (cfa & 7))
			return -1;
		if (r.kind == CFI_RBP)
			k->rbp_at |= CFA_RBP;
		if (r.saves_rbp) {
			uintptr_t a = cfa + (intptr_t)r.rbp_off;
			/* above this frame's slot: outer_intact counts on it */
			if (a - lo > span || (a & 7) || a <= slot)
				return -1;
			fp = load(a);
			k->rbp_at |= a;
		}
		slot = cfa - 8;
		sp = cfa;
		ip = load(slot);
		/* libunwind's end as well; not complete for reuse, since
		 * this last word is not kept */
		if (ip < IP_MIN)
			break;
	}
	w->out = out;
	w->n = n;
	w->epoch = epoch;
	keep_walk(sh, w, 0, complete);
	w->out_walk->rooted = 1;
	return out;
}

/* Entered by a jump from hs_fast_entry, so that this function's own return
 * address sits in slot: the caller's frame is where the walk begins. */
int hs_fast_walk(uintptr_t *ips, int max, const struct code_range *self,
		 struct unwind_walk *out, uintptr_t slot, uintptr_t fp);
__attribute__((visibility("hidden"), used)) int
hs_fast_walk(uintptr_t *ips, int max, const struct code_range *self,
	     struct unwind_walk *out, uintptr_t slot, uintptr_t fp)
{
	struct shadow *sh = shadow;
	if (unlikely(sh <= SHADOW_GONE) &&
	    (sh == SHADOW_GONE || !(sh = shadow_create())))
		return -1;
	out->key = 0;
	out->prior = sh->n ? sh->serial : 0;
	out->shared = out->rooted = 0;
	sh->st.captures++;
	if (unlikely(!sh->hi) && !sh->bad)
		shadow_bounds(sh);
	if (sh->bad || !sh->hi || slot < sh->lo || slot > sh->hi - 8 || max <= 0) {
		sh->st.fallbacks++;
		return -1;
	}
	struct walk w;
	w.lo = slot;
	w.span = sh->hi - 8 - slot;
	w.self_lo = self->lo;
	w.self_hi = self->hi;
	w.out_walk = out;
	w.ips = ips;
	w.max = max;
	w.out = w.n = w.dropped = 0;
	w.epoch = 0;
	w.i = sh->n - 1;
	w.ok = w.rk = 0;
	w.bad = sh->n;
	skip_own(sh, w.span, &slot, &fp);
	int n = recall(sh, &w, slot, fp);
	if (n < 0)
		n = walk_from(sh, &w, slot, fp);
	if (n < 0) {
		sh->n = 0;
		sh->st.fallbacks++;
	} else if (n < max && out->rooted) {
		remember(sh, &w); /* not cut short: the whole stack */
	}
	out->kept = sh->n ? sh->serial : 0;
	return n;
}

/* Notes RSP (the address of the return address) and RBP exactly as the
 * caller left them, then continues in C. */
__asm__(".text\n"
	".globl hs_fast_entry\n"
	".hidden hs_fast_entry\n"
	".type hs_fast_entry, @function\n"
	"hs_fast_entry:\n"
	".cfi_startproc\n"
	"	movq %rsp, %r8\n"
	"	movq %rbp, %r9\n"
	"	jmp hs_fast_walk\n"
	".cfi_endproc\n"
	".size hs_fast_entry, .-hs_fast_entry\n");

int hs_fast_entry(uintptr_t *ips, int max, const struct code_range *self,
		  struct unwind_walk *walk);

int unwind_fast_capture(uintptr_t *ips, int max, const struct code_range *self,
			struct unwind_walk *walk)
{
	return hs_fast_entry(ips, max, self, walk);
}

#else

int unwind_fast_capture(uintptr_t *ips, int max, const struct code_range *self,
			struct unwind_walk *walk)
{
	(void)ips, (void)max, (void)self, (void)walk;
	return -1;
}

#endif
