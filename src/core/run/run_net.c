/* SPDX-License-Identifier: MIT */
#include "core/run/run_net.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/net/netproxy.h"
#include "sandbox/sandbox.h"

#define RUN_NET_LINE_MAX  8192 /* a record line longer than this is dropped */
#define RUN_NET_STOP_MS	  2000 /* for the proxy's last records after the run */
#define STR_(x)		  #x
#define STR(x)		  STR_(x)
#define RUN_NET_PROXY_URL "http://127.0.0.1:" STR(SANDBOX_NET_PROXY_PORT)

static int run_net_set(char ***envp, char ***keys, const char *name, const char *value)
{
	char *entry = NULL;
	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; *envp && (*envp)[i]; i++)
		if (strv_env_entry_is((*envp)[i], name)) {
			free((*envp)[i]);
			(*envp)[i] = entry;
			return 0;
		}
	int r = strv_push(envp, entry);
	free(entry);
	if (r < 0)
		return r;
	return strv_contains(*keys, name) ? 0 : strv_push(keys, name);
}

int run_net_env(char ***envp, char ***keys)
{
	static const char *const names[][2] = {
		{ "HTTP_PROXY", RUN_NET_PROXY_URL },  { "http_proxy", RUN_NET_PROXY_URL },
		{ "HTTPS_PROXY", RUN_NET_PROXY_URL }, { "https_proxy", RUN_NET_PROXY_URL },
		{ "ALL_PROXY", RUN_NET_PROXY_URL },   { "all_proxy", RUN_NET_PROXY_URL },
		{ "NO_PROXY", RUN_NET_NO_PROXY },     { "no_proxy", RUN_NET_NO_PROXY },
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		int r = run_net_set(envp, keys, names[i][0], names[i][1]);
		if (r < 0)
			return r;
	}
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the child between fork() and execve(): async-signal-safe calls only.
 * The four descriptors go to NETPROXY_FD_* by way of numbers above them
 * (a source may sit on a target); everything else above stderr closes;
 * stdin and stdout are /dev/null (stdout is the run's JSON line). */
static _Noreturn void run_net_exec(const int fds[4], char *const argv[])
{
	int high[4];
	sigset_t none;

	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(127);
	for (int i = 0; i < 4; i++)
		if ((high[i] = fcntl(fds[i], F_DUPFD, 64)) < 0)
			_exit(127);
	for (int i = 0; i < 4; i++)
		if (dup2(high[i], NETPROXY_FD_CONFIG + i) < 0)
			_exit(127);
	(void)syscall(SYS_close_range, NETPROXY_FD_RECORDS + 1, ~0U, 0U);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
		_exit(127);
	char *const envp[] = { NULL };
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

int run_net_start(struct run_net *n, char *const *allow, char *const *deny, uint64_t start_ns,
		  struct error *err)
{
	int config[2] = { -1, -1 }, carrier[2] = { -1, -1 }, stop[2] = { -1, -1 },
	    records[2] = { -1, -1 };
	int r = 0;

	*n = (struct run_net){ .started = true, .stop_fd = -1, .records_fd = -1, .listen_to = -1 };
	cleanup_free char *doc = netproxy_config_json(allow, deny);
	n->first = json_array();
	n->last = json_array();
	if (!doc || !n->first || !n->last)
		return error_set(err, ENOMEM, "out of memory");
	if (pipe2(config, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, carrier) < 0 ||
	    pipe2(stop, O_CLOEXEC) < 0 || pipe2(records, O_CLOEXEC) < 0) {
		r = error_set_errno(err, errno, "cannot make the network proxy's pipes");
		goto out;
	}
	char parent[24], start[24];
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	snprintf(start, sizeof(start), "%" PRIu64, start_ns);
	char *const argv[] = { (char *)"airlock", (char *)"__netproxy", parent, start, NULL };
	const int child[4] = { config[0], carrier[1], stop[0], records[1] };
	pid_t pid = fork();
	if (pid < 0) {
		r = error_set_errno(err, errno, "cannot start the network proxy");
		goto out;
	}
	if (pid == 0)
		run_net_exec(child, argv);
	n->pid = pid;
	close_fd(&config[0]);
	close_fd(&carrier[1]);
	close_fd(&stop[0]);
	close_fd(&records[1]);
	/* The proxy reads it at once (a full pipe waits for it); a proxy that
	 * is gone already leaves EPIPE, SIGPIPE being ignored. */
	r = fd_write_all(config[1], doc, strlen(doc));
	close_fd(&config[1]);
	if (r < 0) {
		r = error_set(err, -r, "cannot configure the network proxy: %s", strerror(-r));
		goto out;
	}
	(void)fcntl(records[0], F_SETFL, O_NONBLOCK);
	n->records_fd = TAKE_FD(records[0]);
	n->stop_fd = TAKE_FD(stop[1]);
	n->listen_to = TAKE_FD(carrier[0]);
	return 0;
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&config[i]);
		close_fd(&carrier[i]);
		close_fd(&stop[i]);
		close_fd(&records[i]);
	}
	return r;
}

/* Adds c to the summary entry e: one more connection, its bytes. */
static void run_net_add(json_t *e, json_t *c)
{
	static const char *const keys[] = { "connections", "bytes_out", "bytes_in" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(e, keys[i]);
		if (!v)
			continue;
		json_int_t add = i == 0 ? 1 : json_integer_value(json_object_get(c, keys[i]));
		json_int_t sum = json_integer_value(v);
		(void)json_integer_set(v, sum > INT64_MAX - add ? INT64_MAX : sum + add);
	}
}

/* Counts one checked record c in the summary: every connection, not only
 * the kept ones, so a refused host among thousands is still named. */
static void run_net_summarise(struct run_net *n, json_t *c)
{
	bool allowed = json_is_true(json_object_get(c, "allowed"));
	json_t **arr = allowed ? &n->allowed : &n->denied;
	json_t **index = allowed ? &n->allowed_index : &n->denied_index;
	uint64_t *unlisted = allowed ? &n->allowed_unlisted : &n->denied_unlisted;
	json_t *host = json_object_get(c, "host"), *port = json_object_get(c, "port");
	json_t *rule = json_object_get(c, "rule"), *pattern = json_object_get(c, "pattern");

	if (!*arr)
		*arr = json_array();
	if (!*index)
		*index = json_object();
	if (!*arr || !*index)
		return;
	/* host and rule are at most 512 bytes (run_net_keep()) */
	char key[1100];
	snprintf(key, sizeof(key), "%s\n%lld\n%s", json_string_value(host),
		 (long long)json_integer_value(port), allowed ? "" : json_string_value(rule));
	json_t *e = json_object_get(*index, key);
	if (!e) {
		if (json_array_size(*arr) >= RUN_NET_SUMMARY_MAX) {
			(*unlisted)++;
			return;
		}
		e = allowed ? json_pack("{s:O, s:O, s:i, s:i, s:i}", "host", host, "port", port,
					"connections", 0, "bytes_out", 0, "bytes_in", 0)
			    : json_pack("{s:O, s:O, s:O, s:i}", "host", host, "port", port, "rule",
					rule, "connections", 0);
		/* a refusal's deciding pattern: the first one seen */
		if (e && !allowed && pattern)
			json_object_set(e, "pattern", pattern);
		if (!e || json_array_append_new(*arr, e) < 0 || json_object_set(*index, key, e) < 0)
			return;
	}
	run_net_add(e, c);
}

/* One record line, kept if it is a connection record whose fields have
 * the types the proxy writes (the proxy handles the command's bytes: what
 * it says is checked, not trusted); rebuilt from those fields only. */
static void run_net_keep(struct run_net *n, const char *line, size_t len)
{
	json_t *in = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(in)) {
		json_decref(in);
		return;
	}
	/* The proxy's last line: how many connections it took. */
	json_t *acc = json_object_get(in, "accepted");
	if (json_object_size(in) == 1 && json_is_integer(acc) && json_integer_value(acc) >= 0) {
		n->accepted = (uint64_t)json_integer_value(acc);
		n->have_accepted = true;
		json_decref(in);
		return;
	}
	static const char *const strs[] = { "host", "method", "rule", "address", "pattern", "sni" };
	static const char *const ints[] = { "port", "bytes_out", "bytes_in", "start_ms", "duration_ms" };
	json_t *out = json_object();
	bool ok = out && json_is_boolean(json_object_get(in, "allowed"));
	if (ok)
		json_object_set(out, "allowed", json_object_get(in, "allowed"));
	for (size_t i = 0; ok && i < ARRAY_SIZE(strs); i++) {
		json_t *v = json_object_get(in, strs[i]);
		if (!v)
			ok = i >= 3; /* host, method and rule are always there */
		else if (!json_is_string(v) || json_string_length(v) > 512)
			ok = false;
		else
			json_object_set(out, strs[i], v);
	}
	for (size_t i = 0; ok && i < ARRAY_SIZE(ints); i++) {
		json_t *v = json_object_get(in, ints[i]);
		ok = json_is_integer(v) && json_integer_value(v) >= 0;
		if (ok)
			json_object_set(out, ints[i], v);
	}
	json_decref(in);
	if (!ok) {
		json_decref(out);
		return;
	}
	n->total++;
	run_net_summarise(n, out);
	if (json_array_size(n->first) < RUN_NET_KEEP_FIRST) {
		json_array_append_new(n->first, out);
	} else if (json_array_size(n->last) < RUN_NET_KEEP_LAST) {
		json_array_append_new(n->last, out);
	} else {
		json_array_set_new(n->last, n->last_next, out);
		n->last_next = (n->last_next + 1) % RUN_NET_KEEP_LAST;
	}
}

bool run_net_read(struct run_net *n)
{
	char buf[16384];

	if (n->records_fd < 0)
		return false;
	for (;;) {
		ssize_t got = read(n->records_fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return true;
		if (got <= 0) {
			n->eof_realtime_ns = clock_realtime_ns();
			close_fd(&n->records_fd);
			return false;
		}
		for (ssize_t i = 0; i < got;) {
			const char *nl = memchr(buf + i, '\n', (size_t)(got - i));
			size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)(got - i);
			if (n->n_partial + take <= RUN_NET_LINE_MAX) {
				char *p = realloc(n->partial, n->n_partial + take + 1);
				if (p) {
					memcpy(p + n->n_partial, buf + i, take);
					n->partial = p;
				}
			}
			/* too long: counted past the limit, so it is dropped */
			n->n_partial += take;
			i += (ssize_t)take;
			if (nl) {
				if (n->partial && n->n_partial <= RUN_NET_LINE_MAX)
					run_net_keep(n, n->partial, n->n_partial);
				n->n_partial = 0;
				i++;
			}
		}
	}
}

void run_net_stop(struct run_net *n, uint64_t ended_realtime_ns)
{
	if (!n->pid)
		return;
	/* The record pipe ended before the command did: the proxy was gone
	 * (killed, or failed at its start) while the run could still use it;
	 * its port went with it, so later connects were refused. */
	if (n->records_fd < 0 && n->eof_realtime_ns && n->eof_realtime_ns < ended_realtime_ns)
		n->died = true;
	/* The listening socket still queued on our socket (SIOCOUTQ: what the
	 * peer has not read): the proxy never took it, so it accepted nothing
	 * and has nothing to record. No wait for it then (a short run ends
	 * before the proxy's start: its libraries, its confinement). */
	int queued = 0;
	bool idle = n->listen_to >= 0 && ioctl(n->listen_to, SIOCOUTQ, &queued) == 0 && queued > 0;
	close_fd(&n->listen_to); /* a proxy still waiting for its socket: none comes */
	close_fd(&n->stop_fd);
	uint64_t deadline = idle ? 0 : clock_monotonic_ns() + RUN_NET_STOP_MS * 1000000ULL;
	while (n->records_fd >= 0) {
		uint64_t now = clock_monotonic_ns();
		if (now >= deadline)
			break;
		struct pollfd p = { .fd = n->records_fd, .events = POLLIN };
		int ms = (int)((deadline - now) / 1000000) + 1;
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			break;
		(void)run_net_read(n);
	}
	(void)kill(n->pid, SIGKILL);
	/* ECHILD: the supervisor reaped it already, killing what the run left */
	while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
		;
	n->pid = 0;
	close_fd(&n->records_fd);
}

json_t *run_net_json(const struct run_net *n, char *const *allow, char *const *deny)
{
	json_t *conns = json_array();
	for (size_t i = 0; conns && n->first && i < json_array_size(n->first); i++)
		json_array_append(conns, json_array_get(n->first, i));
	size_t m = n->last ? json_array_size(n->last) : 0;
	for (size_t i = 0; conns && i < m; i++)
		json_array_append(conns, json_array_get(n->last, (n->last_next + i) % m));
	uint64_t kept = conns ? json_array_size(conns) : 0;
	json_t *a = json_array(), *d = json_array();
	for (size_t i = 0; a && allow && allow[i]; i++)
		json_array_append_new(a, json_string(allow[i]));
	for (size_t i = 0; d && deny && deny[i]; i++)
		json_array_append_new(d, json_string(deny[i]));
	json_t *summary = json_pack("{s:o*, s:I, s:o*, s:I}", "denied",
				    n->denied ? json_deep_copy(n->denied) : json_array(),
				    "denied_unlisted", (json_int_t)n->denied_unlisted, "allowed",
				    n->allowed ? json_deep_copy(n->allowed) : json_array(),
				    "allowed_unlisted", (json_int_t)n->allowed_unlisted);
	json_t *o =
		json_pack("{s:s, s:s, s:o*, s:o*, s:o*, s:I, s:o*}", "mode", "allowlist", "proxy",
			  n->died ? "died" : "ran", "allow", a, "deny", d, "connections", conns,
			  "connections_dropped", (json_int_t)(n->total - kept), "summary", summary);
	/* Connections the proxy took whose records never came (it was
	 * killed first): cut short, their bytes unknown. */
	if (o && n->have_accepted && n->accepted > n->total)
		json_object_set_new(o, "connections_unrecorded",
				    json_integer((json_int_t)(n->accepted - n->total)));
	return o;
}

void run_net_release(struct run_net *n)
{
	if (!n->started)
		return;
	if (n->pid) {
		(void)kill(n->pid, SIGKILL);
		while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
			;
		n->pid = 0;
	}
	close_fd(&n->stop_fd);
	close_fd(&n->records_fd);
	close_fd(&n->listen_to);
	free(n->partial);
	n->partial = NULL;
	json_decref(n->first);
	json_decref(n->last);
	n->first = n->last = NULL;
	json_decref(n->denied);
	json_decref(n->denied_index);
	json_decref(n->allowed);
	json_decref(n->allowed_index);
	n->denied = n->denied_index = n->allowed = n->allowed_index = NULL;
}
