/* Whether the process that writes a trace is still running on this
 * machine: a trace without its END record is then still being written,
 * not the remains of a killed process. */
#ifndef HS_WRITER_ALIVE_H
#define HS_WRITER_ALIVE_H

#include <stdint.h>

struct hs_header;

/* 1 if the header's pid names a running process that was started no
 * later than the recording (not a later process reusing the pid, not a
 * zombie), by the realtime clock and by the monotonic one (a virtual
 * machine restored from a snapshot may have either jump), else 0; 0 too
 * when /proc cannot tell. */
int writer_alive(const struct hs_header *h);
/* The same from the pid and the recording's start (ns since the epoch,
 * and CLOCK_MONOTONIC's reading; 0: unknown). */
int writer_alive_at(uint64_t pid, uint64_t start_realtime_ns,
		    uint64_t start_monotonic_ns);

#endif
