/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* The network allowlist of `sandbox.net: {"allow": [...], "deny": [...]}`
 * (docs/network.md): its host patterns parsed, and the pure functions that
 * decide whether a proxied connection may go ahead. Nothing here resolves a
 * name or opens a socket. */

#define NETALLOW_MAX_PATTERNS 256 /* per list */
#define NETALLOW_HOST_MAX     253 /* bytes of a name, without a trailing dot */
/* "[" IPv6 "/128]:65535" and the longest name with ":65535" both fit */
#define NETALLOW_PATTERN_MAX (NETALLOW_HOST_MAX + 8)

enum netallow_kind {
	NETALLOW_NAME, /* registry.npmjs.org: that name */
	NETALLOW_SUFFIX, /* *.debian.org: names below debian.org, not it */
	NETALLOW_RANGE, /* 192.0.2.7, 10.0.0.0/8, [fd00::/8]: addresses */
};

struct netallow_pattern {
	enum netallow_kind kind;
	char host[NETALLOW_HOST_MAX + 1]; /* NAME, SUFFIX (without "*."): lower case */
	int family; /* RANGE: AF_INET or AF_INET6 */
	uint8_t addr[16]; /* RANGE: network byte order, host bits zero */
	unsigned prefix; /* RANGE: bits */
	uint16_t port; /* 0: ports 80 and 443 in allow, every port in deny */
};

/* Parses one pattern (HOST, *.DOMAIN, IPv4, [IPv6], either with /BITS, each
 * with an optional :PORT). Refuses with a message naming what is wrong. */
int netallow_pattern_parse(const char *s, struct netallow_pattern *ret, struct error *err);
/* The pattern's canonical spelling (lower case, no leading zeros): what the
 * policy keeps, the receipt records and widening compares; it parses to
 * the same pattern. Returns the length, or -ENOSPC. */
int netallow_pattern_format(const struct netallow_pattern *p, char *buf, size_t size);

/* What a client asked to reach: a name or an address literal. */
struct netallow_request {
	bool is_addr;
	char host[NETALLOW_HOST_MAX + 1]; /* lower case, trailing dot dropped */
	int family;
	uint8_t addr[16];
	uint16_t port;
};

/* host as a client wrote it (CONNECT's authority or a URL's host, an IPv6
 * literal with or without brackets). -EINVAL for what is neither a valid
 * name nor a literal (inet_aton spellings such as 0x7f.1 included). */
int netallow_request_parse(const char *host, uint16_t port, struct netallow_request *ret);

struct netallow {
	struct netallow_pattern *allow, *deny;
	size_t n_allow, n_deny;
};

/* Parses both lists; an error names the list and index ("allow[2]"). */
int netallow_compile(char *const *allow, char *const *deny, struct netallow *ret, struct error *err);
void netallow_release(struct netallow *n);

enum netallow_verdict {
	NETALLOW_ALLOWED,
	NETALLOW_DENIED, /* a deny pattern matched: rule net_deny */
	NETALLOW_NOT_ALLOWED, /* no allow pattern matched: rule net_not_allowed */
};

/* Deny wins over allow whatever their order; else the first allow pattern
 * that matches. *ret_index is the deciding pattern's index in its list
 * (unset for NOT_ALLOWED). A literal matches only RANGE patterns, a name
 * only NAME and SUFFIX ones. */
enum netallow_verdict netallow_match(const struct netallow *n, const struct netallow_request *req,
				     size_t *ret_index);

enum netallow_class {
	NETALLOW_PUBLIC,
	NETALLOW_LOOPBACK, /* 127/8, ::1 */
	NETALLOW_LINK_LOCAL, /* 169.254/16 (the metadata endpoint), fe80::/10 */
	NETALLOW_PRIVATE, /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10 */
	NETALLOW_SPECIAL, /* unspecified, 0/8, multicast, broadcast, 240/4, Teredo, ... */
};

/* The class of an address; IPv4 inside IPv6 (mapped, compatible, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) is classed as the IPv4 address. */
enum netallow_class netallow_address_class(int family, const uint8_t *addr);
const char *netallow_class_name(enum netallow_class c);

/* Whether an allowed name may be connected to at this resolved address: a
 * public one may, unless a deny range holds it; any other only when an
 * allow range (with a matching port) holds it and no deny range does. */
bool netallow_address_allowed(const struct netallow *n, int family, const uint8_t *addr, uint16_t port);
