/* SPDX-License-Identifier: MIT */
#pragma once

#include "core/net/netdecide.h"
#include "core/policy/netallow.h"

/* One client connection of the allowlist proxy, handled to its end
 * (docs/network.md): the head read under a deadline, the request checked
 * by name, the name resolved on this side and the addresses checked, the
 * upstream connected, and for CONNECT the ClientHello's SNI checked before
 * a byte of it is forwarded; then the tunnel. A plain http:// request goes
 * upstream with its head rewritten (nethead_rewrite()), one request per
 * connection. Blocking: meant for a thread of its own (the proxy process
 * is not built yet). */

struct netproxy_limits {
	int head_ms; /* to read the whole head, and the ClientHello */
	int connect_ms; /* to connect upstream */
	int idle_ms; /* a tunnel with no byte either way this long is closed */
	unsigned max_connections; /* netproxy_serve(): at once; 0: NETPROXY_MAX_CONNECTIONS */
};

/* client_fd stays open (the caller closes it); rec is filled for the
 * receipt. start_ns: the run's start, CLOCK_MONOTONIC. */
void netproxy_handle(int client_fd, const struct netallow *n, const struct netproxy_limits *lim,
		     uint64_t start_ns, struct netconn_record *rec);

#define NETPROXY_MAX_CONNECTIONS 1024 /* at once; more are closed at accept */

/* The proxy's accept loop: each connection on listen_fd handled by
 * netproxy_handle() in a thread of its own (small stack), at most
 * lim->max_connections at once (one more is closed at once and recorded
 * with rule net_too_many), so slow clients hold threads, never the loop; each finished connection written to record_fd
 * as one JSON line (netconn_record_json()). Returns when stop_fd becomes
 * readable (or listen_fd fails), after the connections in flight ended:
 * on stop, each ends at once (its waits watch stop_fd too) and writes its
 * record with the bytes so far; first the line {"accepted": N}, how many
 * connections were taken. Out of descriptors at accept(2), the listener
 * is left out of the poll for 100 ms. */
int netproxy_serve(int listen_fd, int stop_fd, int record_fd, const struct netallow *n,
		   const struct netproxy_limits *lim, uint64_t start_ns);

/* The proxy process's descriptors, as the supervisor hands them over. */
struct netproxy_fds {
	int config; /* read: {"allow": [...], "deny": [...]} (netproxy_config_json()), then EOF */
	int listen; /* the listening socket made in the quarantine's namespace; -1: from listen_from */
	/* listen < 0: a Unix socket the listening socket arrives on (SCM_RIGHTS)
	 * once the quarantine's init made it; EOF first (the run never
	 * started): netproxy_main returns 0 */
	int listen_from;
	int stop; /* readable (or closed by the writer): stop */
	int records; /* write: one JSON line per connection */
};

/* The hidden `airlock __netproxy PARENT START_NS` (src/cli/cmd_netproxy.c)
 * finds its descriptors at these numbers, and nothing else open above
 * stderr; its stdin and stdout are /dev/null, stderr the run's airlock's. */
#define NETPROXY_FD_CONFIG	3
#define NETPROXY_FD_LISTEN_FROM 4
#define NETPROXY_FD_STOP	5
#define NETPROXY_FD_RECORDS	6

/* The document the supervisor writes on fds.config; NULL if out of memory. */
char *netproxy_config_json(char *const *allow, char *const *deny);

/* The proxy process's body: reads its allowlist, takes its listener, and
 * once a connection waits on it (or it fails) loads its libraries,
 * confines itself (netconfine_apply()) and serves until told to stop,
 * with its descriptor limit raised to the hard limit and connections at
 * once bounded by it; the capability bounding set is dropped first of
 * all (netconfine_bounding()); told
 * to stop before any connection, it returns 0 having loaded nothing and
 * read no client's byte. parent: the supervisor.
 * Returns 0, or a negative errno with err set (the caller exits). */
int netproxy_main(const struct netproxy_fds *fds, pid_t parent, uint64_t start_ns, struct error *err);
