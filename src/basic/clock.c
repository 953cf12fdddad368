/* SPDX-License-Identifier: MIT */
#include "basic/clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The proleptic Gregorian date of a day counted from 1970-01-01 (days
 * since the epoch are never negative here: realtime_ns is unsigned). The
 * arithmetic of gmtime_r(), which is not called: glibc's loads
 * /etc/localtime on its first call, seven system calls a run does not need. */
static void clock_civil(uint64_t days, unsigned *ret_y, unsigned *ret_m, unsigned *ret_d)
{
	uint64_t z = days + 719468; /* days since 0000-03-01 */
	uint64_t era = z / 146097;
	unsigned doe = (unsigned)(z - era * 146097); /* [0, 146096] */
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* [0, 365] */
	unsigned mp = (5 * doy + 2) / 153; /* [0, 11], from March */
	unsigned m = mp < 10 ? mp + 3 : mp - 9;

	*ret_d = doy - (153 * mp + 2) / 5 + 1;
	*ret_m = m;
	*ret_y = (unsigned)(yoe + era * 400) + (m <= 2);
}

/* The boot id once read: clock_boot_state 2 when clock_boot holds it.
 * The first caller to finish reading stores it; a caller that finds it
 * not stored yet reads the file itself (no lock, no futex). */
static char clock_boot[40];
static atomic_int clock_boot_state;

void clock_boot_id(char ret[40])
{
	/* Read once a process: the id cannot change while it lives. */
	if (atomic_load_explicit(&clock_boot_state, memory_order_acquire) == 2) {
		memcpy(ret, clock_boot, sizeof(clock_boot));
		return;
	}
	char boot[40] = { 0 };
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, boot, sizeof(boot) - 1) < 0)
			memset(boot, 0, sizeof(boot));
		close(fd);
	}
	memcpy(ret, boot, sizeof(boot));
	int expected = 0;
	if (boot[0] && atomic_compare_exchange_strong(&clock_boot_state, &expected, 1)) {
		memcpy(clock_boot, boot, sizeof(boot));
		atomic_store_explicit(&clock_boot_state, 2, memory_order_release);
	}
}

void clock_format_rfc3339(uint64_t realtime_ns, char *buf, size_t size)
{
	uint64_t secs = realtime_ns / 1000000000ULL;
	unsigned ms = (unsigned)(realtime_ns / 1000000ULL % 1000);
	unsigned y, mo, d;
	unsigned sod = (unsigned)(secs % 86400);

	clock_civil(secs / 86400, &y, &mo, &d);
	snprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", y, mo, d, sod / 3600,
		 sod / 60 % 60, sod % 60, ms);
}
