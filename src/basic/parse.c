/* SPDX-License-Identifier: MIT */
#include "basic/parse.h"

#include <errno.h>
#include <string.h>

#include "basic/macro.h"

/* Reads decimal digits into *ret; returns the number consumed or -ERANGE. */
static int parse_digits(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	int n = 0;

	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned d = (unsigned)(s[n] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return n;
}

int parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v;

	if (!s || !*s)
		return -EINVAL;
	int n = parse_digits(s, &v);
	if (n < 0)
		return n;
	if (n == 0 || s[n] != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_int(const char *s, int min, int max, int *ret)
{
	bool negative = false;
	uint64_t v;

	if (!s)
		return -EINVAL;
	if (*s == '-') {
		negative = true;
		s++;
	}
	int r = parse_u64(s, &v);
	if (r < 0)
		return r;
	if (v > (uint64_t)INT32_MAX + 1)
		return -ERANGE;
	int64_t signed_v = negative ? -(int64_t)v : (int64_t)v;
	if (signed_v < min || signed_v > max)
		return -ERANGE;
	*ret = (int)signed_v;
	return 0;
}

struct unit {
	const char *suffix;
	uint64_t factor;
};

/* Parses "<digits>[.<digits>]<suffix>" where suffix is from units (the
 * empty suffix meaning default_factor); the fraction is scaled by the
 * factor and truncated. */
static int parse_scaled(const char *s, const struct unit *units, size_t n_units,
			uint64_t default_factor, uint64_t *ret)
{
	uint64_t whole, frac = 0, frac_scale = 1;

	if (!s || !*s)
		return -EINVAL;
	int n = parse_digits(s, &whole);
	if (n < 0)
		return n;
	if (n == 0)
		return -EINVAL;
	s += n;
	if (*s == '.') {
		s++;
		int m = 0;
		for (; s[m] >= '0' && s[m] <= '9'; m++) {
			if (frac_scale >= 1000000000ULL)
				continue; /* ignore precision below 1e-9 */
			frac = frac * 10 + (uint64_t)(s[m] - '0');
			frac_scale *= 10;
		}
		if (m == 0)
			return -EINVAL;
		s += m;
	}

	uint64_t factor = 0;
	if (*s == '\0') {
		factor = default_factor;
	} else {
		for (size_t i = 0; i < n_units; i++)
			if (strcmp(s, units[i].suffix) == 0)
				factor = units[i].factor;
	}
	if (factor == 0)
		return -EINVAL;
	if (whole > UINT64_MAX / factor)
		return -ERANGE;
	uint64_t v = whole * factor;
	/* frac < 1e9 (30 bits) and every factor is below 2^32: no overflow */
	uint64_t extra = frac * factor / frac_scale;
	if (v > UINT64_MAX - extra)
		return -ERANGE;
	*ret = v + extra;
	return 0;
}

int parse_duration_ms(const char *s, uint64_t *ret_ms)
{
	static const struct unit units[] = {
		{ "ms", 1 },	      { "s", 1000 },	       { "m", 60 * 1000 },
		{ "min", 60 * 1000 }, { "h", 60 * 60 * 1000 }, { "d", 24 * 60 * 60 * 1000 },
	};
	return parse_scaled(s, units, ARRAY_SIZE(units), 1000, ret_ms);
}

int parse_size(const char *s, uint64_t *ret_bytes)
{
	static const struct unit units[] = {
		{ "B", 1 },
		{ "K", 1ULL << 10 },
		{ "KiB", 1ULL << 10 },
		{ "M", 1ULL << 20 },
		{ "MiB", 1ULL << 20 },
		{ "G", 1ULL << 30 },
		{ "GiB", 1ULL << 30 },
	};
	return parse_scaled(s, units, ARRAY_SIZE(units), 1, ret_bytes);
}
