/* SPDX-License-Identifier: MIT */
/* Property: netallow_pattern_parse() and netallow_request_parse() never
 * crash on any input; an accepted pattern's canonical spelling parses to
 * the same pattern, and a name pattern allows its own host (on its port,
 * or 443) while a deny list of it refuses that host on every port. Input:
 * pattern, NUL, request host. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy/netallow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	const char *pattern = buf;
	const char *host = buf + strlen(buf) + 1;
	if (host > buf + size)
		host = "";

	struct netallow_pattern p, again;
	struct netallow_request req;
	struct error err = { 0 };
	char canon[NETALLOW_PATTERN_MAX + 1];
	(void)netallow_request_parse(host, 443, &req);
	if (netallow_pattern_parse(pattern, &p, &err) == 0) {
		if (netallow_pattern_format(&p, canon, sizeof(canon)) <= 0 ||
		    netallow_pattern_parse(canon, &again, &err) != 0 ||
		    memcmp(&p, &again, sizeof(p)) != 0)
			abort();
		struct netallow n = { .allow = &p, .n_allow = 1 };
		uint16_t port = p.port ? p.port : 443;
		size_t idx;
		if (p.kind == NETALLOW_NAME) {
			if (netallow_request_parse(p.host, port, &req) != 0 ||
			    netallow_match(&n, &req, &idx) != NETALLOW_ALLOWED)
				abort();
			struct netallow d = { .deny = &p, .n_deny = 1, .allow = &p, .n_allow = 1 };
			if (!p.port && (netallow_request_parse(p.host, 1, &req) != 0 ||
					netallow_match(&d, &req, &idx) != NETALLOW_DENIED))
				abort();
		}
		if (netallow_request_parse(host, port, &req) == 0)
			(void)netallow_match(&n, &req, &idx);
		if (p.kind == NETALLOW_RANGE)
			(void)netallow_address_allowed(&n, p.family, p.addr, port);
	} else if (!err.msg[0]) {
		abort();
	}
	free(buf);
	return 0;
}
