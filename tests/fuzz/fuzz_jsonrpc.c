/* SPDX-License-Identifier: MIT */
/* Property: the MCP server's framing and parsing (src/mcp/jsonrpc.c) never
 * crash on any byte stream, fed in chunks of any size: no line handed out
 * is over JSONRPC_LINE_MAX or holds a newline, the buffer stays bounded,
 * and a message accepted is an object with "jsonrpc": "2.0", a string
 * method or a response's result/error, and an id that is a string or an
 * integer; a rejection has a JSON-RPC error code and a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *line, size_t n)
{
	struct jsonrpc_message m;
	char msg[320];
	int code = 0;
	json_t *id = NULL;

	if (n > JSONRPC_LINE_MAX || memchr(line, '\n', n))
		abort();
	if (jsonrpc_parse(line, n, &m, &code, &id, msg, sizeof(msg)) < 0) {
		if (code >= -32000 || code < -32768 || !msg[0])
			abort();
		if (id && !json_is_string(id) && !json_is_integer(id))
			abort();
		json_decref(id);
		return;
	}
	json_decref(id);
	if (!json_is_object(m.doc) ||
	    strcmp(json_string_value(json_object_get(m.doc, "jsonrpc")), "2.0"))
		abort();
	if (m.kind != JSONRPC_RESPONSE && !m.method)
		abort();
	if (m.kind == JSONRPC_REQUEST && !json_is_string(m.id) && !json_is_integer(m.id))
		abort();
	if (m.params && !json_is_object(m.params))
		abort();
	jsonrpc_message_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_reader r = { 0 };
	const char *line;
	size_t n;
	/* the first byte picks the chunk size, so that lines split anywhere */
	size_t chunk = size ? (size_t)data[0] % 64 + 1 : 1;

	for (size_t off = size ? 1 : 0; off < size; off += chunk) {
		size_t take = size - off < chunk ? size - off : chunk;
		if (jsonrpc_reader_feed(&r, data + off, take) < 0)
			abort();
		enum jsonrpc_next k;
		while ((k = jsonrpc_reader_next(&r, &line, &n)) != JSONRPC_NEED_MORE)
			if (k == JSONRPC_LINE)
				check_line(line, n);
		if (r.len > JSONRPC_LINE_MAX + JSONRPC_FEED_MAX + 1)
			abort();
	}
	if (jsonrpc_reader_finish(&r, &line, &n) == JSONRPC_LINE)
		check_line(line, n);
	jsonrpc_reader_release(&r);
	return 0;
}
