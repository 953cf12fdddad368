/* SPDX-License-Identifier: MIT */
#include "core/net/netproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/fdpass.h"
#include "basic/fileio.h"
#include "basic/cleanup.h"
#include "basic/strv.h"
#include "core/net/netconfine.h"
#include "core/net/nethead.h"
#include "core/net/netsni.h"

#define NETPROXY_CHUNK	  (64 * 1024) /* a pipe's default capacity; the buffer's size */
#define NETPROXY_PIPE_BIG (1024 * 1024) /* a bulk direction's pipe */
/* A tunnel one of whose directions has ended (a client's EOF after its
 * request): the answer may still come back, within this idle bound. */
#define NETPROXY_HALF_IDLE_MS 30000

/* The stop descriptor of netproxy_serve() (-1: none): every wait of a
 * worker watches it too, so at the run's end each connection still open
 * ends at once and writes its record with the bytes so far, well within
 * the supervisor's RUN_NET_STOP_MS. Set before the first worker starts,
 * reset after the last has ended. */
static int netproxy_stop_fd = -1;

static uint64_t netproxy_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Waits until fd is readable or the deadline passes: 1, 0 at the deadline
 * or when the proxy is stopping. */
static int netproxy_wait(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = netproxy_now_ns();
		if (now >= deadline_ns)
			return 0;
		struct pollfd p[2] = { { .fd = fd, .events = events },
				       { .fd = netproxy_stop_fd, .events = POLLIN } };
		int r = poll(p, 2, (int)((deadline_ns - now + 999999) / 1000000));
		if (r > 0 && p[1].revents)
			return 0;
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int netproxy_write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void netproxy_answer(int fd, int status, const char *message)
{
	const char *reason = status == 400   ? "Bad Request"
			     : status == 403 ? "Forbidden"
			     : status == 431 ? "Request Header Fields Too Large"
			     : status == 501 ? "Not Implemented"
			     : status == 502 ? "Bad Gateway"
			     : status == 504 ? "Gateway Timeout"
					     : "Error";
	char buf[1024];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
			 status, reason, strlen(message) + 1, message);
	if (n > 0)
		(void)netproxy_write_all(fd, buf,
					 (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static bool netproxy_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return false;
	return true;
}

static void netproxy_refuse(int fd, const struct netdecision *d, struct netconn_record *rec)
{
	rec->allowed = false;
	rec->rule = d->rule;
	snprintf(rec->pattern, sizeof(rec->pattern), "%s", d->pattern);
	if (d->address[0]) /* net_address: the address refused */
		snprintf(rec->address, sizeof(rec->address), "%s", d->address);
	netproxy_answer(fd, d->status, d->message);
}

/* Connects to addr within the deadline; the socket, or -errno. */
static int netproxy_connect(const struct sockaddr_storage *addr, uint64_t deadline_ns)
{
	socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_in);
	cleanup_close int fd =
		socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)addr, len) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		int w = netproxy_wait(fd, POLLOUT, deadline_ns);
		if (w <= 0)
			return w < 0 ? w : -ETIMEDOUT;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr)
			return soerr ? -soerr : -errno;
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* Copies both ways until both sides have closed, nothing moved for
 * idle_ms (NETPROXY_HALF_IDLE_MS at most once one side has closed its
 * direction), or the proxy is stopping; counts the bytes. out_budget (NULL: no bound): how many more
 * bytes the client may send upstream; past it the client's direction is
 * closed, so a second request pipelined behind the first (another Host on
 * the same server) goes nowhere. */
/* One chunk of one direction through a pipe by splice(2): the bytes go
 * from socket to socket without a copy through this process; a bulk
 * direction's pipe is grown to 1 MiB (netproxy_tunnel()), so a step moves
 * what the socket holds, up to 1 MiB, for one poll and two splices. The number
 * moved, 0 at EOF, -1 when reading failed, -3 when writing did; -2 when
 * nothing was there after all (EAGAIN). SIGPIPE is ignored by the proxy
 * (netproxy_serve()). */
static ssize_t netproxy_splice(int from, const int pipe_fd[2], int to, size_t want)
{
	ssize_t n = splice(from, NULL, pipe_fd[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -2 : -1;
	/* A full pipe says more is coming: SPLICE_F_MORE lets TCP hold a
	 * partial segment for it. */
	unsigned more = (size_t)n == want ? SPLICE_F_MORE : 0;
	for (ssize_t left = n; left > 0;) {
		ssize_t m = splice(pipe_fd[0], NULL, to, NULL, (size_t)left, SPLICE_F_MOVE | more);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			return -3; /* the pipe is dropped with what it holds */
		left -= m;
	}
	return n;
}

static ssize_t netproxy_copy(int from, char *buf, int to, size_t want)
{
	ssize_t n = recv(from, buf, want, 0);
	if (n < 0)
		return errno == EINTR ? -2 : -1;
	if (n > 0 && netproxy_write_all(to, buf, (size_t)n) < 0)
		return -3;
	return n;
}

static void netproxy_tunnel(int client, int upstream, int idle_ms, uint64_t *out_budget,
			    struct netconn_record *rec)
{
	/* A pipe per direction for splice(2); without them (descriptors ran
	 * out), a buffer. */
	int pipes[2][2] = { { -1, -1 }, { -1, -1 } };
	bool spliced = pipe2(pipes[0], O_CLOEXEC) == 0 && pipe2(pipes[1], O_CLOEXEC) == 0;
	cleanup_free char *buf = spliced ? NULL : malloc(NETPROXY_CHUNK);
	bool open_in = true, open_out = true; /* client->upstream, upstream->client */
	/* What a splice asks for per direction: the pipe's capacity (the
	 * default 64 KiB), grown to NETPROXY_PIPE_BIG the first time a
	 * direction fills it (a bulk transfer: a small exchange never costs
	 * pipe quota); a refusal (pipe-max-size, the user's pipe quota) keeps
	 * the default, quietly. */
	size_t chunk[2] = { NETPROXY_CHUNK, NETPROXY_CHUNK };
	bool grown[2] = { false, false };

	while ((spliced || buf) && (open_in || open_out)) {
		struct pollfd p[3] = { { .fd = open_in ? client : -1, .events = POLLIN },
				       { .fd = open_out ? upstream : -1, .events = POLLIN },
				       { .fd = netproxy_stop_fd, .events = POLLIN } };
		int wait_ms = open_in && open_out		? idle_ms
			      : idle_ms < NETPROXY_HALF_IDLE_MS ? idle_ms
								: NETPROXY_HALF_IDLE_MS;
		int r = poll(p, 3, wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || p[2].revents)
			break;
		bool failed = false;
		for (int i = 0; i < 2 && !failed; i++) {
			if (!p[i].revents)
				continue;
			int from = i == 0 ? client : upstream, to = i == 0 ? upstream : client;
			size_t want = chunk[i];
			if (i == 0 && out_budget && *out_budget < want)
				want = (size_t)*out_budget;
			if (want == 0) { /* the request is all sent: nothing more goes up */
				(void)shutdown(upstream, SHUT_WR);
				open_in = false;
				continue;
			}
			ssize_t n = spliced ? netproxy_splice(from, pipes[i], to, want)
					    : netproxy_copy(from, buf, to, want);
			if (n == -2)
				continue;
			if (i == 0 && out_budget && n > 0)
				*out_budget -= (uint64_t)n;
			if (n <= 0) {
				(void)shutdown(to, SHUT_WR);
				if (i == 0)
					open_in = false;
				else
					open_out = false;
				failed = n == -1; /* a write that failed ends its direction only */
				continue;
			}
			if (i == 0)
				rec->bytes_out += (uint64_t)n;
			else
				rec->bytes_in += (uint64_t)n;
			if (spliced && !grown[i] && (size_t)n == chunk[i]) {
				grown[i] = true;
				int sz = fcntl(pipes[i][1], F_SETPIPE_SZ, NETPROXY_PIPE_BIG);
				if (sz > 0)
					chunk[i] = (size_t)sz;
			}
		}
		if (failed)
			break;
	}
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (pipes[i][j] >= 0)
				close(pipes[i][j]);
}

static void netproxy_do(int client, const struct netallow *n, const struct netproxy_limits *lim,
			struct netconn_record *rec)
{
	struct error err = { 0 };
	struct netdecision d = { 0 };
	struct nethead_request req;
	cleanup_free struct nethead *head = malloc(sizeof(*head));
	uint64_t deadline = netproxy_now_ns() + (uint64_t)lim->head_ms * 1000000ULL;
	char chunk[4096];
	int r = -EAGAIN;

	rec->rule = "net_bad_request";
	if (!head || nethead_load(&err) < 0 || netsni_load(&err) < 0) {
		netproxy_answer(client, 502, "airlock: the proxy cannot parse requests here");
		return;
	}
	nethead_init(head);
	while (r == -EAGAIN) {
		int w = netproxy_wait(client, POLLIN, deadline);
		if (w <= 0) {
			rec->rule = "net_head_timeout";
			return;
		}
		ssize_t got = recv(client, chunk, sizeof(chunk), 0);
		if (got <= 0)
			return;
		r = nethead_feed(head, chunk, (size_t)got, &err);
	}
	if (r < 0) {
		netproxy_answer(client, r == -E2BIG ? 431 : 400, "airlock: not a proxy request");
		return;
	}
	r = nethead_request(head, &req, &err);
	/* A refused head is recorded by what it parsed (its URL's authority);
	 * a host of other than printable ASCII (which http-parser's URL
	 * parser does not pass anyway) is left out rather than lose the
	 * record (netconn_record_json() takes UTF-8 only). */
	if (netproxy_printable(req.host))
		snprintf(rec->host, sizeof(rec->host), "%s", req.host);
	snprintf(rec->method, sizeof(rec->method), "%s", req.method);
	rec->port = req.port;
	if (r < 0) {
		netproxy_answer(client, 400, err.msg);
		return;
	}
	netdecide_request(n, &req, &d);
	if (!d.allowed) {
		netproxy_refuse(client, &d, rec);
		return;
	}
	snprintf(rec->pattern, sizeof(rec->pattern), "%s", d.pattern);
	cleanup_free char *rewritten = NULL;
	size_t rewritten_len = 0;
	if (!req.is_connect && nethead_rewrite(head, &req, &rewritten, &rewritten_len, &err) < 0) {
		rec->rule = "net_bad_request";
		netproxy_answer(client, 400, err.msg);
		return;
	}
	/* A plain request's body is bounded by its Content-Length, so that
	 * nothing after it reaches the server; a chunked body is not. */
	if (!req.is_connect && head->parser.uses_transfer_encoding) {
		rec->rule = "net_bad_request";
		netproxy_answer(client, 501,
				"airlock: a chunked request body through the proxy is not supported");
		return;
	}
	/* Resolved here, on the host's side, after the check by name. */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *list = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%u", req.port);
	struct sockaddr_storage addr;
	/* The name as the matcher normalised it: without a trailing dot
	 * (`sink.test.`), which the resolver's files would not match. */
	char name[sizeof(req.host)];
	snprintf(name, sizeof(name), "%s", req.host);
	size_t name_len = strlen(name);
	if (name_len > 1 && name[name_len - 1] == '.')
		name[name_len - 1] = '\0';
	if (getaddrinfo(name, port, &hints, &list) != 0)
		list = NULL;
	bool ok = netdecide_address(n, &req, list, &addr, &d);
	if (list)
		freeaddrinfo(list);
	if (!ok) {
		netproxy_refuse(client, &d, rec);
		return;
	}
	char shown[INET6_ADDRSTRLEN] = "";
	const void *a = addr.ss_family == AF_INET6
				? (const void *)&((struct sockaddr_in6 *)&addr)->sin6_addr
				: (const void *)&((struct sockaddr_in *)&addr)->sin_addr;
	inet_ntop(addr.ss_family, a, shown, sizeof(shown));
	snprintf(rec->address, sizeof(rec->address), "%s", shown);
	cleanup_close int upstream =
		netproxy_connect(&addr, netproxy_now_ns() + (uint64_t)lim->connect_ms * 1000000ULL);
	if (upstream < 0) {
		rec->allowed = false;
		rec->rule = "net_connect_failed";
		netproxy_answer(client, 502, "airlock: the upstream connection failed");
		return;
	}
	if (!req.is_connect) {
		/* The head rewritten, then whatever followed it (the body), then
		 * both ways until either side closes: "Connection: close" asks
		 * the server to end after one answer. */
		uint64_t body =
			head->parser.content_length == ULLONG_MAX ? 0 : head->parser.content_length;
		size_t rest = head->len - head->head_len;
		if (rest > body)
			rest = (size_t)body;
		body -= rest;
		rec->allowed = true;
		rec->rule = "allow";
		if (netproxy_write_all(upstream, rewritten, rewritten_len) < 0 ||
		    netproxy_write_all(upstream, head->buf + head->head_len, rest) < 0)
			return;
		rec->bytes_out += rewritten_len + rest;
		netproxy_tunnel(client, upstream, lim->idle_ms, &body, rec);
		return;
	}
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	if (netproxy_write_all(client, established, sizeof(established) - 1) < 0)
		return;
	/* The ClientHello, before any byte goes upstream: bytes fed after the
	 * head (a client that did not wait for 200) count too. */
	size_t have = head->len - head->head_len;
	cleanup_free char *hello = malloc(NETHEAD_MAX);
	if (!hello)
		return;
	memcpy(hello, head->buf + head->head_len, have);
	char sni[NETSNI_NAME_MAX + 1] = "";
	deadline = netproxy_now_ns() + (uint64_t)lim->head_ms * 1000000ULL;
	r = have ? netsni_parse(hello, have, sni, &err) : -EAGAIN;
	while (r == -EAGAIN && have < NETHEAD_MAX) {
		if (netproxy_wait(client, POLLIN, deadline) <= 0)
			break;
		ssize_t got = recv(client, hello + have, NETHEAD_MAX - have, 0);
		if (got <= 0)
			break;
		have += (size_t)got;
		r = netsni_parse(hello, have, sni, &err);
	}
	snprintf(rec->sni, sizeof(rec->sni), "%s", r == 0 ? sni : "");
	d = (struct netdecision){ 0 };
	netdecide_sni(&req, r == 0 ? sni : NULL, &d);
	if (!d.allowed) {
		rec->allowed = false;
		rec->rule = d.rule;
		return; /* answered 200 already: closed */
	}
	rec->allowed = true;
	rec->rule = "allow";
	if (netproxy_write_all(upstream, hello, have) < 0)
		return;
	rec->bytes_out += have;
	netproxy_tunnel(client, upstream, lim->idle_ms, NULL, rec);
}

void netproxy_handle(int client_fd, const struct netallow *n, const struct netproxy_limits *lim,
		     uint64_t start_ns, struct netconn_record *rec)
{
	uint64_t t0 = netproxy_now_ns();

	*rec = (struct netconn_record){ 0 };
	rec->start_ms = t0 > start_ns ? (t0 - start_ns) / 1000000 : 0;
	netproxy_do(client_fd, n, lim, rec);
	rec->duration_ms = (netproxy_now_ns() - t0) / 1000000;
}

struct netproxy_server {
	const struct netallow *allow;
	const struct netproxy_limits *lim;
	uint64_t start_ns;
	int record_fd;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned active;
};

struct netproxy_job {
	struct netproxy_server *server;
	int fd;
};

static uint64_t netproxy_ms_since(uint64_t start_ns)
{
	uint64_t now = netproxy_now_ns();
	return now > start_ns ? (now - start_ns) / 1000000 : 0;
}

/* One JSON line per connection, whole: lines from threads never mix. o
 * is taken. */
static void netproxy_emit_json(struct netproxy_server *s, json_t *o)
{
	char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n';
	pthread_mutex_lock(&s->lock);
	for (size_t off = 0; off < n + 1;) {
		ssize_t w = write(s->record_fd, line + off, n + 1 - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	pthread_mutex_unlock(&s->lock);
	free(line);
}

static void netproxy_emit(struct netproxy_server *s, const struct netconn_record *rec)
{
	netproxy_emit_json(s, netconn_record_json(rec));
}

static void netproxy_too_many(struct netproxy_server *s)
{
	struct netconn_record rec = { .rule = "net_too_many",
				      .start_ms = netproxy_ms_since(s->start_ns) };
	snprintf(rec.method, sizeof(rec.method), "-");
	netproxy_emit(s, &rec);
}

static void *netproxy_worker(void *arg)
{
	struct netproxy_job *job = arg;
	struct netproxy_server *s = job->server;
	struct netconn_record rec;

	netproxy_handle(job->fd, s->allow, s->lim, s->start_ns, &rec);
	/* Recorded before the connection is closed: a refused client reads
	 * its answer to the end only after this. (A tunnel's client may see
	 * the upstream's end, passed on, a moment before.) */
	netproxy_emit(s, &rec);
	close(job->fd);
	free(job);
	pthread_mutex_lock(&s->lock);
	if (--s->active == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int netproxy_serve(int listen_fd, int stop_fd, int record_fd, const struct netallow *n,
		   const struct netproxy_limits *lim, uint64_t start_ns)
{
	struct netproxy_server s = { .allow = n, .lim = lim, .start_ns = start_ns, .record_fd = record_fd };
	pthread_attr_t attr;
	int r = 0;

	/* A peer gone mid-write answers EPIPE, never kills the proxy (splice(2)
	 * has no MSG_NOSIGNAL). */
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.idle, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	netproxy_stop_fd = stop_fd;
	uint64_t accepted = 0, paused_until = 0;
	for (;;) {
		uint64_t now = netproxy_now_ns();
		bool paused = now < paused_until;
		struct pollfd p[2] = { { .fd = paused ? -1 : listen_fd, .events = POLLIN },
				       { .fd = stop_fd, .events = POLLIN } };
		if (poll(p, 2, paused ? (int)((paused_until - now) / 1000000) + 1 : -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			r = -EPIPE;
			break;
		}
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* Out of descriptors (or memory), which the bound on
			 * connections at once (netproxy_main()) leaves for
			 * little else: the listener still readable, so it is
			 * left out of the poll for 100 ms, never a busy loop;
			 * the connection waits in the backlog meanwhile. */
			paused_until = netproxy_now_ns() + 100 * 1000000ULL;
			continue;
		}
		if (fd < 0)
			continue; /* the client gave up */
		accepted++;
		pthread_mutex_lock(&s.lock);
		bool room = s.active <
			    (lim->max_connections ? lim->max_connections : NETPROXY_MAX_CONNECTIONS);
		if (room)
			s.active++;
		pthread_mutex_unlock(&s.lock);
		struct netproxy_job *job = room ? malloc(sizeof(*job)) : NULL;
		pthread_t t;
		if (job) {
			*job = (struct netproxy_job){ .server = &s, .fd = fd };
			if (pthread_create(&t, &attr, netproxy_worker, job) == 0)
				continue;
			free(job);
		}
		if (room) {
			pthread_mutex_lock(&s.lock);
			s.active--;
			pthread_mutex_unlock(&s.lock);
		}
		close(fd);
		netproxy_too_many(&s);
	}
	/* How many connections were taken, first: a record the supervisor
	 * then misses (killed before a worker wrote it) is counted on the
	 * receipt as cut short. */
	netproxy_emit_json(&s, json_pack("{s:I}", "accepted", (json_int_t)accepted));
	/* The threads use s: wait for them. On stop (stop_fd readable) each
	 * ends at once and writes its record; on a listener's failure they
	 * end at their own deadlines. */
	pthread_mutex_lock(&s.lock);
	while (s.active > 0)
		pthread_cond_wait(&s.idle, &s.lock);
	pthread_mutex_unlock(&s.lock);
	netproxy_stop_fd = -1;
	pthread_attr_destroy(&attr);
	pthread_cond_destroy(&s.idle);
	pthread_mutex_destroy(&s.lock);
	return r;
}

char *netproxy_config_json(char *const *allow, char *const *deny)
{
	json_t *a = json_array(), *d = json_array();

	for (size_t i = 0; a && allow && allow[i]; i++)
		json_array_append_new(a, json_string(allow[i]));
	for (size_t i = 0; d && deny && deny[i]; i++)
		json_array_append_new(d, json_string(deny[i]));
	json_t *o = a && d ? json_pack("{s:o, s:o}", "allow", a, "deny", d) : NULL;
	if (!o) {
		json_decref(a);
		json_decref(d);
		return NULL;
	}
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

/* The lists of the config document, as netallow_compile() takes them:
 * the document is under 1 MiB (E2BIG from that size on). */
#define NETPROXY_CONFIG_MAX ((1 << 20) - 1)
static int netproxy_read_config(int fd, struct netallow *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = fd_read_capped(fd, NETPROXY_CONFIG_MAX, &text, &n, err);
	if (r == -EFBIG)
		return error_set(err, E2BIG, "the proxy's configuration is over 1 MiB");
	if (r == -ENOMEM)
		return r; /* "out of memory" */
	if (r < 0)
		return error_set(err, -r, "the proxy's configuration cannot be read");
	json_error_t jerr;
	json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return error_set(err, EINVAL, "the proxy's configuration: %s", jerr.text);
	char **lists[2] = { NULL, NULL };
	static const char *const keys[2] = { "allow", "deny" };
	r = 0;
	for (int k = 0; r == 0 && k < 2; k++) {
		json_t *arr = json_object_get(o, keys[k]), *item;
		size_t i;
		if (!json_is_array(arr)) {
			r = error_set(err, EINVAL, "the proxy's configuration has no '%s' list",
				      keys[k]);
			break;
		}
		json_array_foreach(arr, i, item) {
			if (!json_is_string(item) || strv_push(&lists[k], json_string_value(item)) < 0) {
				r = error_set(err, EINVAL, "the proxy's configuration: '%s[%zu]'",
					      keys[k], i);
				break;
			}
		}
	}
	json_decref(o);
	if (r == 0)
		r = netallow_compile(lists[0], lists[1], ret, err);
	strv_free(lists[0]);
	strv_free(lists[1]);
	return r;
}

/* The descriptor limit raised to its hard limit; connections at once
 * bounded so that each has the six it may need (client, upstream, two
 * pipes), NETPROXY_FD_RESERVE kept for the rest (libraries, resolver,
 * the spare). */
#define NETPROXY_FD_RESERVE 32
static unsigned netproxy_max_connections(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 1;
	}
	rlim_t room =
		rl.rlim_cur > NETPROXY_FD_RESERVE + 6 ? (rl.rlim_cur - NETPROXY_FD_RESERVE) / 6 : 1;
	return room < NETPROXY_MAX_CONNECTIONS ? (unsigned)room : NETPROXY_MAX_CONNECTIONS;
}

int netproxy_main(const struct netproxy_fds *fds, pid_t parent, uint64_t start_ns, struct error *err)
{
	struct netallow n;
	bool landlock = false;
	/* The bounding set at once, even before any connection: a few
	 * system calls. */
	int r = netconfine_bounding(err);

	if (r < 0)
		return r;
	r = netproxy_read_config(fds->config, &n, err);
	if (r < 0)
		return r;
	int listen_fd = fds->listen;
	if (listen_fd < 0) {
		/* Connects made meanwhile wait in the socket's backlog. */
		struct pollfd p[2] = { { .fd = fds->listen_from, .events = POLLIN },
				       { .fd = fds->stop, .events = POLLIN } };
		while (poll(p, 2, -1) < 0 && errno == EINTR)
			;
		listen_fd = (p[0].revents & POLLIN) ? fdpass_receive(fds->listen_from) : -1;
		if (listen_fd < 0) {
			netallow_release(&n);
			return 0; /* no quarantine, nothing to serve */
		}
	}
	/* Nothing is loaded nor confined until a connection waits in the
	 * backlog (or the listener fails): a run that never connects (most
	 * runs, `run -- true`) does not pay for libhttp-parser, libssl and
	 * the confinement on its critical path, on a machine whose cores its
	 * command and its init need. No byte of a client is read before
	 * netconfine_apply(): until then this process only waits on these two
	 * descriptors. */
	struct pollfd p[2] = { { .fd = listen_fd, .events = POLLIN },
			       { .fd = fds->stop, .events = POLLIN } };
	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	if (p[1].revents) {
		netallow_release(&n);
		return 0; /* stopped before any connection: nothing to record */
	}
	/* Loaded before Landlock: the libraries are read now. */
	r = nethead_load(err);
	if (r == 0)
		r = netsni_load(err);
	if (r == 0)
		r = netconfine_apply(parent, &landlock, err);
	if (r == 0) {
		struct netproxy_limits lim = { .head_ms = 10000,
					       .connect_ms = 10000,
					       .idle_ms = 300000,
					       .max_connections = netproxy_max_connections() };
		r = netproxy_serve(listen_fd, fds->stop, fds->records, &n, &lim, start_ns);
		if (r < 0)
			error_set(err, -r, "the proxy's listening socket failed");
	}
	netallow_release(&n);
	return r;
}
