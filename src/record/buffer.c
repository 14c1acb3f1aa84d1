/* The records being filled, before compression: a double buffer.
 * Appenders fill the active one under the lock; a full one is handed to
 * the writer thread (pending), which compresses it while the other
 * fills.  Allocating threads only copy bytes. */
#include <string.h>

#include "../base/rmem.h"
#include "internal.h"

static struct {
	uint8_t *buf[2];
	size_t cap, len, pending_len;
	int active, pending;
	uint64_t last_flush_ns; /* when a buffer was last written out */
	hs_wakeup space;         /* the pending buffer was written */
} B;

int buffer_create(void)
{
	/* resident before the first sample: filling them is not the
	 * program's growth */
	B.cap = BUFFER_SIZE;
	B.buf[0] = rmem_map_later(BUFFER_ROOM);
	B.buf[1] = rmem_map_later(BUFFER_ROOM);
	return B.buf[0] && B.buf[1] ? 0 : -1;
}

void buffer_start(void)
{
	uint8_t *p = B.buf[B.active];
	B.len = (size_t)(enc_timerec(&hs_rec.enc, p, 0) - p);
	B.last_flush_ns = 0;
}

void buffer_reset(void)
{
	write_chunk_forget();
	B.pending = 0;
	B.len = 0;
	enc_reset(&hs_rec.enc);
}

/* Lock held.  Hands the active buffer to the writer, which must be idle. */
static void swap(void)
{
	B.pending = 1;
	B.pending_len = B.len;
	B.active ^= 1;
	B.len = 0;
	enc_reset(&hs_rec.enc);
	/* every chunk starts with the time, so it decodes on its own */
	uint8_t *p = enc_timerec(&hs_rec.enc, B.buf[B.active], now_ns());
	B.len = (size_t)(p - B.buf[B.active]);
	writer_wake(0);
}

uint8_t *buffer_reserve(size_t n)
{
	if (B.len + n <= B.cap)
		return B.buf[B.active] + B.len;
	if (n + 64 > B.cap) {
		hs_fail("record larger than the buffer", 0);
		return NULL;
	}
	if (B.pending && getpid() != hs_rec.pid) {
		/* a child made without fork()'s handlers, where MADV_WIPEONFORK
		 * did not stop it: it has no writer to wait for */
		hs_live->on = 0;
		return NULL;
	}
	while (B.pending && hs_live->on) {
		int self = hs_tid();
		/* the writer itself (a tick, sample or module record): only it
		 * would end the wait, so it writes the pending buffer now */
		if (writer_self(self)) {
			if (writer_write_pending())
				return NULL;
			continue;
		}
		rwakeup_wait(&B.space, &hs_rec.lock, self, 0);
	}
	if (!hs_live->on)
		return NULL;
	swap();
	return B.buf[B.active] + B.len;
}

void buffer_commit(uint8_t *end)
{
	B.len = (size_t)(end - B.buf[B.active]);
}

int buffer_wait_idle(void)
{
	if (B.pending && !writer_running()) {
		if (write_chunk(B.buf[!B.active], B.pending_len))
			return -1;
		B.pending = 0;
	}
	while (B.pending && !hs_rec.failed)
		rwakeup_wait(&B.space, &hs_rec.lock, hs_tid(), 0);
	return hs_rec.failed ? -1 : 0;
}

int buffer_flush(const uint8_t *extra, size_t n)
{
	if (buffer_wait_idle())
		return -1;
	if (write_chunk(B.buf[B.active], B.len))
		return -1;
	B.len = 0;
	if (extra && n) {
		/* a chunk of its own (the end record): `record` reads it
		 * back without decoding the last events */
		memcpy(B.buf[B.active], extra, n);
		if (write_chunk(B.buf[B.active], n))
			return -1;
	}
	enc_reset(&hs_rec.enc);
	B.last_flush_ns = now_ns();
	return 0;
}

void buffer_drain(void)
{
	if (B.pending && write_chunk(B.buf[!B.active], B.pending_len) == 0)
		B.pending = 0;
	if (!B.pending && B.len && write_chunk(B.buf[B.active], B.len) == 0)
		B.len = 0;
}

int buffer_pending(uint8_t **src, size_t *n)
{
	*src = B.buf[!B.active];
	*n = B.pending_len;
	return B.pending;
}

void buffer_written(void)
{
	B.pending = 0;
	B.last_flush_ns = now_ns();
	wakeup_signal(&B.space, 1);
}

void buffer_flush_due(uint64_t t, uint64_t age)
{
	if (!B.pending && B.len && t - B.last_flush_ns >= age && hs_live->on)
		swap();
}

void buffer_unblock(void)
{
	wakeup_signal(&B.space, 1);
}
