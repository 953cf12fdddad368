/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Newline-delimited JSON-RPC 2.0 (MCP's stdio transport), read strictly:
 * each line one message, at most JSONRPC_LINE_MAX bytes; a longer line is
 * dropped as it streams by (never buffered whole) and reported once. */
#define JSONRPC_LINE_MAX (4u << 20)

/* JSON-RPC's error codes, and MCP's */
enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,
	MCP_RESOURCE_NOT_FOUND = -32002,
	MCP_UNSUPPORTED_VERSION = -32022,
};

/* What one jsonrpc_reader_feed() takes at most: the buffer stays under
 * JSONRPC_LINE_MAX + JSONRPC_FEED_MAX + 1 bytes. */
#define JSONRPC_FEED_MAX (64u << 10)

struct jsonrpc_reader {
	char *buf;
	size_t len, cap;
	size_t scanned; /* bytes of buf known to hold no newline */
	size_t consumed; /* the line handed out last, with its newline: removed at the next call */
	bool dropping; /* inside a line over the limit: dropped up to its newline */
};

enum jsonrpc_next {
	JSONRPC_NEED_MORE, /* no whole line buffered */
	JSONRPC_LINE, /* *ret_line, *ret_n: one line without its newline, valid until the next call */
	JSONRPC_TOO_LONG, /* a line over JSONRPC_LINE_MAX was dropped (reported when it starts) */
};

/* Appends n <= JSONRPC_FEED_MAX bytes read from the transport (-EINVAL
 * beyond), -ENOMEM; the caller then takes lines with jsonrpc_reader_next()
 * until it answers NEED_MORE, before it feeds again. */
int jsonrpc_reader_feed(struct jsonrpc_reader *r, const void *data, size_t n);
enum jsonrpc_next jsonrpc_reader_next(struct jsonrpc_reader *r, const char **ret_line, size_t *ret_n);
/* At EOF: the last line when it had no newline (JSONRPC_LINE), else NEED_MORE. */
enum jsonrpc_next jsonrpc_reader_finish(struct jsonrpc_reader *r, const char **ret_line, size_t *ret_n);
void jsonrpc_reader_release(struct jsonrpc_reader *r);

enum jsonrpc_kind {
	JSONRPC_REQUEST, /* method and id */
	JSONRPC_NOTIFICATION, /* method, no id */
	JSONRPC_RESPONSE, /* result or error with an id: the client answering; ignored */
};

struct jsonrpc_message {
	enum jsonrpc_kind kind;
	json_t *doc; /* owns the rest */
	json_t *id; /* a string or an integer; NULL for a notification */
	const char *method;
	json_t *params; /* an object, or NULL when absent */
};

/* Parses one line strictly: UTF-8 JSON (jansson), no duplicate keys, an
 * object (no batch), "jsonrpc": "2.0", an id that is a string or an
 * integer, a string method, params an object when present. On failure
 * returns a negative errno, *ret_code the JSON-RPC error code to answer
 * with, ret_id the request's id when one could be read (a new reference, or
 * NULL: answer with id null), and msg why. */
int jsonrpc_parse(const char *line, size_t n, struct jsonrpc_message *ret, int *ret_code,
		  json_t **ret_id, char *msg, size_t msg_size);
void jsonrpc_message_release(struct jsonrpc_message *m);

/* The response objects, each one line's document; NULL when out of memory.
 * They steal result and data. */
json_t *jsonrpc_result(json_t *id, json_t *result);
json_t *jsonrpc_error(json_t *id, int code, const char *message, json_t *data);
