/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/error.h"

/* `airlock mcp [--workspace DIR] [--state-dir DIR] [--policy FILE]`: the
 * stdio MCP server (docs/mcp.md), a front end beside the CLI. Serves
 * stdin/stdout until stdin ends; returns 0 then (or after --help), or a
 * negative errno with err set when it cannot start (a bad option, no
 * session). The CLI's command table reaches it through this one entry
 * point (src/cli/cmd_mcp.c). */
int mcp_main(int argc, char **argv, char **environ_, struct error *err);
