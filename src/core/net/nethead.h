/* SPDX-License-Identifier: MIT */
#pragma once

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* The head of a request a client sends the allowlist proxy
 * (docs/network.md, "HTTP handling"): CONNECT host:port, or an
 * absolute-form http:// request. Parsed by libhttp-parser, which is loaded
 * with dlopen() on first use (only the proxy needs it); fed incrementally,
 * so a client that sends its head a byte at a time costs one pass. Nothing
 * here touches a socket. */

#define NETHEAD_MAX	    65536 /* bytes of a request head; more is refused (431) */
#define NETHEAD_MAX_HEADERS 128 /* more is refused (431) */

struct nethead_header {
	size_t field_off, field_len, value_off, value_len; /* into buf */
};

struct nethead {
	http_parser parser;
	char buf[NETHEAD_MAX];
	size_t len; /* bytes fed */
	size_t head_len; /* when complete: bytes of the head, body or tunnel after */
	bool complete;
	bool failed;
	/* where the parser's callbacks found things, as offsets into buf */
	size_t url_off, url_len;
	size_t field_off, field_len; /* the header name being read */
	bool in_value; /* the last callback was a header value */
	bool field_is_host;
	size_t host_off, host_len;
	unsigned n_host; /* Host headers seen */
	struct nethead_header headers[NETHEAD_MAX_HEADERS];
	size_t n_headers;
};

/* What a complete head asks for. host points into nethead's buf copy
 * (NUL-terminated copies below). */
struct nethead_request {
	bool is_connect;
	char method[24];
	char host[256]; /* as written: a name or an address (IPv6 without brackets) */
	uint16_t port;
	char origin[4096]; /* for a plain request: path and query, "/" if none */
	bool has_host_header;
	char host_header[256];
};

/* Whether libhttp-parser can be loaded; an error says why not. */
int nethead_load(struct error *err);

void nethead_init(struct nethead *h);
/* Feeds n more bytes. Returns 0 when the head is complete (see head_len; a
 * head is complete once, bytes fed after it are kept but not parsed),
 * -EAGAIN when it needs more, -E2BIG when it outgrew NETHEAD_MAX (431),
 * -EINVAL when it is not HTTP (400); err says which. */
int nethead_feed(struct nethead *h, const char *data, size_t n, struct error *err);
/* The request of a complete head: CONNECT's authority-form target, or an
 * absolute-form http:// URL (a proxy is never asked for its own origin
 * form); its port, 80 for http:// without one. Refuses (-EINVAL, err) a
 * target of another form or scheme, one with user information, two Host
 * headers, and a plain request whose Host header names another
 * authority than its URL. On a refusal *ret still holds what parsed before
 * it (zeroed otherwise): the method, and once the target parsed its host,
 * and its port when the target names one (80 for http:// without one), so
 * a refused request can be recorded by its URL's authority. */
int nethead_request(const struct nethead *h, struct nethead_request *ret, struct error *err);

/* A plain request's head as the proxy sends it upstream: the request line
 * in origin form, every header but the hop-by-hop ones (Connection,
 * Keep-Alive, Proxy-Connection, Proxy-Authorization, TE, Upgrade), then
 * "Connection: close". Refuses (-EINVAL) a header value that spans lines
 * (obsolete folding). *ret is malloc()ed, not NUL-terminated. */
int nethead_rewrite(const struct nethead *h, const struct nethead_request *req, char **ret,
		    size_t *ret_len, struct error *err);
