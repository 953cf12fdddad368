/* SPDX-License-Identifier: MIT */
#include "basic/clock.h"

#include <stdio.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t clock_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t clock_realtime_coarse_ns(void)
{
	return clock_ns(CLOCK_REALTIME_COARSE);
}

void clock_format_rfc3339(uint64_t realtime_ns, char *buf, size_t size)
{
	time_t secs = (time_t)(realtime_ns / 1000000000ULL);
	unsigned ms = (unsigned)(realtime_ns / 1000000ULL % 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}
