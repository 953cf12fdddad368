/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"

static void jsonrpc_reader_drop(struct jsonrpc_reader *r, size_t n)
{
	memmove(r->buf, r->buf + n, r->len - n);
	r->len -= n;
	r->scanned = 0;
}

int jsonrpc_reader_feed(struct jsonrpc_reader *r, const void *data, size_t n)
{
	const char *p = data;

	if (n > JSONRPC_FEED_MAX)
		return -EINVAL;
	if (r->consumed) {
		jsonrpc_reader_drop(r, r->consumed);
		r->consumed = 0;
	}
	if (r->dropping) {
		/* inside an overlong line: skip to its newline */
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return 0;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
		r->dropping = false;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n)
			cap *= 2;
		char *buf = realloc(r->buf, cap);
		if (!buf)
			return -ENOMEM;
		r->buf = buf;
		r->cap = cap;
	}
	if (n)
		memcpy(r->buf + r->len, p, n);
	r->len += n;
	return 0;
}

enum jsonrpc_next jsonrpc_reader_next(struct jsonrpc_reader *r, const char **ret_line, size_t *ret_n)
{
	if (r->consumed) {
		jsonrpc_reader_drop(r, r->consumed);
		r->consumed = 0;
	}
	char *nl = r->len > r->scanned ? memchr(r->buf + r->scanned, '\n', r->len - r->scanned) : NULL;
	if (!nl) {
		r->scanned = r->len;
		if (r->len <= JSONRPC_LINE_MAX)
			return JSONRPC_NEED_MORE;
		/* over the limit with no end in sight: what is kept goes, the
		 * rest is skipped by feed() up to the newline */
		r->len = r->scanned = 0;
		r->dropping = true;
		return JSONRPC_TOO_LONG;
	}
	size_t n = (size_t)(nl - r->buf);
	if (n > JSONRPC_LINE_MAX) {
		jsonrpc_reader_drop(r, n + 1);
		return JSONRPC_TOO_LONG;
	}
	*nl = '\0';
	*ret_line = r->buf;
	*ret_n = n;
	r->consumed = n + 1;
	r->scanned = 0;
	return JSONRPC_LINE;
}

enum jsonrpc_next jsonrpc_reader_finish(struct jsonrpc_reader *r, const char **ret_line, size_t *ret_n)
{
	if (r->consumed) {
		jsonrpc_reader_drop(r, r->consumed);
		r->consumed = 0;
	}
	if (r->dropping || r->len == 0)
		return JSONRPC_NEED_MORE;
	if (r->len > JSONRPC_LINE_MAX) {
		r->len = 0;
		return JSONRPC_TOO_LONG;
	}
	/* room for the terminator: feed() grew cap to len at least */
	if (r->len == r->cap) {
		char *buf = realloc(r->buf, r->cap + 1);
		if (!buf)
			return JSONRPC_NEED_MORE;
		r->buf = buf;
		r->cap++;
	}
	r->buf[r->len] = '\0';
	*ret_line = r->buf;
	*ret_n = r->len;
	r->consumed = r->len;
	return JSONRPC_LINE;
}

void jsonrpc_reader_release(struct jsonrpc_reader *r)
{
	free(r->buf);
	*r = (struct jsonrpc_reader){ 0 };
}

static int jsonrpc_fail(int code, int *ret_code, char *msg, size_t size, const char *text)
{
	*ret_code = code;
	snprintf(msg, size, "%s", text);
	return -EINVAL;
}

static bool jsonrpc_id_valid(json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

int jsonrpc_parse(const char *line, size_t n, struct jsonrpc_message *ret, int *ret_code,
		  json_t **ret_id, char *msg, size_t msg_size)
{
	json_error_t jerr;

	*ret = (struct jsonrpc_message){ 0 };
	*ret_id = NULL;
	json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		char text[256];
		snprintf(text, sizeof(text), "parse error: %s (at byte %d)", jerr.text, jerr.position);
		return jsonrpc_fail(JSONRPC_PARSE_ERROR, ret_code, msg, msg_size, text);
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		return jsonrpc_fail(JSONRPC_INVALID_REQUEST, ret_code, msg, msg_size,
				    "a message is one JSON object (batches are not part of MCP)");
	}
	json_t *id = json_object_get(doc, "id");
	if (jsonrpc_id_valid(id))
		*ret_id = json_incref(id);
	const char *why = NULL;
	json_t *version = json_object_get(doc, "jsonrpc"), *method = json_object_get(doc, "method");
	json_t *params = json_object_get(doc, "params");
	if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0)
		why = "\"jsonrpc\" must be \"2.0\"";
	else if (id && !jsonrpc_id_valid(id))
		why = "\"id\" must be a string or an integer";
	else if (!method && id && (json_object_get(doc, "result") || json_object_get(doc, "error")))
		why = NULL; /* a response */
	else if (!json_is_string(method))
		why = "\"method\" must be a string";
	else if (params && !json_is_object(params))
		why = "\"params\" must be an object";
	if (why) {
		json_decref(doc);
		return jsonrpc_fail(JSONRPC_INVALID_REQUEST, ret_code, msg, msg_size, why);
	}
	ret->doc = doc;
	ret->id = id;
	ret->method = json_string_value(method);
	ret->params = params;
	ret->kind = !method ? JSONRPC_RESPONSE : id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	return 0;
}

void jsonrpc_message_release(struct jsonrpc_message *m)
{
	json_decref(m->doc);
	*m = (struct jsonrpc_message){ 0 };
}

static json_t *jsonrpc_envelope(json_t *id)
{
	json_t *o = json_object();

	if (o && (json_object_set_new(o, "jsonrpc", json_string("2.0")) < 0 ||
		  json_object_set(o, "id", id ? id : json_null()) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jsonrpc_result(json_t *id, json_t *result)
{
	json_t *o = jsonrpc_envelope(id);

	if (!o || !result || json_object_set_new(o, "result", result) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jsonrpc_error(json_t *id, int code, const char *message, json_t *data)
{
	json_t *o = jsonrpc_envelope(id),
	       *e = json_pack("{s:i, s:s}", "code", code, "message", message);

	if (e && data)
		json_object_set(e, "data", data);
	json_decref(data);
	if (!o || !e || json_object_set_new(o, "error", e) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
