/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/net/nethead.h"
#include "core/policy/netallow.h"

/* What the allowlist proxy decides about one connection, and what the
 * receipt records of it (docs/network.md, "The receipt"): pure functions,
 * no socket, no resolver. The proxy's steps: the head's request is checked
 * by name (netdecide_request), the name resolved on the host side, the
 * addresses checked (netdecide_address), a CONNECT's SNI compared
 * (netdecide_sni); each refusal names its rule. */

struct netdecision {
	bool allowed;
	const char *rule; /* static: "allow", "net_deny", "net_not_allowed", "net_address", "net_sni", "net_bad_request" */
	char pattern[NETALLOW_PATTERN_MAX + 1]; /* the deciding pattern, canonical; "" if none */
	int status; /* HTTP status for the client when refused: 403, 400 */
	char message[512]; /* one line for the client and the receipt */
	char address[64]; /* net_address: the first address refused (inet_ntop); "" if none */
};

/* By name (or literal) and port: deny over allow, else the first allow. */
void netdecide_request(const struct netallow *n, const struct nethead_request *req,
		       struct netdecision *ret);

/* The first resolved address that may be connected to (unwrapped to its
 * sockaddr in *ret_addr), in the resolver's order; refused (net_address,
 * naming the first address refused and its class, that address in
 * ret->address) when none may. */
bool netdecide_address(const struct netallow *n, const struct nethead_request *req,
		       const struct addrinfo *list, struct sockaddr_storage *ret_addr,
		       struct netdecision *ret);

/* A CONNECT's tunnel: the ClientHello's SNI must name the CONNECT host
 * (case-insensitive, one trailing dot dropped); a CONNECT to an address
 * literal needs none. sni: NULL when the first bytes were not a
 * ClientHello (or hid the name). */
void netdecide_sni(const struct nethead_request *req, const char *sni, struct netdecision *ret);

/* One connection as the receipt lists it. */
struct netconn_record {
	char host[256];
	uint16_t port;
	char method[24];
	char address[64]; /* the address connected to, or refused (net_address); "" if none */
	char sni[256]; /* "" if none or not a tunnel */
	bool allowed;
	const char *rule;
	char pattern[NETALLOW_PATTERN_MAX + 1];
	uint64_t bytes_out, bytes_in;
	uint64_t start_ms, duration_ms; /* since the run's start */
};

/* The receipt's object for one connection (docs/network.md); NULL when out
 * of memory or a string is not UTF-8 (the proxy records only what
 * netallow_request_parse() accepted, or an escaped form). */
json_t *netconn_record_json(const struct netconn_record *r);

/* What the allowlist refused, from a receipt's sandbox.network object, for
 * the gate's message and `airlock show`: one line per distinct host and
 * port refused by the policy (rules net_not_allowed, net_deny,
 * net_address, net_sni), at most max lines, the first refused first:
 *   denied by net policy: evil.example:443 (no allow rule); allow it in .airlock/policy.json sandbox.net.allow
 * and "... and N more" after them. NULL when there is none (or out of
 * memory); heap. */
char *netdecide_denied_text(const json_t *network, size_t max);
