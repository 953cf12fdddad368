/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* All durations in airlock are uint64_t milliseconds or nanoseconds, named so. */
uint64_t clock_monotonic_ns(void);
uint64_t clock_realtime_ns(void);
/* The clock file systems stamp ctime and mtime with (one tick behind the
 * realtime clock at most): a file changed after this call has a ctime at or
 * after its value. */
uint64_t clock_realtime_coarse_ns(void);

/* This boot's id, the bytes of /proc/sys/kernel/random/boot_id as read
 * (its newline included), zero-padded; all zero when it cannot be read.
 * Read once a process. */
void clock_boot_id(char ret[40]);

/* Formats a realtime timestamp as RFC 3339 UTC with milliseconds,
 * "2026-11-30T01:16:23.123Z". buf must hold 25 bytes. */
void clock_format_rfc3339(uint64_t realtime_ns, char *buf, size_t size);
