/* SPDX-License-Identifier: MIT */
/* The allowlist proxy's parsers (docs/network.md): request heads
 * (src/core/net/nethead.c) and a tunnel's TLS server name
 * (src/core/net/netsni.c, over ClientHellos `openssl s_client` sent,
 * captured in tests/fixtures/net). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netdb.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fdpass.h"
#include "basic/fileio.h"
#include "core/net/netconfine.h"
#include "core/net/netdecide.h"
#include "core/net/nethead.h"
#include "core/net/netproxy.h"
#include "core/net/netsni.h"
#include "core/run/run_net.h"
#include "harness.h"
#include "sandbox/landlock_abi.h"

static struct nethead head;

/* Feeds s whole, or a byte at a time; returns the last feed's result. */
static int feed(const char *s, bool bytewise, struct error *err)
{
	int r = -EAGAIN;

	nethead_init(&head);
	if (!bytewise)
		return nethead_feed(&head, s, strlen(s), err);
	for (size_t i = 0; s[i] && r == -EAGAIN; i++)
		r = nethead_feed(&head, s + i, 1, err);
	return r;
}

static void test_nethead_connect(void)
{
	struct error err = { 0 };
	struct nethead_request req;
	static const char text[] =
		"CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\nUser-Agent: curl\r\n\r\n\x16\x03\x01";

	ASSERT_EQ_INT(nethead_load(&err), 0);
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		ASSERT_EQ_INT(feed(text, bytewise, &err), 0);
		ASSERT_EQ_INT(head.head_len, strlen(text) - 3);
		ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
		ASSERT_TRUE(req.is_connect);
		ASSERT_EQ_STR(req.method, "CONNECT");
		ASSERT_EQ_STR(req.host, "registry.npmjs.org");
		ASSERT_EQ_INT(req.port, 443);
		ASSERT_EQ_STR(req.host_header, "registry.npmjs.org:443");
	}
	ASSERT_EQ_INT(feed("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
	ASSERT_EQ_STR(req.host, "2001:db8::1");
	ASSERT_EQ_INT(req.port, 8443);
	ASSERT_TRUE(!req.has_host_header);
	/* CONNECT needs a port, and no path or user information */
	static const char *const bad[] = {
		"CONNECT example.org HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443/x HTTP/1.1\r\n\r\n",
		"CONNECT user@example.org:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = feed(bad[i], false, &err);
		ASSERT_TRUE(r == -EINVAL || (r == 0 && nethead_request(&head, &req, &err) == -EINVAL));
	}
}

static void test_nethead_plain(void)
{
	struct error err = { 0 };
	struct nethead_request req;
	static const char text[] =
		"POST http://Registry.Test:8080/a/b?c=d#frag HTTP/1.1\r\nHost: registry.test:8080\r\nContent-Length: 5\r\n\r\nhello";

	ASSERT_EQ_INT(nethead_load(&err), 0);
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		ASSERT_EQ_INT(feed(text, bytewise, &err), 0);
		ASSERT_EQ_INT(head.head_len, strlen(text) - 5);
		ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
		ASSERT_TRUE(!req.is_connect);
		ASSERT_EQ_STR(req.method, "POST");
		ASSERT_EQ_STR(req.host, "Registry.Test");
		ASSERT_EQ_INT(req.port, 8080);
		ASSERT_EQ_STR(req.origin, "/a/b?c=d");
	}
	ASSERT_EQ_INT(feed("GET http://example.org HTTP/1.0\r\nHost: EXAMPLE.org\r\n\r\n", false, &err),
		      0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
	ASSERT_EQ_INT(req.port, 80);
	ASSERT_EQ_STR(req.origin, "/");
	ASSERT_EQ_INT(feed("GET http://example.org?q HTTP/1.1\r\n\r\n", false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
	ASSERT_EQ_STR(req.origin, "/?q");
	ASSERT_EQ_INT(feed("GET http://[::1]:81/ HTTP/1.1\r\nHost: [::1]:81\r\n\r\n", false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
	ASSERT_EQ_STR(req.host, "::1");
	/* refused: origin form, https, another Host, user information */
	static const char *const bad[] = {
		"GET /index.html HTTP/1.1\r\nHost: example.org\r\n\r\n",
		"GET https://example.org/ HTTP/1.1\r\n\r\n",
		"GET ftp://example.org/ HTTP/1.1\r\n\r\n",
		"GET http://example.org/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET http://example.org:8080/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
		"GET http://user:pw@example.org/ HTTP/1.1\r\n\r\n",
		"GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\nHost: example.org\r\n\r\n",
		"GET http://example.org:0/ HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = feed(bad[i], false, &err);
		if (r == 0)
			r = nethead_request(&head, &req, &err);
		if (r != -EINVAL)
			printf("# accepted: %s", bad[i]);
		ASSERT_EQ_INT(r, -EINVAL);
	}
	/* a refused request still says what it parsed: its URL's authority */
	ASSERT_EQ_INT(feed(bad[4], false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), -EINVAL);
	ASSERT_EQ_STR(req.method, "GET");
	ASSERT_EQ_STR(req.host, "example.org");
	ASSERT_EQ_INT(req.port, 8080);
	ASSERT_EQ_INT(feed(bad[1], false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), -EINVAL);
	ASSERT_EQ_STR(req.host, "example.org");
	ASSERT_EQ_INT(req.port, 0);
	ASSERT_EQ_INT(feed(bad[0], false, &err), 0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), -EINVAL);
	ASSERT_EQ_STR(req.host, "");
}

/* The head a plain request goes upstream with; folded values refused. */
static void test_nethead_rewrite(void)
{
	struct error err = { 0 };
	struct nethead_request req;
	char *out = NULL;
	size_t len = 0;

	ASSERT_EQ_INT(nethead_load(&err), 0);
	ASSERT_EQ_INT(feed("POST http://example.org/p HTTP/1.0\nHost: example.org\nConnection: keep-alive\nProxy-Authorization: x\nTE: trailers\nUpgrade: h2c\nX-Empty:\nContent-Length: 2\n\nhi",
			   true, &err),
		      0);
	ASSERT_EQ_INT(nethead_request(&head, &req, &err), 0);
	ASSERT_EQ_INT(nethead_rewrite(&head, &req, &out, &len, &err), 0);
	static const char want[] =
		"POST /p HTTP/1.0\r\nHost: example.org\r\nX-Empty: \r\nContent-Length: 2\r\nConnection: close\r\n\r\n";
	ASSERT_EQ_INT(len, sizeof(want) - 1);
	ASSERT_TRUE(memcmp(out, want, len) == 0);
	free(out);
	out = NULL;
	int r = feed("GET http://example.org/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", false, &err);
	if (r == 0)
		r = nethead_request(&head, &req, &err);
	if (r == 0)
		r = nethead_rewrite(&head, &req, &out, &len, &err);
	free(out);
	ASSERT_EQ_INT(r, -EINVAL);
}

/* Not HTTP, or too much of it: refused, and stays refused. */
static void test_nethead_refusals(void)
{
	struct error err = { 0 };

	ASSERT_EQ_INT(nethead_load(&err), 0);
	ASSERT_EQ_INT(feed("\x16\x03\x01\x02\x00", false, &err), -EINVAL);
	ASSERT_EQ_INT(nethead_feed(&head, "GET", 3, &err), -EINVAL);
	ASSERT_EQ_INT(feed("GET http://example.org/ HTTP/1.1\r\nX: ", false, &err), -EAGAIN);
	char *big = malloc(NETHEAD_MAX);
	ASSERT_TRUE(big != NULL);
	memset(big, 'a', NETHEAD_MAX);
	int r = nethead_feed(&head, big, NETHEAD_MAX, &err);
	free(big);
	ASSERT_EQ_INT(r, -E2BIG);
	/* a slow client: incomplete all along, one pass in all */
	nethead_init(&head);
	r = nethead_feed(&head, "GET http://example.org/ HTTP/1.1\r\nX: ", 36, &err);
	for (size_t i = 0; i < 20000 && r == -EAGAIN; i++)
		r = nethead_feed(&head, "y", 1, &err);
	ASSERT_EQ_INT(r, -EAGAIN);
}

static int sni_of(const char *fixture, size_t cut, char name[NETSNI_NAME_MAX + 1])
{
	char path[512];
	char *text = NULL;
	size_t n = 0;
	struct error err = { 0 };

	snprintf(path, sizeof(path), "%s/fixtures/net/%s", TEST_SOURCE_DIR, fixture);
	if (file_read_capped(AT_FDCWD, path, 65536, &text, &n, &err) < 0) {
		printf("# %s: %s\n", path, err.msg);
		return -ENOENT;
	}
	int r = netsni_parse(text, cut && cut < n ? cut : n, name, &err);
	free(text);
	return r;
}

/* The name a ClientHello asks for (lower-cased), none, or not yet all of
 * it; what is not a ClientHello is refused. */
static void test_netsni(void)
{
	struct error err = { 0 };
	char name[NETSNI_NAME_MAX + 1];

	ASSERT_EQ_INT(netsni_load(&err), 0);
	ASSERT_EQ_INT(sni_of("clienthello-sni", 0, name), 0);
	ASSERT_EQ_STR(name, "registry.npmjs.org");
	ASSERT_EQ_INT(sni_of("clienthello-tls12-sni", 0, name), 0);
	ASSERT_EQ_STR(name, "deb.debian.org");
	ASSERT_EQ_INT(sni_of("clienthello-nosni", 0, name), 0);
	ASSERT_EQ_STR(name, "");
	ASSERT_EQ_INT(sni_of("clienthello-sni", 3, name), -EAGAIN);
	ASSERT_EQ_INT(sni_of("clienthello-sni", 100, name), -EAGAIN);
	static const char http[] = "GET http://example.org/ HTTP/1.1\r\n\r\n";
	ASSERT_EQ_INT(netsni_parse(http, sizeof(http) - 1, name, &err), -EINVAL);
	static const char junk[] = "\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00";
	ASSERT_EQ_INT(netsni_parse(junk, sizeof(junk) - 1, name, &err), -EINVAL);
}

static struct nethead_request request(const char *host, uint16_t port)
{
	struct nethead_request r = { .port = port };
	snprintf(r.host, sizeof(r.host), "%s", host);
	snprintf(r.method, sizeof(r.method), "CONNECT");
	r.is_connect = true;
	return r;
}

/* The proxy's decisions, each refusal naming its rule and pattern. */
static void test_netdecide(void)
{
	static const char *const allow[] = { "registry.npmjs.org", "*.debian.org:443", "127.0.0.2",
					     NULL };
	static const char *const deny[] = { "evil.debian.org", NULL };
	struct netallow n;
	struct error err = { 0 };
	struct netdecision d;
	struct nethead_request r;

	ASSERT_EQ_INT(netallow_compile((char *const *)allow, (char *const *)deny, &n, &err), 0);
	r = request("Registry.npmjs.org", 443);
	netdecide_request(&n, &r, &d);
	ASSERT_TRUE(d.allowed);
	ASSERT_EQ_STR(d.rule, "allow");
	ASSERT_EQ_STR(d.pattern, "registry.npmjs.org");
	r = request("evil.debian.org", 443);
	netdecide_request(&n, &r, &d);
	ASSERT_TRUE(!d.allowed);
	ASSERT_EQ_STR(d.rule, "net_deny");
	ASSERT_EQ_STR(d.pattern, "evil.debian.org");
	ASSERT_EQ_INT(d.status, 403);
	ASSERT_TRUE(strstr(d.message, "evil.debian.org:443 is denied") != NULL);
	r = request("example.com", 443);
	netdecide_request(&n, &r, &d);
	ASSERT_EQ_STR(d.rule, "net_not_allowed");
	ASSERT_TRUE(strstr(d.message, "example.com:443 is not in sandbox.net.allow") != NULL);
	r = request("deb.debian.org", 80);
	netdecide_request(&n, &r, &d);
	ASSERT_EQ_STR(d.rule, "net_not_allowed");
	r = request("1.2.3.4", 443);
	netdecide_request(&n, &r, &d);
	ASSERT_EQ_STR(d.rule, "net_not_allowed");
	r = request("0x7f.1", 443);
	netdecide_request(&n, &r, &d);
	ASSERT_EQ_STR(d.rule, "net_bad_request");
	ASSERT_EQ_INT(d.status, 400);

	/* addresses, in the resolver's order: the first that may be used */
	struct sockaddr_in sa[3] = { { .sin_family = AF_INET },
				     { .sin_family = AF_INET },
				     { .sin_family = AF_INET } };
	inet_pton(AF_INET, "169.254.169.254", &sa[0].sin_addr);
	inet_pton(AF_INET, "10.0.0.1", &sa[1].sin_addr);
	inet_pton(AF_INET, "127.0.0.2", &sa[2].sin_addr);
	struct addrinfo ai[3];
	memset(ai, 0, sizeof(ai));
	for (int i = 0; i < 3; i++) {
		ai[i].ai_family = AF_INET;
		ai[i].ai_addr = (struct sockaddr *)&sa[i];
		ai[i].ai_addrlen = sizeof(sa[i]);
		ai[i].ai_next = i < 2 ? &ai[i + 1] : NULL;
	}
	struct sockaddr_storage chosen;
	r = request("registry.npmjs.org", 443);
	ASSERT_TRUE(netdecide_address(&n, &r, &ai[0], &chosen, &d));
	ASSERT_TRUE(memcmp(&((struct sockaddr_in *)&chosen)->sin_addr, &sa[2].sin_addr, 4) == 0);
	ai[1].ai_next = NULL;
	ASSERT_TRUE(!netdecide_address(&n, &r, &ai[0], &chosen, &d));
	ASSERT_EQ_STR(d.rule, "net_address");
	ASSERT_TRUE(strstr(d.message, "169.254.169.254 (link-local)") != NULL);
	ASSERT_EQ_STR(d.address, "169.254.169.254"); /* the first refused, for the receipt */
	d = (struct netdecision){ 0 };
	ASSERT_TRUE(!netdecide_address(&n, &r, NULL, &chosen, &d));
	ASSERT_TRUE(strstr(d.message, "resolves to no address") != NULL);
	ASSERT_EQ_STR(d.address, "");

	/* the SNI names the CONNECT host, or the tunnel is refused */
	d = (struct netdecision){ 0 };
	netdecide_sni(&r, "REGISTRY.npmjs.org.", &d);
	ASSERT_TRUE(d.allowed);
	d = (struct netdecision){ 0 };
	netdecide_sni(&r, "evil.example", &d);
	ASSERT_TRUE(!d.allowed);
	ASSERT_EQ_STR(d.rule, "net_sni");
	d = (struct netdecision){ 0 };
	netdecide_sni(&r, "", &d);
	ASSERT_EQ_STR(d.rule, "net_sni");
	d = (struct netdecision){ 0 };
	netdecide_sni(&r, NULL, &d);
	ASSERT_EQ_STR(d.rule, "net_sni");
	d = (struct netdecision){ 0 };
	r = request("127.0.0.2", 443);
	netdecide_sni(&r, NULL, &d);
	ASSERT_TRUE(d.allowed);
	netallow_release(&n);

	struct netconn_record rec = {
		.port = 443, .allowed = false, .rule = "net_sni", .bytes_out = 517, .start_ms = 12
	};
	snprintf(rec.host, sizeof(rec.host), "registry.npmjs.org");
	snprintf(rec.method, sizeof(rec.method), "CONNECT");
	snprintf(rec.sni, sizeof(rec.sni), "evil.example");
	json_t *o = netconn_record_json(&rec);
	ASSERT_TRUE(o != NULL);
	char *text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(o);
	ASSERT_EQ_STR(text,
		      "{\"allowed\":false,\"bytes_in\":0,\"bytes_out\":517,\"duration_ms\":0,\"host\":\"registry.npmjs.org\",\"method\":\"CONNECT\",\"port\":443,\"rule\":\"net_sni\",\"sni\":\"evil.example\",\"start_ms\":12}");
	free(text);
}

/* An upstream on 127.0.0.1 that reads what arrives until it has `expect`
 * bytes, then answers "pong" and closes. */
struct upstream {
	int listen_fd;
	uint16_t port;
	size_t expect, got; /* expect 0: until the end of a head */
	char seen[4096]; /* what arrived, NUL-terminated */
	pthread_t thread;
};

static void *upstream_main(void *arg)
{
	struct upstream *u = arg;
	int c = accept(u->listen_fd, NULL, NULL);
	char buf[4096];

	while (c >= 0 && (u->expect ? u->got < u->expect : !strstr(u->seen, "\r\n\r\n"))) {
		ssize_t n = recv(c, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		size_t keep = sizeof(u->seen) - 1 - strlen(u->seen);
		strncat(u->seen, buf, (size_t)n < keep ? (size_t)n : keep);
		u->got += (size_t)n;
	}
	/* After a head, whatever else arrives within 200 ms (a request
	 * pipelined behind it) is kept too. */
	struct pollfd p = { .fd = c, .events = POLLIN };
	while (c >= 0 && !u->expect && poll(&p, 1, 200) > 0) {
		ssize_t n = recv(c, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		size_t keep = sizeof(u->seen) - 1 - strlen(u->seen);
		strncat(u->seen, buf, (size_t)n < keep ? (size_t)n : keep);
	}
	if (c >= 0) {
		(void)send(c, "pong", 4, MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

static int upstream_start(struct upstream *u, size_t expect)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	*u = (struct upstream){ .expect = expect };
	u->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u->listen_fd < 0 || bind(u->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(u->listen_fd, 4) < 0 || getsockname(u->listen_fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	u->port = ntohs(sa.sin_port);
	return pthread_create(&u->thread, NULL, upstream_main, u) == 0 ? 0 : -1;
}

struct proxied {
	int fd;
	const struct netallow *n;
	struct netconn_record rec;
	pthread_t thread;
};

static void *proxied_main(void *arg)
{
	struct proxied *p = arg;
	struct netproxy_limits lim = { .head_ms = 300, .connect_ms = 1000, .idle_ms = 1000 };

	netproxy_handle(p->fd, p->n, &lim, 0, &p->rec);
	close(p->fd);
	return NULL;
}

/* Reads what the proxy sends until it closes. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;

	while (have + 1 < size && (n = recv(fd, buf + have, size - 1 - have, 0)) > 0)
		have += (size_t)n;
	buf[have] = '\0';
	return have;
}

/* One connection through the proxy, end to end over loopback: an allowed
 * CONNECT tunnels both ways and is counted; a refused one is answered 403
 * and reaches nothing; a head that never ends is dropped at its deadline. */
static void test_netproxy_connect(void)
{
	struct error err = { 0 };
	struct upstream up;
	char path[512], *hello = NULL, allowed[64], buf[8192];
	size_t hello_len = 0;

	snprintf(path, sizeof(path), "%s/fixtures/net/clienthello-sni", TEST_SOURCE_DIR);
	ASSERT_EQ_INT(file_read_capped(AT_FDCWD, path, 65536, &hello, &hello_len, &err), 0);
	ASSERT_EQ_INT(upstream_start(&up, hello_len), 0);
	snprintf(allowed, sizeof(allowed), "127.0.0.1:%u", up.port);
	const char *allow[] = { allowed, NULL };
	struct netallow n;
	ASSERT_EQ_INT(netallow_compile((char *const *)allow, NULL, &n, &err), 0);

	int sv[2];
	ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct proxied p = { .fd = sv[1], .n = &n };
	ASSERT_EQ_INT(pthread_create(&p.thread, NULL, proxied_main, &p), 0);
	char req[256];
	int hn = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", up.port);
	ASSERT_TRUE(send(sv[0], req, (size_t)hn, 0) == hn);
	ASSERT_TRUE(send(sv[0], hello, hello_len, 0) == (ssize_t)hello_len);
	read_all(sv[0], buf, sizeof(buf));
	close(sv[0]);
	pthread_join(p.thread, NULL);
	pthread_join(up.thread, NULL);
	close(up.listen_fd);
	ASSERT_EQ_STR(buf, "HTTP/1.1 200 Connection established\r\n\r\npong");
	ASSERT_TRUE(p.rec.allowed);
	ASSERT_EQ_STR(p.rec.rule, "allow");
	ASSERT_EQ_STR(p.rec.address, "127.0.0.1");
	ASSERT_EQ_STR(p.rec.sni, "registry.npmjs.org");
	ASSERT_EQ_INT(p.rec.bytes_out, hello_len);
	ASSERT_EQ_INT(p.rec.bytes_in, 4);
	ASSERT_EQ_INT(up.got, hello_len);

	/* another port: 403, nothing connected */
	ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p = (struct proxied){ .fd = sv[1], .n = &n };
	ASSERT_EQ_INT(pthread_create(&p.thread, NULL, proxied_main, &p), 0);
	hn = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n",
		      up.port == 65535 ? 1 : up.port + 1);
	ASSERT_TRUE(send(sv[0], req, (size_t)hn, 0) == hn);
	read_all(sv[0], buf, sizeof(buf));
	close(sv[0]);
	pthread_join(p.thread, NULL);
	ASSERT_TRUE(strncmp(buf, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	ASSERT_TRUE(strstr(buf, "is an address no sandbox.net.allow range holds") != NULL);
	ASSERT_TRUE(!p.rec.allowed);
	ASSERT_EQ_STR(p.rec.rule, "net_not_allowed");
	ASSERT_EQ_STR(p.rec.address, "");

	/* a head that never ends: dropped at the deadline, unanswered */
	ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p = (struct proxied){ .fd = sv[1], .n = &n };
	ASSERT_EQ_INT(pthread_create(&p.thread, NULL, proxied_main, &p), 0);
	ASSERT_TRUE(send(sv[0], "CONNECT 127.0.0.1", 17, 0) == 17);
	ASSERT_EQ_INT(read_all(sv[0], buf, sizeof(buf)), 0);
	close(sv[0]);
	pthread_join(p.thread, NULL);
	ASSERT_EQ_STR(p.rec.rule, "net_head_timeout");
	ASSERT_TRUE(p.rec.duration_ms >= 250);

	/* plain http://: the head rewritten to origin form, hop-by-hop
	 * headers dropped, the answer relayed; a second request pipelined
	 * behind the first (another Host) never reaches the server */
	ASSERT_EQ_INT(upstream_start(&up, 0), 0);
	snprintf(allowed, sizeof(allowed), "127.0.0.1:%u", up.port);
	netallow_release(&n);
	ASSERT_EQ_INT(netallow_compile((char *const *)allow, NULL, &n, &err), 0);
	ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p = (struct proxied){ .fd = sv[1], .n = &n };
	ASSERT_EQ_INT(pthread_create(&p.thread, NULL, proxied_main, &p), 0);
	hn = snprintf(req, sizeof(req),
		      "GET http://127.0.0.1:%u/x?y HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
		      "GET /second HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		      up.port, up.port);
	ASSERT_TRUE(send(sv[0], req, (size_t)hn, 0) == hn);
	read_all(sv[0], buf, sizeof(buf));
	close(sv[0]);
	pthread_join(p.thread, NULL);
	pthread_join(up.thread, NULL);
	close(up.listen_fd);
	ASSERT_EQ_STR(buf, "pong");
	char want[256];
	snprintf(want, sizeof(want),
		 "GET /x?y HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAccept: */*\r\nConnection: close\r\n\r\n",
		 up.port);
	ASSERT_EQ_STR(up.seen, want);
	ASSERT_TRUE(p.rec.allowed);
	ASSERT_EQ_STR(p.rec.method, "GET");
	ASSERT_EQ_INT(p.rec.bytes_in, 4);
	netallow_release(&n);
	free(hello);
}

struct served {
	int listen_fd, stop[2], records[2];
	const struct netallow *n;
	int idle_ms; /* 0: 1000 */
	int result;
	pthread_t thread;
};

static void *served_main(void *arg)
{
	struct served *sv = arg;
	struct netproxy_limits lim = { .head_ms = 500,
				       .connect_ms = 1000,
				       .idle_ms = sv->idle_ms ? sv->idle_ms : 1000 };

	sv->result = netproxy_serve(sv->listen_fd, sv->stop[0], sv->records[1], sv->n, &lim, 0);
	return NULL;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t test_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A tunnel whose upstream never answers nor closes, still open when the
 * proxy is told to stop: it ends at once (not at its idle deadline) and
 * its record carries the bytes sent so far, then the accepted count. */
static void test_netproxy_stop_ends_tunnels(void)
{
	struct error err = { 0 };
	char path[512], *hello = NULL, allowed[64], req[256], buf[8192];
	size_t hello_len = 0;

	snprintf(path, sizeof(path), "%s/fixtures/net/clienthello-sni", TEST_SOURCE_DIR);
	ASSERT_EQ_INT(file_read_capped(AT_FDCWD, path, 65536, &hello, &hello_len, &err), 0);
	/* the upstream: a backlog only, never accepted */
	struct sockaddr_in ua = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t ulen = sizeof(ua);
	int hold = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(hold >= 0);
	ASSERT_EQ_INT(bind(hold, (struct sockaddr *)&ua, sizeof(ua)), 0);
	ASSERT_EQ_INT(listen(hold, 4), 0);
	ASSERT_EQ_INT(getsockname(hold, (struct sockaddr *)&ua, &ulen), 0);
	snprintf(allowed, sizeof(allowed), "127.0.0.1:%u", ntohs(ua.sin_port));
	const char *allow[] = { allowed, NULL };
	struct netallow n;
	ASSERT_EQ_INT(netallow_compile((char *const *)allow, NULL, &n, &err), 0);

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int proxy_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(proxy_fd >= 0);
	ASSERT_EQ_INT(bind(proxy_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ_INT(listen(proxy_fd, 16), 0);
	ASSERT_EQ_INT(getsockname(proxy_fd, (struct sockaddr *)&sa, &len), 0);
	struct served sv = { .listen_fd = proxy_fd, .n = &n, .idle_ms = 60000 };
	ASSERT_EQ_INT(pipe2(sv.stop, O_CLOEXEC), 0);
	ASSERT_EQ_INT(pipe2(sv.records, O_CLOEXEC | O_NONBLOCK), 0);
	ASSERT_EQ_INT(pthread_create(&sv.thread, NULL, served_main, &sv), 0);

	int c = connect_to(ntohs(sa.sin_port));
	ASSERT_TRUE(c >= 0);
	int hn = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n",
			  ntohs(ua.sin_port));
	ASSERT_TRUE(send(c, req, (size_t)hn, 0) == hn);
	ASSERT_TRUE(send(c, hello, hello_len, 0) == (ssize_t)hello_len);
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	size_t have = 0;
	while (have < sizeof(established) - 1) {
		ssize_t got = recv(c, buf + have, sizeof(established) - 1 - have, 0);
		ASSERT_TRUE(got > 0);
		have += (size_t)got;
	}
	usleep(200000); /* the hello forwarded upstream meanwhile */
	uint64_t t0 = test_now_ms();
	ASSERT_TRUE(write(sv.stop[1], "x", 1) == 1);
	pthread_join(sv.thread, NULL);
	ASSERT_TRUE(test_now_ms() - t0 < 5000);
	ASSERT_EQ_INT(sv.result, 0);
	ssize_t got = read(sv.records[0], buf, sizeof(buf) - 1);
	ASSERT_TRUE(got > 0);
	buf[got] = '\0';
	char *second = strchr(buf, '\n');
	ASSERT_TRUE(second != NULL);
	*second++ = '\0';
	json_t *a = json_loads(buf, 0, NULL), *b = json_loads(second, JSON_DISABLE_EOF_CHECK, NULL);
	ASSERT_TRUE(a && b);
	/* the accepted count comes first (written at the stop), then the record */
	if (json_object_get(b, "accepted")) {
		json_t *t = a;
		a = b;
		b = t;
	}
	ASSERT_EQ_INT(json_integer_value(json_object_get(a, "accepted")), 1);
	ASSERT_EQ_STR(json_string_value(json_object_get(b, "rule")), "allow");
	ASSERT_EQ_INT(json_integer_value(json_object_get(b, "bytes_out")), hello_len);
	json_decref(a);
	json_decref(b);
	close(c);
	close(hold);
	close(proxy_fd);
	close(sv.stop[0]);
	close(sv.stop[1]);
	close(sv.records[0]);
	close(sv.records[1]);
	netallow_release(&n);
	free(hello);
}

/* The accept loop: each connection handled and recorded as one JSON line;
 * it returns once told to stop and its connections ended. */
static void test_netproxy_serve(void)
{
	struct error err = { 0 };
	struct upstream up;
	int proxy_fd;
	char allowed[64], buf[8192], req[256];
	char path[512], *hello = NULL;
	size_t hello_len = 0;

	snprintf(path, sizeof(path), "%s/fixtures/net/clienthello-sni", TEST_SOURCE_DIR);
	ASSERT_EQ_INT(file_read_capped(AT_FDCWD, path, 65536, &hello, &hello_len, &err), 0);
	ASSERT_EQ_INT(upstream_start(&up, hello_len), 0);
	snprintf(allowed, sizeof(allowed), "127.0.0.1:%u", up.port);
	const char *allow[] = { allowed, NULL };
	struct netallow n;
	ASSERT_EQ_INT(netallow_compile((char *const *)allow, NULL, &n, &err), 0);

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	proxy_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(proxy_fd >= 0);
	ASSERT_EQ_INT(bind(proxy_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ_INT(listen(proxy_fd, 16), 0);
	ASSERT_EQ_INT(getsockname(proxy_fd, (struct sockaddr *)&sa, &len), 0);
	struct served sv = { .listen_fd = proxy_fd, .n = &n };
	ASSERT_EQ_INT(pipe2(sv.stop, O_CLOEXEC), 0);
	ASSERT_EQ_INT(pipe2(sv.records, O_CLOEXEC | O_NONBLOCK), 0);
	ASSERT_EQ_INT(pthread_create(&sv.thread, NULL, served_main, &sv), 0);

	int c = connect_to(ntohs(sa.sin_port));
	ASSERT_TRUE(c >= 0);
	int hn = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", up.port);
	ASSERT_TRUE(send(c, req, (size_t)hn, 0) == hn);
	ASSERT_TRUE(send(c, hello, hello_len, 0) == (ssize_t)hello_len);
	read_all(c, buf, sizeof(buf));
	close(c);
	ASSERT_EQ_STR(buf, "HTTP/1.1 200 Connection established\r\n\r\npong");
	pthread_join(up.thread, NULL);
	close(up.listen_fd);
	c = connect_to(ntohs(sa.sin_port));
	ASSERT_TRUE(c >= 0);
	static const char denied[] = "CONNECT evil.example:443 HTTP/1.1\r\n\r\n";
	ASSERT_TRUE(send(c, denied, sizeof(denied) - 1, 0) == (ssize_t)sizeof(denied) - 1);
	read_all(c, buf, sizeof(buf));
	close(c);
	ASSERT_TRUE(strstr(buf, "403 Forbidden") != NULL);
	ASSERT_TRUE(write(sv.stop[1], "x", 1) == 1);
	pthread_join(sv.thread, NULL);
	ASSERT_EQ_INT(sv.result, 0);

	ssize_t got = read(sv.records[0], buf, sizeof(buf) - 1);
	ASSERT_TRUE(got > 0);
	buf[got] = '\0';
	/* Three lines: the two connections' records and, at the stop, how
	 * many connections it took. The count is written before the proxy
	 * waits for its workers, so a tunnel still ending then (its client
	 * saw the upstream's end, passed on, before the worker's record)
	 * follows it; the refusal may come first too. */
	char *line[3], *next = buf;
	for (size_t i = 0; i < 3; i++) {
		char *nl = strchr(next, '\n');
		ASSERT_TRUE(nl != NULL);
		*nl = '\0';
		line[i] = next;
		next = nl + 1;
	}
	ASSERT_EQ_STR(next, "");
	json_t *a = NULL, *b = NULL;
	size_t counts = 0;
	for (size_t i = 0; i < 3; i++) {
		if (strcmp(line[i], "{\"accepted\":2}") == 0) {
			counts++;
			continue;
		}
		json_t *o = json_loads(line[i], 0, NULL);
		ASSERT_TRUE(o != NULL);
		json_t **slot = json_is_false(json_object_get(o, "allowed")) ? &b : &a;
		ASSERT_TRUE(*slot == NULL);
		*slot = o;
	}
	ASSERT_EQ_INT(counts, 1);
	ASSERT_TRUE(a && b);
	ASSERT_EQ_STR(json_string_value(json_object_get(a, "rule")), "allow");
	ASSERT_EQ_STR(json_string_value(json_object_get(a, "address")), "127.0.0.1");
	ASSERT_EQ_INT(json_integer_value(json_object_get(a, "bytes_out")), hello_len);
	ASSERT_EQ_STR(json_string_value(json_object_get(b, "rule")), "net_not_allowed");
	ASSERT_EQ_STR(json_string_value(json_object_get(b, "host")), "evil.example");
	json_decref(a);
	json_decref(b);
	close(sv.stop[0]);
	close(sv.stop[1]);
	close(sv.records[0]);
	close(sv.records[1]);
	close(proxy_fd);
	netallow_release(&n);
	free(hello);
}

static struct netproxy_limits capped_limits = {
	.head_ms = 1500, .connect_ms = 1000, .idle_ms = 1000, .max_connections = 3
};

static void *capped_main(void *arg)
{
	struct served *sv = arg;

	sv->result =
		netproxy_serve(sv->listen_fd, sv->stop[0], sv->records[1], sv->n, &capped_limits, 0);
	return NULL;
}

/* Slow clients (heads that never end) hold their own threads: another
 * client is answered meanwhile; past the cap a connection is closed at once
 * and recorded; the slow ones are dropped at the head deadline. */
static void test_netproxy_slow_clients(void)
{
	struct error err = { 0 };
	static const char *const allow[] = { "registry.npmjs.org", NULL };
	struct netallow n;
	char buf[8192];

	ASSERT_EQ_INT(netallow_compile((char *const *)allow, NULL, &n, &err), 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(lfd >= 0);
	ASSERT_EQ_INT(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ_INT(listen(lfd, 16), 0);
	ASSERT_EQ_INT(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	struct served sv = { .listen_fd = lfd, .n = &n };
	ASSERT_EQ_INT(pipe2(sv.stop, O_CLOEXEC), 0);
	ASSERT_EQ_INT(pipe2(sv.records, O_CLOEXEC | O_NONBLOCK), 0);
	ASSERT_EQ_INT(pthread_create(&sv.thread, NULL, capped_main, &sv), 0);

	uint16_t port = ntohs(sa.sin_port);
	int slow1 = connect_to(port), slow2 = connect_to(port);
	ASSERT_TRUE(slow1 >= 0 && slow2 >= 0);
	ASSERT_TRUE(send(slow1, "CONN", 4, 0) == 4);
	ASSERT_TRUE(send(slow2, "GET http://regis", 16, 0) == 16);
	usleep(100 * 1000);
	/* the third, while both slow ones wait: answered */
	int c = connect_to(port);
	ASSERT_TRUE(c >= 0);
	static const char denied[] = "CONNECT evil.example:443 HTTP/1.1\r\n\r\n";
	ASSERT_TRUE(send(c, denied, sizeof(denied) - 1, 0) == (ssize_t)sizeof(denied) - 1);
	read_all(c, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "403 Forbidden") != NULL);
	/* hold the cap: three slow ones; a fourth is closed unanswered */
	int slow3 = connect_to(port);
	ASSERT_TRUE(slow3 >= 0);
	usleep(100 * 1000);
	int over = connect_to(port);
	ASSERT_TRUE(over >= 0);
	ASSERT_EQ_INT(read_all(over, buf, sizeof(buf)), 0);
	close(over);
	/* the slow ones are dropped at their deadline, unanswered */
	ASSERT_EQ_INT(read_all(slow1, buf, sizeof(buf)), 0);
	ASSERT_EQ_INT(read_all(slow2, buf, sizeof(buf)), 0);
	ASSERT_EQ_INT(read_all(slow3, buf, sizeof(buf)), 0);
	close(c);
	close(slow1);
	close(slow2);
	close(slow3);
	ASSERT_TRUE(write(sv.stop[1], "x", 1) == 1);
	pthread_join(sv.thread, NULL);
	ssize_t got = read(sv.records[0], buf, sizeof(buf) - 1);
	ASSERT_TRUE(got > 0);
	buf[got] = '\0';
	ASSERT_TRUE(strstr(buf, "\"rule\":\"net_not_allowed\"") != NULL);
	ASSERT_TRUE(strstr(buf, "\"rule\":\"net_too_many\"") != NULL);
	size_t timeouts = 0;
	for (const char *p = buf; (p = strstr(p, "\"rule\":\"net_head_timeout\"")); p++)
		timeouts++;
	ASSERT_EQ_INT(timeouts, 3);
	close(sv.stop[0]);
	close(sv.stop[1]);
	close(sv.records[0]);
	close(sv.records[1]);
	close(lfd);
	netallow_release(&n);
}

/* The proxy's confinement, in a child: nobody when root, no new privileges,
 * and with Landlock a world-readable file outside /etc, /usr, /lib*, /run
 * (as the state directory is) unreadable, nothing writable, /etc/hosts
 * readable. Exit status: 0, or the failed check's number. */
static void *confined_thread(void *arg)
{
	return arg;
}

static int confined_child(const char *secret, const char *dir)
{
	struct error err = { 0 };
	bool landlock = false;

	if (netconfine_apply(getppid(), &landlock, &err) < 0)
		return 10;
	if (geteuid() == 0 || getuid() == 0 || getegid() == 0)
		return 11;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return 12;
	int fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 13;
	close(fd);
	struct addrinfo *ai = NULL;
	if (getaddrinfo("localhost", "80", NULL, &ai) != 0)
		return 17; /* name resolution still works: the proxy's job */
	freeaddrinfo(ai);
	/* the seccomp filter: no program, no fork, no other socket family;
	 * threads, sockets of its own families still work */
	char *const argv[] = { (char *)"false", NULL }, *const envp[] = { NULL };
	if (execve("/bin/false", argv, envp) == 0 || errno != EPERM) /* exit 1 if it ran */
		return 18;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid >= 0 || errno != EPERM)
		return 19;
	if ((fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)) >= 0 || errno != EAFNOSUPPORT)
		return 20;
	if ((fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 21;
	close(fd);
	pthread_t t;
	if (pthread_create(&t, NULL, confined_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 22;
	if (!landlock) /* only on a kernel without Landlock: uid and flags */
		return syscall(__NR_landlock_create_ruleset, NULL, 0,
			       AL_LANDLOCK_CREATE_RULESET_VERSION) >= 1
			       ? 16
			       : 0;
	if ((fd = open(secret, O_RDONLY | O_CLOEXEC)) >= 0 || errno != EACCES)
		return 14;
	char path[512];
	snprintf(path, sizeof(path), "%s/new", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0 || errno != EACCES)
		return 15;
	return 0;
}

static void test_netconfine(void)
{
	char dir[] = "/tmp/airlock-netconfine.XXXXXX", secret[512];
	int status = -1;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ_INT(chmod(dir, 0777), 0);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	int fd = open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ_INT(chmod(secret, 0644), 0);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(confined_child(secret, dir));
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	unlink(secret);
	char made[600];
	snprintf(made, sizeof(made), "%s/new", dir);
	unlink(made);
	rmdir(dir);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

/* The proxy process's body in a child: its allowlist from the config pipe,
 * confined, serving the listener, records on the pipe, gone when told. */
static void test_netproxy_main(void)
{
	static const char *const allow[] = { "registry.npmjs.org", NULL };
	int config[2], stop[2], records[2], status = -1;
	char buf[4096];

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(lfd >= 0);
	ASSERT_EQ_INT(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ_INT(listen(lfd, 16), 0);
	ASSERT_EQ_INT(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	ASSERT_EQ_INT(pipe2(config, O_CLOEXEC), 0);
	ASSERT_EQ_INT(pipe2(stop, O_CLOEXEC), 0);
	ASSERT_EQ_INT(pipe2(records, O_CLOEXEC), 0);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct netproxy_fds fds = {
			.config = config[0], .listen = lfd, .stop = stop[0], .records = records[1]
		};
		struct error err = { 0 };
		close(config[1]);
		close(stop[1]);
		close(records[0]);
		_exit(netproxy_main(&fds, getppid(), 0, &err) == 0 ? 0 : 1);
	}
	close(config[0]);
	close(stop[0]);
	close(records[1]);
	char *doc = netproxy_config_json((char *const *)allow, NULL);
	ASSERT_TRUE(doc != NULL);
	ASSERT_EQ_STR(doc, "{\"allow\":[\"registry.npmjs.org\"],\"deny\":[]}");
	ASSERT_TRUE(write(config[1], doc, strlen(doc)) == (ssize_t)strlen(doc));
	free(doc);
	close(config[1]);
	int c = connect_to(ntohs(sa.sin_port));
	ASSERT_TRUE(c >= 0);
	static const char denied[] = "CONNECT evil.example:443 HTTP/1.1\r\n\r\n";
	ASSERT_TRUE(send(c, denied, sizeof(denied) - 1, 0) == (ssize_t)sizeof(denied) - 1);
	read_all(c, buf, sizeof(buf));
	close(c);
	ASSERT_TRUE(strstr(buf, "403 Forbidden") != NULL);
	close(stop[1]); /* the writer's end closed: stop */
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ssize_t got = read(records[0], buf, sizeof(buf) - 1);
	ASSERT_TRUE(got > 0);
	buf[got] = '\0';
	ASSERT_TRUE(strstr(buf, "\"host\":\"evil.example\"") != NULL);
	ASSERT_TRUE(strstr(buf, "\"rule\":\"net_not_allowed\"") != NULL);
	close(records[0]);
	close(lfd);
}

/* netproxy_main() whose listening socket arrives later on listen_from (as
 * the supervisor passes it on), or never: EOF there ends it with 0; or
 * arrives and no client ever connects: stopped, it ends with 0, no record. */
static void test_netproxy_main_listen_from(void)
{
	int config[2], stop[2], records[2], carrier[2], status = -1;
	char buf[4096];

	for (int round = 0; round < 3; round++) {
		ASSERT_EQ_INT(pipe2(config, O_CLOEXEC), 0);
		ASSERT_EQ_INT(pipe2(stop, O_CLOEXEC), 0);
		ASSERT_EQ_INT(pipe2(records, O_CLOEXEC), 0);
		ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, carrier), 0);
		pid_t pid = fork();
		ASSERT_TRUE(pid >= 0);
		if (pid == 0) {
			struct netproxy_fds fds = { .config = config[0],
						    .listen = -1,
						    .listen_from = carrier[1],
						    .stop = stop[0],
						    .records = records[1] };
			struct error err = { 0 };
			close(config[1]);
			close(stop[1]);
			close(records[0]);
			close(carrier[0]);
			_exit(netproxy_main(&fds, getppid(), 0, &err) == 0 ? 0 : 1);
		}
		close(config[0]);
		close(stop[0]);
		close(records[1]);
		close(carrier[1]);
		static const char doc[] = "{\"allow\":[],\"deny\":[]}";
		ASSERT_TRUE(write(config[1], doc, sizeof(doc) - 1) == (ssize_t)sizeof(doc) - 1);
		close(config[1]);
		if (round == 2) {
			int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			ASSERT_TRUE(lfd >= 0);
			ASSERT_EQ_INT(listen(lfd, 16), 0);
			ASSERT_TRUE(fdpass_send(carrier[0], lfd));
			close(lfd);
		}
		if (round == 0) {
			struct sockaddr_in sa = { .sin_family = AF_INET,
						  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
			socklen_t len = sizeof(sa);
			int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			ASSERT_TRUE(lfd >= 0);
			ASSERT_EQ_INT(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
			ASSERT_EQ_INT(listen(lfd, 16), 0);
			ASSERT_EQ_INT(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
			/* a client waits in the backlog before the socket is passed */
			int c = connect_to(ntohs(sa.sin_port));
			ASSERT_TRUE(c >= 0);
			ASSERT_TRUE(fdpass_send(carrier[0], lfd));
			close(lfd); /* the proxy holds the only copy */
			static const char req[] = "CONNECT evil.example:443 HTTP/1.1\r\n\r\n";
			ASSERT_TRUE(send(c, req, sizeof(req) - 1, 0) == (ssize_t)sizeof(req) - 1);
			read_all(c, buf, sizeof(buf));
			close(c);
			ASSERT_TRUE(strstr(buf, "403 Forbidden") != NULL);
		}
		close(carrier[0]); /* round 1: none came */
		if (round != 1)
			close(stop[1]);
		ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (round == 1)
			close(stop[1]);
		ssize_t got = read(records[0], buf, sizeof(buf) - 1);
		ASSERT_TRUE(got >= 0);
		buf[got] = '\0';
		if (round == 0)
			ASSERT_TRUE(strstr(buf, "\"host\":\"evil.example\"") != NULL);
		else
			ASSERT_EQ_INT((int)got, 0);
		close(records[0]);
	}
}

/* The lines the gate and `show` print for refused connections. */
static void test_netdecide_denied_text(void)
{
	json_t *net =
		json_loads("{\"connections\":["
			   "{\"host\":\"registry.npmjs.org\",\"port\":443,\"allowed\":true,\"rule\":\"allow\"},"
			   "{\"host\":\"evil.example\",\"port\":443,\"allowed\":false,\"rule\":\"net_not_allowed\"},"
			   "{\"host\":\"evil.example\",\"port\":443,\"allowed\":false,\"rule\":\"net_not_allowed\"},"
			   "{\"host\":\"bad.debian.org\",\"port\":80,\"allowed\":false,\"rule\":\"net_deny\",\"pattern\":\"bad.debian.org\"},"
			   "{\"host\":\"slow.example\",\"port\":80,\"allowed\":false,\"rule\":\"net_head_timeout\"},"
			   "{\"host\":\"2001:db8::1\",\"port\":443,\"allowed\":false,\"rule\":\"net_not_allowed\"}]}",
			   0, NULL);
	ASSERT_TRUE(net != NULL);
	char *text = netdecide_denied_text(net, 10);
	ASSERT_EQ_STR(text,
		      "denied by net policy: evil.example:443 (no allow rule); allow it in .airlock/policy.json sandbox.net.allow\n"
		      "denied by net policy: bad.debian.org:80 (deny rule bad.debian.org); it is in .airlock/policy.json sandbox.net.deny\n"
		      "denied by net policy: [2001:db8::1]:443 (no allow rule); allow it in .airlock/policy.json sandbox.net.allow");
	free(text);
	text = netdecide_denied_text(net, 1);
	ASSERT_EQ_STR(text, "denied by net policy: evil.example:443 (no allow rule); allow it in .airlock/policy.json sandbox.net.allow\n"
			    "... and 2 more");
	free(text);
	json_decref(net);
	net = json_loads("{\"connections\":[{\"host\":\"a.example\",\"port\":443,\"allowed\":true,\"rule\":\"allow\"}]}",
			 0, NULL);
	ASSERT_TRUE(netdecide_denied_text(net, 10) == NULL);
	ASSERT_TRUE(netdecide_denied_text(NULL, 10) == NULL);
	json_decref(net);
}

/* The run's side of the record pipe: the first 500 and the last 500
 * connections kept, the rest counted; lines that are not records (wrong
 * types, too long, not JSON) are dropped; fields beyond the record's are
 * not copied. */
static void test_run_net_records(void)
{
	int p[2];
	ASSERT_EQ_INT(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct run_net n = { .started = true,
			     .stop_fd = -1,
			     .listen_to = -1,
			     .records_fd = p[0],
			     .first = json_array(),
			     .last = json_array() };
	char line[9000];
	for (int i = 0; i < 1300; i++) {
		int len = snprintf(line, sizeof(line),
				   "{\"host\":\"h%d.example\",\"port\":443,\"method\":\"CONNECT\",\"allowed\":false,"
				   "\"rule\":\"net_not_allowed\",\"bytes_out\":0,\"bytes_in\":0,\"start_ms\":%d,"
				   "\"duration_ms\":1,\"extra\":\"x\"}\n",
				   i, i);
		if (i == 3)
			len = snprintf(line, sizeof(line), "not json\n");
		if (i == 4)
			len = snprintf(line, sizeof(line), "{\"host\":1,\"port\":443}\n");
		if (i == 5) {
			memset(line, 'a', 8500);
			line[8500] = '\n';
			len = 8501;
		}
		ASSERT_TRUE(write(p[1], line, (size_t)len) == len);
		if (i % 50 == 0)
			ASSERT_TRUE(run_net_read(&n));
	}
	ASSERT_TRUE(run_net_read(&n));
	/* the proxy's last line: it took 1400, so 103 were cut short */
	static const char accepted[] = "{\"accepted\":1400}\n";
	ASSERT_TRUE(write(p[1], accepted, sizeof(accepted) - 1) == (ssize_t)sizeof(accepted) - 1);
	close(p[1]);
	ASSERT_TRUE(!run_net_read(&n));
	ASSERT_TRUE(n.records_fd < 0);
	static const char *const allow[] = { "registry.npmjs.org", NULL };
	json_t *o = run_net_json(&n, (char *const *)allow, NULL);
	ASSERT_TRUE(o != NULL);
	json_t *conns = json_object_get(o, "connections");
	ASSERT_EQ_INT((int)json_array_size(conns), 1000);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(o, "connections_dropped")), 297);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(o, "connections_unrecorded")), 103);
	/* every refusal counted: 1297 distinct hosts, the first 256 listed */
	json_t *sum = json_object_get(o, "summary");
	ASSERT_EQ_INT((int)json_array_size(json_object_get(sum, "denied")), RUN_NET_SUMMARY_MAX);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(sum, "denied_unlisted")),
		      1297 - RUN_NET_SUMMARY_MAX);
	ASSERT_EQ_INT((int)json_array_size(json_object_get(sum, "allowed")), 0);
	json_t *d0 = json_array_get(json_object_get(sum, "denied"), 0);
	ASSERT_EQ_STR(json_string_value(json_object_get(d0, "host")), "h0.example");
	ASSERT_EQ_STR(json_string_value(json_object_get(d0, "rule")), "net_not_allowed");
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(d0, "connections")), 1);
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "proxy")), "ran");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "mode")), "allowlist");
	ASSERT_EQ_STR(json_string_value(json_array_get(json_object_get(o, "allow"), 0)),
		      "registry.npmjs.org");
	ASSERT_EQ_INT((int)json_array_size(json_object_get(o, "deny")), 0);
	/* the first 500 (three lines dropped among them), then the last 500 in order */
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(json_array_get(conns, 0), "start_ms")),
		      0);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(json_array_get(conns, 3), "start_ms")),
		      6);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(json_array_get(conns, 499), "start_ms")),
		      502);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(json_array_get(conns, 500), "start_ms")),
		      800);
	ASSERT_EQ_INT((int)json_integer_value(json_object_get(json_array_get(conns, 999), "start_ms")),
		      1299);
	ASSERT_TRUE(json_object_get(json_array_get(conns, 0), "extra") == NULL);
	json_decref(o);
	run_net_release(&n);
}

RUN_TESTS(T_(test_nethead_connect), T_(test_nethead_plain), T_(test_nethead_refusals),
	  T_(test_nethead_rewrite), T_(test_netsni), T_(test_netdecide), T_(test_netproxy_connect),
	  T_(test_netproxy_serve), T_(test_netproxy_stop_ends_tunnels),
	  T_(test_netproxy_slow_clients), T_(test_netconfine), T_(test_netproxy_main),
	  T_(test_netproxy_main_listen_from), T_(test_netdecide_denied_text), T_(test_run_net_records))
