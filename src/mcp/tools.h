/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* The MCP tools (docs/mcp.md): their definitions for tools/list and their
 * calls, each answered as a CallToolResult. They translate arguments into
 * core's requests and core's answers into text for the model and
 * structured content for programs; core does the work. */
struct session;

struct mcp_tools_ctx {
	struct session *session;
	const char *workspace; /* absolute: --workspace, else the server's cwd */
};

/* tools/list's "tools" array; NULL when out of memory. */
json_t *mcp_tools_list(void);
/* Whether name is a tool. */
bool mcp_tools_known(const char *name);
/* Calls tool name with args (an object, or NULL): a CallToolResult, with
 * isError for a refusal or a failure (no receipt). cancel_fd: read end that
 * cancels a run or dry run when readable (0: none). NULL when out of
 * memory. */
json_t *mcp_tools_call(const struct mcp_tools_ctx *ctx, const char *name, json_t *args, int cancel_fd);
