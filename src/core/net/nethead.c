/* SPDX-License-Identifier: MIT */
#include "core/net/nethead.h"
#include "basic/dynlib.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NETHEAD_LIBRARY "libhttp_parser.so.2.9"

/* libhttp-parser's functions, from dlopen(): headers only at build time. */
static struct {
	void (*init)(http_parser *parser, enum http_parser_type type);
	void (*settings_init)(http_parser_settings *settings);
	size_t (*execute)(http_parser *parser, const http_parser_settings *settings,
			  const char *data, size_t len);
	void (*url_init)(struct http_parser_url *u);
	int (*parse_url)(const char *buf, size_t buflen, int is_connect, struct http_parser_url *u);
	const char *(*method_str)(enum http_method m);
	const char *(*errno_name)(enum http_errno err);
	void (*pause)(http_parser *parser, int paused);
	unsigned long (*version)(void);
} hp;
/* Set once by nethead_lib_init(), under dynlib_load()'s lock; read-only after. */
static http_parser_settings nethead_settings;

static int nethead_on_url(http_parser *p, const char *at, size_t n);
static int nethead_on_field(http_parser *p, const char *at, size_t n);
static int nethead_on_value(http_parser *p, const char *at, size_t n);
static int nethead_on_headers_complete(http_parser *p);

/* Once every symbol is there: the struct layouts are the header's, so the
 * library must be its major.minor; the parser's settings are set here, once
 * (dynlib_load() holds its lock), and read-only after. */
static int nethead_lib_init(struct error *err)
{
	unsigned long v = hp.version();

	if ((v >> 8) != ((HTTP_PARSER_VERSION_MAJOR << 8) | HTTP_PARSER_VERSION_MINOR))
		return error_set(err, ENOPKG, "%s is version %lu.%lu, built against %d.%d",
				 NETHEAD_LIBRARY, (v >> 16) & 255, (v >> 8) & 255,
				 HTTP_PARSER_VERSION_MAJOR, HTTP_PARSER_VERSION_MINOR);
	hp.settings_init(&nethead_settings);
	nethead_settings.on_url = nethead_on_url;
	nethead_settings.on_header_field = nethead_on_field;
	nethead_settings.on_header_value = nethead_on_value;
	nethead_settings.on_headers_complete = nethead_on_headers_complete;
	return 0;
}

int nethead_load(struct error *err)
{
	static struct dynlib lib =
		DYNLIB_INIT("the HTTP parser (Debian libhttp-parser2.9)", nethead_lib_init);
	static const char *const sonames[] = { NETHEAD_LIBRARY, NULL };
	static const struct dynlib_symbol syms[] = {
		{ "http_parser_init", (void **)&hp.init },
		{ "http_parser_settings_init", (void **)&hp.settings_init },
		{ "http_parser_execute", (void **)&hp.execute },
		{ "http_parser_url_init", (void **)&hp.url_init },
		{ "http_parser_parse_url", (void **)&hp.parse_url },
		{ "http_method_str", (void **)&hp.method_str },
		{ "http_errno_name", (void **)&hp.errno_name },
		{ "http_parser_pause", (void **)&hp.pause },
		{ "http_parser_version", (void **)&hp.version },
		{ NULL, NULL },
	};

	return dynlib_load(&lib, sonames, syms, err);
}

void nethead_init(struct nethead *h)
{
	/* Not buf: 64 KiB that the length says nothing of is valid yet. */
	memset(h, 0, offsetof(struct nethead, buf));
	memset((char *)h + offsetof(struct nethead, len), 0,
	       sizeof(*h) - offsetof(struct nethead, len));
	hp.init(&h->parser, HTTP_REQUEST);
	h->parser.data = h;
}

static struct nethead *nethead_of(http_parser *p)
{
	return p->data;
}

/* The callbacks get pointers into the slice being fed, which is buf's: a
 * field split across feeds continues where it stopped. */
static int nethead_on_url(http_parser *p, const char *at, size_t n)
{
	struct nethead *h = nethead_of(p);

	if (h->url_len == 0)
		h->url_off = (size_t)(at - h->buf);
	h->url_len += n;
	return 0;
}

static int nethead_on_field(http_parser *p, const char *at, size_t n)
{
	struct nethead *h = nethead_of(p);

	if (h->in_value || h->field_len == 0) {
		if (h->n_headers == NETHEAD_MAX_HEADERS)
			return -1; /* too many: the parse fails */
		h->n_headers++;
		h->field_off = (size_t)(at - h->buf);
		h->field_len = 0;
		h->in_value = false;
	}
	h->field_len += n;
	struct nethead_header *hd = &h->headers[h->n_headers - 1];
	hd->field_off = h->field_off;
	hd->field_len = h->field_len;
	hd->value_off = (size_t)(at - h->buf) + n;
	hd->value_len = 0;
	return 0;
}

static int nethead_on_value(http_parser *p, const char *at, size_t n)
{
	struct nethead *h = nethead_of(p);

	if (!h->in_value) {
		h->in_value = true;
		h->field_is_host =
			h->field_len == 4 && strncasecmp(h->buf + h->field_off, "host", 4) == 0;
		if (h->field_is_host) {
			h->n_host++;
			h->host_off = (size_t)(at - h->buf);
			h->host_len = 0;
		}
	}
	if (h->field_is_host)
		h->host_len += n;
	struct nethead_header *hd = &h->headers[h->n_headers - 1];
	if (hd->value_len == 0)
		hd->value_off = (size_t)(at - h->buf);
	hd->value_len = (size_t)(at - h->buf) + n - hd->value_off;
	return 0;
}

/* The head ends here: the parser is paused, so a body or a tunnel's first
 * bytes stay unparsed (the proxy forwards them as they are). */
static int nethead_on_headers_complete(http_parser *p)
{
	struct nethead *h = nethead_of(p);

	h->complete = true;
	hp.pause(p, 1);
	return 0;
}

int nethead_feed(struct nethead *h, const char *data, size_t n, struct error *err)
{
	if (h->failed)
		return error_set(err, EINVAL, "the request head was refused already");
	if (h->complete) {
		size_t room = NETHEAD_MAX - h->len;
		memcpy(h->buf + h->len, data, n < room ? n : room);
		h->len += n < room ? n : room;
		return 0;
	}
	if (n > NETHEAD_MAX - h->len) {
		h->failed = true;
		return error_set(err, E2BIG, "the request head is over %d bytes", NETHEAD_MAX);
	}
	char *slice = h->buf + h->len;
	memcpy(slice, data, n);
	h->len += n;
	size_t parsed = hp.execute(&h->parser, &nethead_settings, slice, n);
	enum http_errno e = (enum http_errno)h->parser.http_errno;
	if (h->complete) {
		/* Paused in on_headers_complete, http-parser 2.9 stops at the
		 * head's last '\n', uncounted (RETURN(p - data)). */
		if (parsed >= n || slice[parsed] != '\n') {
			h->failed = true;
			return error_set(err, EINVAL,
					 "the request head's end is not where it should be");
		}
		h->head_len = (size_t)(slice - h->buf) + parsed + 1;
		return 0;
	}
	if (e != HPE_OK || parsed != n) {
		h->failed = true;
		return error_set(err, EINVAL, "not an HTTP request head (%s)", hp.errno_name(e));
	}
	if (h->len == NETHEAD_MAX) {
		h->failed = true;
		return error_set(err, E2BIG, "the request head is over %d bytes", NETHEAD_MAX);
	}
	return -EAGAIN;
}

static int nethead_copy(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size || memchr(src, '\0', n))
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* A plain request's Host header must name its URL's authority: host, or
 * host:port ([host]:port for IPv6), the port optional when it is 80. */
static bool nethead_host_header_matches(const struct nethead_request *r)
{
	char with_port[300], bare[280];
	bool v6 = strchr(r->host, ':') != NULL;

	snprintf(bare, sizeof(bare), v6 ? "[%s]" : "%s", r->host);
	snprintf(with_port, sizeof(with_port), "%s:%u", bare, r->port);
	return strcasecmp(r->host_header, with_port) == 0 ||
	       (r->port == 80 && strcasecmp(r->host_header, bare) == 0);
}

/* Fills *rp as far as the head parses (nethead_request()'s contract). */
static int nethead_request_parse(const struct nethead *h, struct nethead_request *rp, struct error *err)
{
	struct http_parser_url u;
	const char *url = h->buf + h->url_off;

	if (!h->complete)
		return error_set(err, EAGAIN, "the request head is not complete");
	rp->is_connect = h->parser.method == HTTP_CONNECT;
	snprintf(rp->method, sizeof(rp->method), "%s",
		 hp.method_str((enum http_method)h->parser.method));
	if (h->n_host > 1)
		return error_set(err, EINVAL, "the request has %u Host headers", h->n_host);
	if (h->n_host == 1) {
		if (nethead_copy(rp->host_header, sizeof(rp->host_header), h->buf + h->host_off,
				 h->host_len) < 0)
			return error_set(err, EINVAL, "the Host header is too long");
		rp->has_host_header = true;
	}
	hp.url_init(&u);
	if (h->url_len == 0 || hp.parse_url(url, h->url_len, rp->is_connect, &u) != 0)
		return error_set(err, EINVAL, "the request target '%.100s' does not parse",
				 h->url_len ? url : "");
	if (!(u.field_set & (1 << UF_HOST)))
		return error_set(err, EINVAL,
				 "the request target names no host: a proxy takes CONNECT host:port or http://host/...");
	if (u.field_set & (1 << UF_USERINFO))
		return error_set(err, EINVAL, "the request target carries user information");
	if (nethead_copy(rp->host, sizeof(rp->host), url + u.field_data[UF_HOST].off,
			 u.field_data[UF_HOST].len) < 0)
		return error_set(err, EINVAL, "the request's host is too long");
	if (u.field_set & (1 << UF_PORT))
		rp->port = u.port;
	if (rp->is_connect) {
		rp->port = u.port; /* http_parser_parse_url requires one for CONNECT */
	} else {
		const char *schema = url + u.field_data[UF_SCHEMA].off;
		if (!(u.field_set & (1 << UF_SCHEMA)) || u.field_data[UF_SCHEMA].len != 4 ||
		    strncasecmp(schema, "http", 4) != 0)
			return error_set(err, EINVAL,
					 "only http:// is proxied as a plain request; https goes through CONNECT");
		rp->port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
		if (rp->port == 0)
			return error_set(err, EINVAL, "the request's port is 0");
		size_t off = (u.field_set & (1 << UF_PATH))    ? (size_t)u.field_data[UF_PATH].off
			     : (u.field_set & (1 << UF_QUERY)) ? (size_t)u.field_data[UF_QUERY].off - 1
							       : h->url_len;
		size_t end = (u.field_set & (1 << UF_FRAGMENT))
				     ? (size_t)u.field_data[UF_FRAGMENT].off - 1
				     : h->url_len;
		int c = 0;
		if (off >= end)
			snprintf(rp->origin, sizeof(rp->origin), "/");
		else if (url[off] == '/')
			c = nethead_copy(rp->origin, sizeof(rp->origin), url + off, end - off);
		else if (url[off] == '?' && (rp->origin[0] = '/'))
			c = nethead_copy(rp->origin + 1, sizeof(rp->origin) - 1, url + off, end - off);
		else
			return error_set(err, EINVAL, "the request's path does not start with '/'");
		if (c < 0)
			return error_set(err, EINVAL, "the request's path is too long");
		if (rp->has_host_header && !nethead_host_header_matches(rp))
			return error_set(err, EINVAL,
					 "the Host header '%.100s' names another authority than the URL's",
					 rp->host_header);
	}
	return 0;
}

int nethead_request(const struct nethead *h, struct nethead_request *ret, struct error *err)
{
	struct nethead_request r = { 0 };
	int e = nethead_request_parse(h, &r, err);

	*ret = r;
	return e;
}

static bool nethead_is_hop_by_hop(const char *name, size_t n)
{
	static const char *const hop[] = { "connection",	  "keep-alive", "proxy-connection",
					   "proxy-authorization", "te",		"upgrade" };
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strlen(hop[i]) == n && strncasecmp(name, hop[i], n) == 0)
			return true;
	return false;
}

int nethead_rewrite(const struct nethead *h, const struct nethead_request *req, char **ret,
		    size_t *ret_len, struct error *err)
{
	/* A header grows by at most 2 bytes (": " and "\r\n" where the head
	 * had ":" and "\n"). */
	size_t cap = h->head_len + strlen(req->origin) + 64 + 4 * h->n_headers, len = 0;
	char *out = malloc(cap);

	if (!out)
		return error_set(err, ENOMEM, "out of memory");
	int n = snprintf(out, cap, "%s %s HTTP/%u.%u\r\n", req->method, req->origin,
			 h->parser.http_major, h->parser.http_minor);
	if (n < 0 || (size_t)n >= cap) {
		free(out);
		return error_set(err, EINVAL, "the request line is too long");
	}
	len = (size_t)n;
	for (size_t i = 0; i < h->n_headers; i++) {
		const struct nethead_header *hd = &h->headers[i];
		const char *field = h->buf + hd->field_off, *value = h->buf + hd->value_off;
		if (memchr(value, '\r', hd->value_len) || memchr(value, '\n', hd->value_len)) {
			free(out);
			return error_set(err, EINVAL, "a header value spans lines");
		}
		if (nethead_is_hop_by_hop(field, hd->field_len))
			continue;
		/* each header is no longer than it was in the head */
		memcpy(out + len, field, hd->field_len);
		len += hd->field_len;
		memcpy(out + len, ": ", 2);
		len += 2;
		memcpy(out + len, value, hd->value_len);
		len += hd->value_len;
		memcpy(out + len, "\r\n", 2);
		len += 2;
	}
	static const char close_[] = "Connection: close\r\n\r\n";
	memcpy(out + len, close_, sizeof(close_) - 1);
	len += sizeof(close_) - 1;
	*ret = out;
	*ret_len = len;
	return 0;
}
