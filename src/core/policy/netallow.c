/* SPDX-License-Identifier: MIT */
#include "core/policy/netallow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"

static bool netallow_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool netallow_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char netallow_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* A host name of LDH labels (RFC 1123), at least two of them, the last
 * starting with a letter: so that no name is also an inet_aton spelling of
 * an address (2130706433, 0x7f.1, 1.2.3) that the resolver would take as
 * one. Copies it lower-cased into out. */
static bool netallow_name_parse(const char *s, size_t len, char out[NETALLOW_HOST_MAX + 1])
{
	size_t labels = 0, label_start = 0;

	if (len == 0 || len > NETALLOW_HOST_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			char c = s[i];
			if (!netallow_is_alpha(c) && !netallow_is_digit(c) && c != '-')
				return false;
			out[i] = netallow_lower(c);
			continue;
		}
		size_t n = i - label_start;
		if (n == 0 || n > 63 || s[label_start] == '-' || s[i - 1] == '-')
			return false;
		labels++;
		if (i == len && !netallow_is_alpha(s[label_start]))
			return false;
		if (i < len)
			out[i] = '.';
		label_start = i + 1;
	}
	out[len] = '\0';
	return labels >= 2;
}

/* Decimal 1..65535, no sign, no leading zero. */
static bool netallow_port_parse(const char *s, uint16_t *ret)
{
	unsigned v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!netallow_is_digit(s[i]))
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*ret = (uint16_t)v;
	return true;
}

static bool netallow_host_bits_zero(const uint8_t *addr, size_t bytes, unsigned prefix)
{
	for (size_t bit = prefix; bit < bytes * 8; bit++)
		if (addr[bit / 8] & (0x80u >> (bit % 8)))
			return false;
	return true;
}

/* An address literal, with an optional /BITS when ranges are allowed. */
static bool netallow_literal_parse(const char *s, size_t len, bool v6, bool range,
				   struct netallow_pattern *p)
{
	char buf[64];
	const char *slash;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	p->family = v6 ? AF_INET6 : AF_INET;
	size_t bytes = v6 ? 16 : 4;
	p->prefix = (unsigned)bytes * 8;
	slash = strchr(buf, '/');
	if (slash) {
		const char *bits = slash + 1;
		unsigned v = 0;
		size_t n = strlen(bits);
		if (!range || n == 0 || n > 3 || (bits[0] == '0' && n > 1))
			return false;
		for (size_t i = 0; i < n; i++) {
			if (!netallow_is_digit(bits[i]))
				return false;
			v = v * 10 + (unsigned)(bits[i] - '0');
		}
		if (v > bytes * 8)
			return false;
		p->prefix = v;
		buf[slash - buf] = '\0';
	}
	memset(p->addr, 0, sizeof(p->addr));
	if (inet_pton(p->family, buf, p->addr) != 1)
		return false;
	return netallow_host_bits_zero(p->addr, bytes, p->prefix);
}

int netallow_pattern_parse(const char *s, struct netallow_pattern *ret, struct error *err)
{
	struct netallow_pattern p = { 0 };
	size_t len = strlen(s);
	const char *host = s, *port = NULL;
	size_t host_len = len;

	if (len == 0 || len > NETALLOW_PATTERN_MAX)
		return error_set(err, EINVAL, "an empty or over-long pattern");
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close)
			return error_set(err, EINVAL, "'%.80s': '[' without ']'", s);
		host = s + 1;
		host_len = (size_t)(close - host);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0')
			return error_set(err, EINVAL, "'%.80s': junk after ']'", s);
		if (!netallow_literal_parse(host, host_len, true, true, &p))
			return error_set(err, EINVAL, "'%.80s' is not an IPv6 address or range", s);
		p.kind = NETALLOW_RANGE;
	} else {
		const char *colon = strchr(s, ':');
		if (colon) {
			if (strchr(colon + 1, ':'))
				return error_set(err, EINVAL,
						 "'%.80s': an IPv6 address is written in brackets, [::1]",
						 s);
			host_len = (size_t)(colon - s);
			port = colon + 1;
		}
		bool literal = host_len > 0 && netallow_is_digit(s[host_len - 1]);
		if (literal) {
			/* The last label of a name starts with a letter, so a host
			 * ending in a digit can only be an address or a range. */
			if (!netallow_literal_parse(host, host_len, false, true, &p))
				return error_set(err, EINVAL,
						 "'%.80s' is neither a host name nor an IPv4 address or range (a.b.c.d, a.b.c.d/bits; host bits zero)",
						 s);
			p.kind = NETALLOW_RANGE;
		} else if (host_len >= 2 && s[0] == '*' && s[1] == '.') {
			if (!netallow_name_parse(s + 2, host_len - 2, p.host))
				return error_set(err, EINVAL,
						 "'%.80s': '*.' must be followed by a domain of at least two labels",
						 s);
			p.kind = NETALLOW_SUFFIX;
		} else {
			if (memchr(s, '*', host_len))
				return error_set(err, EINVAL,
						 "'%.80s': '*' is allowed only as a whole first label, '*.example.org'",
						 s);
			if (!netallow_name_parse(s, host_len, p.host))
				return error_set(err, EINVAL,
						 "'%.80s' is not a host name (letters, digits and '-' in dot-separated labels, at least two, the last starting with a letter)",
						 s);
			p.kind = NETALLOW_NAME;
		}
	}
	if (port && !netallow_port_parse(port, &p.port))
		return error_set(err, EINVAL, "'%.80s': the port must be 1..65535", s);
	*ret = p;
	return 0;
}

int netallow_pattern_format(const struct netallow_pattern *p, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN + 8];
	int n;

	switch (p->kind) {
	case NETALLOW_NAME:
		n = snprintf(buf, size, "%s", p->host);
		break;
	case NETALLOW_SUFFIX:
		n = snprintf(buf, size, "*.%s", p->host);
		break;
	case NETALLOW_RANGE:
	default: {
		char addr[INET6_ADDRSTRLEN];
		bool v6 = p->family == AF_INET6;
		if (!inet_ntop(p->family, p->addr, addr, sizeof(addr)))
			return -EINVAL;
		if (p->prefix != (v6 ? 128u : 32u))
			snprintf(host, sizeof(host), "%s%s/%u%s", v6 ? "[" : "", addr, p->prefix,
				 v6 ? "]" : "");
		else
			snprintf(host, sizeof(host), "%s%s%s", v6 ? "[" : "", addr, v6 ? "]" : "");
		n = snprintf(buf, size, "%s", host);
		break;
	}
	}
	if (n < 0 || (size_t)n >= size)
		return -ENOSPC;
	if (p->port) {
		int m = snprintf(buf + n, size - (size_t)n, ":%u", p->port);
		if (m < 0 || (size_t)m >= size - (size_t)n)
			return -ENOSPC;
		n += m;
	}
	return n;
}

int netallow_request_parse(const char *host, uint16_t port, struct netallow_request *ret)
{
	struct netallow_request r = { .port = port };
	size_t len = strlen(host);
	struct netallow_pattern lit;

	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || port == 0)
		return -EINVAL;
	if (host[0] == '[' || memchr(host, ':', len)) {
		const char *s = host;
		size_t n = len;
		if (host[0] == '[') {
			if (host[len - 1] != ']')
				return -EINVAL;
			s++;
			n -= 2;
		}
		if (memchr(s, '/', n) || !netallow_literal_parse(s, n, true, false, &lit))
			return -EINVAL;
		r.is_addr = true;
	} else if (netallow_is_digit(host[len - 1])) {
		if (memchr(host, '/', len) || !netallow_literal_parse(host, len, false, false, &lit))
			return -EINVAL;
		r.is_addr = true;
	} else if (!netallow_name_parse(host, len, r.host)) {
		return -EINVAL;
	}
	if (r.is_addr) {
		r.family = lit.family;
		memcpy(r.addr, lit.addr, sizeof(r.addr));
		if (!inet_ntop(r.family, r.addr, r.host, sizeof(r.host)))
			return -EINVAL;
	}
	*ret = r;
	return 0;
}

void netallow_release(struct netallow *n)
{
	free(n->allow);
	free(n->deny);
	*n = (struct netallow){ 0 };
}

static int netallow_compile_list(char *const *list, const char *name, struct netallow_pattern **ret,
				 size_t *ret_n, struct error *err)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	if (n > NETALLOW_MAX_PATTERNS)
		return error_set(err, E2BIG, "%s lists %zu patterns; at most %d", name, n,
				 NETALLOW_MAX_PATTERNS);
	struct netallow_pattern *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int r = netallow_pattern_parse(list[i], &v[i], err);
		if (r < 0) {
			free(v);
			return error_prefix(err, "%s[%zu]", name, i);
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int netallow_compile(char *const *allow, char *const *deny, struct netallow *ret, struct error *err)
{
	struct netallow n = { 0 };
	int r = netallow_compile_list(allow, "allow", &n.allow, &n.n_allow, err);

	if (r == 0)
		r = netallow_compile_list(deny, "deny", &n.deny, &n.n_deny, err);
	if (r < 0) {
		netallow_release(&n);
		return r;
	}
	*ret = n;
	return 0;
}

/* IPv4 inside IPv6 (mapped, compatible, NAT64, 6to4) as IPv4, so that a
 * range or class of the IPv4 address holds every spelling of it. */
static int netallow_unwrap(int family, const uint8_t *addr, uint8_t out[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t zeros[12] = { 0 };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };

	memset(out, 0, 16);
	if (family == AF_INET) {
		memcpy(out, addr, 4);
		return AF_INET;
	}
	bool compat = memcmp(addr, zeros, 12) == 0 &&
		      (addr[12] | addr[13] | addr[14] | (addr[15] & 0xfe)) != 0; /* not :: or ::1 */
	if (memcmp(addr, mapped, 12) == 0 || memcmp(addr, nat64, 12) == 0 || compat) {
		memcpy(out, addr + 12, 4);
		return AF_INET;
	}
	if (addr[0] == 0x20 && addr[1] == 0x02) {
		memcpy(out, addr + 2, 4);
		return AF_INET;
	}
	memcpy(out, addr, 16);
	return AF_INET6;
}

static bool netallow_in_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	size_t whole = prefix / 8;
	unsigned rest = prefix % 8;

	if (memcmp(a, net, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff00u >> rest);
	return (a[whole] & mask) == (net[whole] & mask);
}

/* A range holds an address when both unwrap to the same family and the
 * address lies in the prefix (an IPv4 range holds ::ffff:a.b.c.d too). */
static bool netallow_range_holds(const struct netallow_pattern *p, int family, const uint8_t *addr)
{
	uint8_t a[16], net[16];
	int fa = netallow_unwrap(family, addr, a);
	int fn = p->family;

	memset(net, 0, sizeof(net));
	memcpy(net, p->addr, fn == AF_INET ? 4 : 16);
	return p->kind == NETALLOW_RANGE && fa == fn && netallow_in_prefix(a, net, p->prefix);
}

/* Without a port, an allow pattern means the web's ports, a deny pattern
 * every port. */
static bool netallow_port_matches(const struct netallow_pattern *p, uint16_t port, bool deny)
{
	return p->port ? p->port == port : deny || port == 80 || port == 443;
}

static bool netallow_host_matches(const struct netallow_pattern *p, const struct netallow_request *r)
{
	if (r->is_addr)
		return netallow_range_holds(p, r->family, r->addr);
	if (p->kind == NETALLOW_NAME)
		return strcmp(p->host, r->host) == 0;
	if (p->kind != NETALLOW_SUFFIX)
		return false;
	size_t hl = strlen(r->host), sl = strlen(p->host);
	return hl > sl + 1 && r->host[hl - sl - 1] == '.' && strcmp(r->host + hl - sl, p->host) == 0;
}

static bool netallow_find(const struct netallow_pattern *v, size_t n, bool deny,
			  const struct netallow_request *r, size_t *ret_index)
{
	for (size_t i = 0; i < n; i++)
		if (netallow_port_matches(&v[i], r->port, deny) && netallow_host_matches(&v[i], r)) {
			*ret_index = i;
			return true;
		}
	return false;
}

enum netallow_verdict netallow_match(const struct netallow *n, const struct netallow_request *req,
				     size_t *ret_index)
{
	if (netallow_find(n->deny, n->n_deny, true, req, ret_index))
		return NETALLOW_DENIED;
	if (netallow_find(n->allow, n->n_allow, false, req, ret_index))
		return NETALLOW_ALLOWED;
	return NETALLOW_NOT_ALLOWED;
}

enum netallow_class netallow_address_class(int family, const uint8_t *addr)
{
	uint8_t a[16];

	if (netallow_unwrap(family, addr, a) == AF_INET) {
		if (a[0] == 127)
			return NETALLOW_LOOPBACK;
		if (a[0] == 169 && a[1] == 254)
			return NETALLOW_LINK_LOCAL;
		if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) ||
		    (a[0] == 192 && a[1] == 168) || (a[0] == 100 && (a[1] & 0xc0) == 64))
			return NETALLOW_PRIVATE;
		if (a[0] == 0 || a[0] >= 224 || (a[0] == 192 && a[1] == 0 && a[2] == 0) ||
		    (a[0] == 198 && (a[1] & 0xfe) == 18))
			return NETALLOW_SPECIAL; /* this network, multicast, 240/4, IETF, benchmarking */
		return NETALLOW_PUBLIC;
	}
	static const uint8_t loopback[16] = { [15] = 1 };
	static const uint8_t unspecified[16] = { 0 };
	if (memcmp(a, loopback, 16) == 0)
		return NETALLOW_LOOPBACK;
	if (memcmp(a, unspecified, 16) == 0)
		return NETALLOW_SPECIAL;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return NETALLOW_LINK_LOCAL;
	if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0))
		return NETALLOW_PRIVATE; /* unique local, site-local */
	if (a[0] == 0xff || (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) ||
	    (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b) || a[0] == 0 ||
	    (a[0] == 0x01 && a[1] == 0 && a[2] == 0 && a[3] == 0))
		return NETALLOW_SPECIAL; /* multicast, Teredo, local NAT64, ::/8, discard */
	return NETALLOW_PUBLIC;
}

const char *netallow_class_name(enum netallow_class c)
{
	static const char *const names[] = {
		[NETALLOW_PUBLIC] = "public",	      [NETALLOW_LOOPBACK] = "loopback",
		[NETALLOW_LINK_LOCAL] = "link-local", [NETALLOW_PRIVATE] = "private",
		[NETALLOW_SPECIAL] = "special",
	};
	return (size_t)c < ARRAY_SIZE(names) ? names[c] : "special";
}

static bool netallow_ranges_hold(const struct netallow_pattern *v, size_t n, int family,
				 const uint8_t *addr, const uint16_t *port)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == NETALLOW_RANGE &&
		    (!port || netallow_port_matches(&v[i], *port, false)) &&
		    netallow_range_holds(&v[i], family, addr))
			return true;
	return false;
}

bool netallow_address_allowed(const struct netallow *n, int family, const uint8_t *addr, uint16_t port)
{
	/* A deny range refuses the address on every port. */
	if (netallow_ranges_hold(n->deny, n->n_deny, family, addr, NULL))
		return false;
	if (netallow_address_class(family, addr) == NETALLOW_PUBLIC)
		return true;
	return netallow_ranges_hold(n->allow, n->n_allow, family, addr, &port);
}
