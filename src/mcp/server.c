/* SPDX-License-Identifier: MIT */
/* `airlock mcp`: the stdio MCP server (docs/mcp.md). One loop polls stdin
 * and the calls in flight; every tools/call and resources request runs in
 * a child process of its own, so that the loop keeps reading while a
 * command runs: notifications/cancelled, or stdin's end, closes the call's
 * cancel pipe, and the run's supervisor ends the command's whole tree as a
 * timeout does (sandbox_config.cancel_fd). The server itself never opens
 * the state directory: its children each open their own store, so no lock
 * descriptor is ever shared between two of them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/macro.h"
#include "core/session/session.h"
#include "core/store/store.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/tools.h"
#include "version.h"

#define MCP_MAX_CALLS	      1 /* in flight: calls run one at a time, in the order received */
#define MCP_MAX_QUEUED	      64
#define MCP_RESULT_MAX	      (64u << 20) /* a child's answer; receipts are bounded far below */
#define MCP_PROGRESS_EVERY_NS (1000ULL * 1000000ULL)
#define MCP_STATELESS	      "2026-07-28"
#define MCP_META_VERSION      "io.modelcontextprotocol/protocolVersion"

/* The revisions initialize accepts, newest first; any other gets the first. */
static const char *const mcp_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

struct mcp_call {
	json_t *id;
	pid_t pid;
	int result_fd; /* the child's answer; -1 at EOF */
	int cancel_fd; /* write end of the child's cancel pipe; -1 once closed */
	char *buf;
	size_t len, cap;
	bool overflow;
	bool cancelled; /* by notifications/cancelled: no answer is sent */
	json_t *progress_token;
	uint64_t started_ns, next_progress_ns;
};

/* What a forked call computes: a whole response (id and all). */
struct mcp_server;
typedef json_t *mcp_child_fn(struct mcp_server *s, json_t *id, json_t *params, bool stateless,
			     int cancel_fd);

/* A request waiting for the call before it to end. */
struct mcp_queued {
	json_t *id, *params;
	bool stateless;
	mcp_child_fn *fn;
};

struct mcp_server {
	struct session session;
	struct mcp_tools_ctx tools;
	struct jsonrpc_reader reader;
	bool initialized;
	bool eof; /* stdin ended, or stdout is gone */
	bool out_closed; /* stdout is gone */
	struct mcp_call calls[MCP_MAX_CALLS];
	size_t n_calls;
	/* Calls run one at a time, so that each sees what the one before it
	 * recorded (the gate above all); the others wait here, in order. */
	struct mcp_queued queue[MCP_MAX_QUEUED];
	size_t n_queued;
};

static void mcp_on_eof(struct mcp_server *s);

/* One message, one line. A client that stopped reading ends the session as
 * stdin's end does. */
static void mcp_send(struct mcp_server *s, json_t *msg)
{
	cleanup_free char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	json_decref(msg);
	if (!text || s->out_closed)
		return;
	size_t n = strlen(text);
	char *line = realloc(text, n + 2);
	if (!line)
		return;
	text = line;
	line[n++] = '\n';
	line[n] = '\0';
	for (const char *p = line; n > 0;) {
		ssize_t w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->out_closed = true;
			mcp_on_eof(s);
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void mcp_send_error(struct mcp_server *s, json_t *id, int code, const char *message)
{
	mcp_send(s, jsonrpc_error(id, code, message, NULL));
}

/* A result, marked complete for the stateless revision (its resultType). */
static json_t *mcp_result(json_t *id, json_t *result, bool stateless)
{
	if (result && stateless)
		json_object_set_new(result, "resultType", json_string("complete"));
	return jsonrpc_result(id, result);
}

static json_t *mcp_capabilities(void)
{
	return json_pack("{s:{s:b}, s:{s:b, s:b}}", "tools", "listChanged", 0, "resources",
			 "listChanged", 0, "subscribe", 0);
}

static json_t *mcp_server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", "airlock", "title", "airlock", "version",
			 AIRLOCK_VERSION);
}

static const char mcp_instructions[] =
	"airlock runs commands in a quarantine and leaves a receipt for each. Use the run tool "
	"instead of a shell. While a failure is open, commands that change things are refused "
	"until it closes: fix it and run the failed command again, or run the fix with "
	"fixes=ID. Permits need the human's approval in their terminal; no tool approves.";

static json_t *mcp_initialize(json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = mcp_versions[0];

	for (size_t i = 0; asked && i < ARRAY_SIZE(mcp_versions); i++)
		if (strcmp(asked, mcp_versions[i]) == 0)
			version = mcp_versions[i];
	return json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", version, "capabilities",
			 mcp_capabilities(), "serverInfo", mcp_server_info(), "instructions",
			 mcp_instructions);
}

static json_t *mcp_discover(void)
{
	json_t *versions = json_pack("[s]", MCP_STATELESS);
	for (size_t i = 0; versions && i < ARRAY_SIZE(mcp_versions); i++)
		json_array_append_new(versions, json_string(mcp_versions[i]));
	return json_pack("{s:o, s:o, s:s, s:i, s:s, s:{s:o}}", "supportedVersions", versions,
			 "capabilities", mcp_capabilities(), "instructions", mcp_instructions,
			 "ttlMs", 0, "cacheScope", "private", "_meta",
			 "io.modelcontextprotocol/serverInfo", mcp_server_info());
}

/* tools/call, in the child. */
static json_t *mcp_child_tools_call(struct mcp_server *s, json_t *id, json_t *params,
				    bool stateless, int cancel_fd)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *result =
		mcp_tools_call(&s->tools, name, json_object_get(params, "arguments"), cancel_fd);

	if (!result)
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return mcp_result(id, result, stateless);
}

/* airlock://receipt/ID and airlock://changeset/ID: ID, or 0. */
static uint64_t mcp_resource_id(const char *uri, const char **ret_kind)
{
	static const char *const kinds[] = { "receipt", "changeset" };
	static const char prefix[] = "airlock://";

	if (!uri || strncmp(uri, prefix, strlen(prefix)) != 0)
		return 0;
	uri += strlen(prefix);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		size_t k = strlen(kinds[i]);
		if (strncmp(uri, kinds[i], k) != 0 || uri[k] != '/' || uri[k + 1] < '1' ||
		    uri[k + 1] > '9')
			continue;
		char *end;
		errno = 0;
		unsigned long long id = strtoull(uri + k + 1, &end, 10);
		if (errno || *end || id > INT64_MAX)
			return 0;
		*ret_kind = kinds[i];
		return id;
	}
	return 0;
}

/* resources/list, resources/templates/list and resources/read, in the
 * child: the receipts and dry runs' change sets, by URI. */
static json_t *mcp_child_resources(struct mcp_server *s, json_t *id, json_t *params, bool stateless,
				   int cancel_fd, const char *method)
{
	struct store *store = NULL;
	struct error err = { 0 };
	int r = session_store(&s->session, false, &store, &err);

	(void)cancel_fd;
	if (r < 0 && r != -ENOENT)
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, err.msg, NULL);
	if (strcmp(method, "resources/templates/list") == 0)
		return mcp_result(id,
				  json_pack("{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]}",
					    "resourceTemplates", "uriTemplate",
					    "airlock://receipt/{id}", "name", "receipt", "description",
					    "a receipt, as recorded", "mimeType", "application/json",
					    "uriTemplate", "airlock://changeset/{id}", "name",
					    "changeset", "description",
					    "a dry run's change set and verdict (its receipt's dryrun)",
					    "mimeType", "application/json"),
				  stateless);
	if (strcmp(method, "resources/list") == 0) {
		json_t *entries = NULL, *list = json_array(), *e;
		size_t skipped, i;
		if (store && store_list(store, false, 50, &entries, &skipped, &err) < 0)
			return json_decref(list),
			       jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, err.msg, NULL);
		json_array_foreach(entries, i, e) {
			json_int_t rid = json_integer_value(json_object_get(e, "id"));
			char uri[64], name[64];
			snprintf(uri, sizeof(uri), "airlock://receipt/%lld", (long long)rid);
			snprintf(name, sizeof(name), "receipt %lld", (long long)rid);
			json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "uri", uri, "name",
							      name, "mimeType", "application/json"));
		}
		json_decref(entries);
		return mcp_result(id, json_pack("{s:o}", "resources", list), stateless);
	}
	const char *uri = json_string_value(json_object_get(params, "uri")), *kind = NULL;
	uint64_t rid = mcp_resource_id(uri, &kind);
	if (!rid)
		return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
				     "'uri' must be airlock://receipt/ID or airlock://changeset/ID",
				     NULL);
	cleanup_free char *text = NULL;
	if (!store || store_read_receipt(store, rid, &text, &err) < 0)
		return jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND, "resource not found",
				     json_pack("{s:s}", "uri", uri));
	if (strcmp(kind, "changeset") == 0) {
		cleanup_with(json_decrefp) json_t *doc =
			json_loads(text, JSON_REJECT_DUPLICATES, NULL);
		json_t *dr = json_object_get(doc, "dryrun");
		free(text);
		text = json_is_object(dr) ? json_dumps(dr, JSON_INDENT(2)) : NULL;
		if (!text)
			return jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND,
					     "resource not found: not a dry run",
					     json_pack("{s:s}", "uri", uri));
	}
	return mcp_result(id,
			  json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
				    "application/json", "text", text),
			  stateless);
}

static json_t *mcp_child_resources_list(struct mcp_server *s, json_t *id, json_t *params,
					bool stateless, int cancel_fd)
{
	return mcp_child_resources(s, id, params, stateless, cancel_fd, "resources/list");
}

static json_t *mcp_child_resources_templates(struct mcp_server *s, json_t *id, json_t *params,
					     bool stateless, int cancel_fd)
{
	return mcp_child_resources(s, id, params, stateless, cancel_fd, "resources/templates/list");
}

static json_t *mcp_child_resources_read(struct mcp_server *s, json_t *id, json_t *params,
					bool stateless, int cancel_fd)
{
	return mcp_child_resources(s, id, params, stateless, cancel_fd, "resources/read");
}

/* The child's side: its answer on fd, then _exit(). */
static _noreturn_ void mcp_child(struct mcp_server *s, mcp_child_fn *fn, json_t *id, json_t *params,
				 bool stateless, int cancel_fd, int fd)
{
	/* Nothing of the child reaches the client but through the pipe. */
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0)
		_exit(1);
	json_t *resp = fn(s, id, params, stateless, cancel_fd);
	cleanup_free char *text = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
	if (!text)
		_exit(1);
	size_t left = strlen(text);
	const char *p = text;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		p += w;
		left -= (size_t)w;
	}
	_exit(0);
}

static void mcp_call_release(struct mcp_call *c)
{
	if (c->result_fd >= 0)
		close(c->result_fd);
	if (c->cancel_fd >= 0)
		close(c->cancel_fd);
	json_decref(c->id);
	json_decref(c->progress_token);
	free(c->buf);
}

/* Starts fn for request id in a child; answers an error itself when it
 * cannot. */
static void mcp_fork_call(struct mcp_server *s, json_t *id, json_t *params, bool stateless,
			  mcp_child_fn *fn)
{
	int result[2], cancel[2];

	if (pipe2(result, O_CLOEXEC) < 0) {
		mcp_send_error(s, id, JSONRPC_INTERNAL_ERROR, strerror(errno));
		return;
	}
	if (pipe2(cancel, O_CLOEXEC) < 0) {
		mcp_send_error(s, id, JSONRPC_INTERNAL_ERROR, strerror(errno));
		close(result[0]);
		close(result[1]);
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* The other calls' ends stay with the server: a cancel pipe's
		 * write end held here would keep its run from ever seeing the
		 * server's end. */
		for (size_t i = 0; i < s->n_calls; i++) {
			if (s->calls[i].cancel_fd >= 0)
				close(s->calls[i].cancel_fd);
			if (s->calls[i].result_fd >= 0)
				close(s->calls[i].result_fd);
		}
		close(result[0]);
		close(cancel[1]);
		mcp_child(s, fn, id, params, stateless, cancel[0], result[1]);
	}
	int e = errno;
	close(result[1]);
	close(cancel[0]);
	if (pid < 0) {
		close(result[0]);
		close(cancel[1]);
		mcp_send_error(s, id, JSONRPC_INTERNAL_ERROR, strerror(e));
		return;
	}
	json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	uint64_t now = clock_monotonic_ns();
	s->calls[s->n_calls++] = (struct mcp_call){
		.id = json_incref(id),
		.pid = pid,
		.result_fd = result[0],
		.cancel_fd = cancel[1],
		.progress_token =
			json_is_string(token) || json_is_integer(token) ? json_incref(token) : NULL,
		.started_ns = now,
		.next_progress_ns = now + MCP_PROGRESS_EVERY_NS,
	};
	if (s->eof) {
		close(cancel[1]);
		s->calls[s->n_calls - 1].cancel_fd = -1;
	}
}

/* Queues fn for request id, to start once the calls before it ended. */
static void mcp_queue_call(struct mcp_server *s, json_t *id, json_t *params, bool stateless,
			   mcp_child_fn *fn)
{
	if (s->n_queued == MCP_MAX_QUEUED) {
		mcp_send_error(s, id, JSONRPC_INTERNAL_ERROR, "too many calls waiting (64)");
		return;
	}
	s->queue[s->n_queued++] = (struct mcp_queued){
		.id = json_incref(id),
		.params = json_incref(params),
		.stateless = stateless,
		.fn = fn,
	};
}

/* The next queued call, when none is in flight. */
static void mcp_start_queued(struct mcp_server *s)
{
	while (s->n_calls < MCP_MAX_CALLS && s->n_queued > 0) {
		struct mcp_queued q = s->queue[0];
		memmove(s->queue, s->queue + 1, --s->n_queued * sizeof(s->queue[0]));
		mcp_fork_call(s, q.id, q.params, q.stateless, q.fn);
		json_decref(q.id);
		json_decref(q.params);
	}
}

static void mcp_cancel(struct mcp_call *c)
{
	if (c->cancel_fd >= 0) {
		close(c->cancel_fd);
		c->cancel_fd = -1;
	}
}

/* params._meta's protocol version: the stateless revision's per-request
 * one. 1: stateless, 0: none (the session's), -1: an error was answered. */
static int mcp_request_version(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	json_t *v = json_object_get(meta, MCP_META_VERSION);

	if (meta && !json_is_object(meta)) {
		mcp_send_error(s, id, JSONRPC_INVALID_PARAMS, "'_meta' must be an object");
		return -1;
	}
	if (!v)
		return 0;
	if (json_is_string(v) && strcmp(json_string_value(v), MCP_STATELESS) == 0)
		return 1;
	json_t *supported = json_pack("[s]", MCP_STATELESS);
	mcp_send(s, jsonrpc_error(id, MCP_UNSUPPORTED_VERSION, "unsupported protocol version",
				  json_pack("{s:O, s:o}", "requested",
					    json_is_string(v) ? v : json_null(), "supported",
					    supported)));
	return -1;
}

static void mcp_on_request(struct mcp_server *s, const struct jsonrpc_message *m)
{
	json_t *id = m->id, *params = m->params;
	const char *method = m->method;
	int stateless = mcp_request_version(s, id, params);

	if (stateless < 0)
		return;
	if (strcmp(method, "initialize") == 0) {
		if (!json_is_string(json_object_get(params, "protocolVersion"))) {
			mcp_send_error(s, id, JSONRPC_INVALID_PARAMS,
				       "initialize: 'protocolVersion' must be a string");
			return;
		}
		s->initialized = true;
		mcp_send(s, jsonrpc_result(id, mcp_initialize(params)));
		return;
	}
	if (strcmp(method, "ping") == 0) {
		mcp_send(s, mcp_result(id, json_object(), stateless));
		return;
	}
	if (strcmp(method, "server/discover") == 0) {
		mcp_send(s, mcp_result(id, mcp_discover(), true));
		return;
	}
	static const char *const known[] = { "tools/list", "tools/call", "resources/list",
					     "resources/templates/list", "resources/read" };
	bool is_known = false;
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		is_known |= strcmp(method, known[i]) == 0;
	if (!is_known) {
		mcp_send_error(s, id, JSONRPC_METHOD_NOT_FOUND, "method not found");
		return;
	}
	if (!stateless && !s->initialized) {
		mcp_send_error(s, id, JSONRPC_INVALID_REQUEST,
			       "not initialized: send initialize first (or give _meta's " MCP_META_VERSION
			       " " MCP_STATELESS ")");
		return;
	}
	if (strcmp(method, "tools/list") == 0) {
		json_t *tools = mcp_tools_list();
		mcp_send(s, tools ? mcp_result(id, json_pack("{s:o}", "tools", tools), stateless)
				  : jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL));
		return;
	}
	if (strcmp(method, "tools/call") == 0) {
		const char *name = json_string_value(json_object_get(params, "name"));
		json_t *args = json_object_get(params, "arguments");
		if (!name || (args && !json_is_object(args))) {
			mcp_send_error(s, id, JSONRPC_INVALID_PARAMS,
				       "tools/call: 'name' must be a string and 'arguments' an object");
			return;
		}
		if (!mcp_tools_known(name)) {
			char msg[160];
			snprintf(msg, sizeof(msg), "unknown tool: %.100s", name);
			mcp_send_error(s, id, JSONRPC_INVALID_PARAMS, msg);
			return;
		}
		mcp_queue_call(s, id, params, stateless, mcp_child_tools_call);
		return;
	}
	if (strcmp(method, "resources/read") == 0 && !json_is_string(json_object_get(params, "uri"))) {
		mcp_send_error(s, id, JSONRPC_INVALID_PARAMS, "resources/read: 'uri' must be a string");
		return;
	}
	mcp_queue_call(s, id, params, stateless,
		       strcmp(method, "resources/list") == 0		 ? mcp_child_resources_list
		       : strcmp(method, "resources/templates/list") == 0 ? mcp_child_resources_templates
									 : mcp_child_resources_read);
}

static void mcp_on_notification(struct mcp_server *s, const struct jsonrpc_message *m)
{
	if (strcmp(m->method, "notifications/initialized") == 0)
		return;
	if (strcmp(m->method, "notifications/cancelled") != 0)
		return; /* unknown notifications are ignored */
	json_t *rid = json_object_get(m->params, "requestId");
	for (size_t i = 0; rid && i < s->n_queued;)
		if (json_equal(s->queue[i].id, rid)) {
			json_decref(s->queue[i].id);
			json_decref(s->queue[i].params);
			memmove(s->queue + i, s->queue + i + 1,
				(--s->n_queued - i) * sizeof(s->queue[0]));
		} else {
			i++;
		}
	for (size_t i = 0; rid && i < s->n_calls; i++)
		if (json_equal(s->calls[i].id, rid)) {
			s->calls[i].cancelled = true;
			mcp_cancel(&s->calls[i]);
		}
}

static void mcp_on_line(struct mcp_server *s, const char *line, size_t n)
{
	struct jsonrpc_message m;
	char msg[320];
	int code;
	json_t *id = NULL;

	/* blank lines between messages are not messages */
	if (strspn(line, " \t\r") == n)
		return;
	if (jsonrpc_parse(line, n, &m, &code, &id, msg, sizeof(msg)) < 0) {
		mcp_send(s, jsonrpc_error(id, code, msg, NULL));
		json_decref(id);
		return;
	}
	json_decref(id);
	if (m.kind == JSONRPC_REQUEST)
		mcp_on_request(s, &m);
	else if (m.kind == JSONRPC_NOTIFICATION)
		mcp_on_notification(s, &m);
	jsonrpc_message_release(&m);
}

/* A call's child ended (its pipe at EOF): its answer, unless cancelled. */
static void mcp_call_finish(struct mcp_server *s, size_t i)
{
	struct mcp_call *c = &s->calls[i];
	int status = 0;

	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!c->cancelled) {
		json_t *resp = NULL;
		if (!c->overflow && c->len > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			resp = json_loadb(c->buf, c->len, JSON_REJECT_DUPLICATES, NULL);
		mcp_send(s, resp ? resp
				 : jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR,
						 c->overflow ? "the answer is too long"
							     : "the call ended without an answer",
						 NULL));
	}
	mcp_call_release(c);
	s->calls[i] = s->calls[--s->n_calls];
}

static void mcp_call_read(struct mcp_server *s, size_t i)
{
	struct mcp_call *c = &s->calls[i];
	char buf[65536];
	ssize_t n = read(c->result_fd, buf, sizeof(buf));

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		mcp_call_finish(s, i);
		return;
	}
	if (c->overflow || c->len + (size_t)n > MCP_RESULT_MAX) {
		c->overflow = true;
		return;
	}
	if (c->len + (size_t)n > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 65536;
		while (cap < c->len + (size_t)n)
			cap *= 2;
		char *p = realloc(c->buf, cap);
		if (!p) {
			c->overflow = true;
			return;
		}
		c->buf = p;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, buf, (size_t)n);
	c->len += (size_t)n;
}

static void mcp_progress(struct mcp_server *s, uint64_t now)
{
	for (size_t i = 0; i < s->n_calls; i++) {
		struct mcp_call *c = &s->calls[i];
		if (!c->progress_token || c->cancelled || now < c->next_progress_ns)
			continue;
		uint64_t secs = (now - c->started_ns) / 1000000000ULL;
		char msg[64];
		snprintf(msg, sizeof(msg), "running for %" PRIu64 " s", secs);
		c->next_progress_ns = now + MCP_PROGRESS_EVERY_NS;
		mcp_send(s, json_pack("{s:s, s:s, s:{s:O, s:I, s:s}}", "jsonrpc", "2.0", "method",
				      "notifications/progress", "params", "progressToken",
				      c->progress_token, "progress", (json_int_t)secs, "message", msg));
	}
}

static void mcp_on_eof(struct mcp_server *s)
{
	s->eof = true;
	for (size_t i = 0; i < s->n_calls; i++)
		mcp_cancel(&s->calls[i]);
}

static int mcp_read_stdin(struct mcp_server *s)
{
	char buf[JSONRPC_FEED_MAX];
	const char *line;
	size_t n;
	ssize_t got = read(STDIN_FILENO, buf, sizeof(buf));

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0) {
		enum jsonrpc_next k = jsonrpc_reader_finish(&s->reader, &line, &n);
		if (k == JSONRPC_LINE)
			mcp_on_line(s, line, n);
		else if (k == JSONRPC_TOO_LONG)
			mcp_send_error(s, NULL, JSONRPC_INVALID_REQUEST, "message over 4 MiB: dropped");
		mcp_on_eof(s);
		return 0;
	}
	if (jsonrpc_reader_feed(&s->reader, buf, (size_t)got) < 0)
		return -ENOMEM;
	for (;;) {
		enum jsonrpc_next k = jsonrpc_reader_next(&s->reader, &line, &n);
		if (k == JSONRPC_NEED_MORE)
			return 0;
		if (k == JSONRPC_TOO_LONG)
			mcp_send_error(s, NULL, JSONRPC_INVALID_REQUEST, "message over 4 MiB: dropped");
		else
			mcp_on_line(s, line, n);
	}
}

static int mcp_loop(struct mcp_server *s)
{
	for (;;) {
		mcp_start_queued(s);
		if (s->eof && s->n_calls == 0)
			return 0;
		struct pollfd pfd[MCP_MAX_CALLS + 1];
		size_t n = 0;
		uint64_t now = clock_monotonic_ns(), next = 0;

		if (!s->eof)
			pfd[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		for (size_t i = 0; i < s->n_calls; i++) {
			pfd[n++] = (struct pollfd){ .fd = s->calls[i].result_fd, .events = POLLIN };
			if (s->calls[i].progress_token && (!next || s->calls[i].next_progress_ns < next))
				next = s->calls[i].next_progress_ns;
		}
		int timeout = next ? (next > now ? (int)((next - now) / 1000000 + 1) : 0) : -1;
		int r = poll(pfd, n, timeout);
		if (r < 0 && errno != EINTR)
			return -errno;
		size_t k = 0;
		if (!s->eof && pfd[k++].revents && mcp_read_stdin(s) < 0)
			return -ENOMEM;
		/* Calls finish in reverse, so that a removal (the last call
		 * moved into its place) never skips a descriptor polled. */
		size_t polled = s->n_calls;
		for (size_t i = polled; i-- > 0;)
			if (k + i < n && pfd[k + i].revents && pfd[k + i].fd == s->calls[i].result_fd)
				mcp_call_read(s, i);
		mcp_progress(s, clock_monotonic_ns());
	}
}

static const char mcp_usage[] =
	"usage: airlock mcp [--workspace DIR] [--state-dir DIR] [--policy FILE]\n"
	"serves the Model Context Protocol on stdin/stdout (docs/mcp.md)\n";

int mcp_main(int argc, char **argv, char **environ_, struct error *err)
{
	static const struct option options[] = {
		{ "workspace", required_argument, NULL, 'w' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *workspace = ".", *state_dir = NULL, *policy = NULL;
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (opt) {
		case 'w':
			workspace = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case 'h': {
			ssize_t w = write(STDOUT_FILENO, mcp_usage, strlen(mcp_usage));
			(void)w;
			return 0;
		}
		default:
			return error_set(err, EINVAL, "bad option '%s' (try airlock mcp --help)",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return error_set(err, EINVAL, "unexpected argument '%s'", argv[optind]);
	cleanup_free char *ws = realpath(workspace, NULL);
	if (!ws)
		return error_set_errno(err, errno, "workspace '%s'", workspace);

	struct mcp_server s = { 0 };
	int r = session_open(&s.session,
			     &(struct session_options){ .state_dir = state_dir,
							.policy_path = policy,
							.environ_ = environ_ },
			     err);
	if (r < 0)
		return r;
	s.tools = (struct mcp_tools_ctx){ .session = &s.session, .workspace = ws };
	r = mcp_loop(&s);
	for (size_t i = 0; i < s.n_calls; i++)
		mcp_call_release(&s.calls[i]);
	for (size_t i = 0; i < s.n_queued; i++) {
		json_decref(s.queue[i].id);
		json_decref(s.queue[i].params);
	}
	jsonrpc_reader_release(&s.reader);
	session_free(&s.session);
	if (r < 0)
		return error_set_errno(err, -r, "mcp");
	return 0;
}
