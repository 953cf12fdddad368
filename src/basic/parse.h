/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Strict parsers for values a user typed: the whole string must be consumed,
 * no sign unless allowed, no overflow. All return 0 or -EINVAL/-ERANGE and
 * write *ret only on success. Nobody else calls strtol(). */
int parse_u64(const char *s, uint64_t *ret);
int parse_int(const char *s, int min, int max, int *ret);

/* "30s", "500ms", "2m", "1h", "1.5s", or a bare number of seconds. */
int parse_duration_ms(const char *s, uint64_t *ret_ms);

/* "4096", "8K", "8KiB", "16M", "1G" (binary multiples). */
int parse_size(const char *s, uint64_t *ret_bytes);
