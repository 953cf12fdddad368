/* SPDX-License-Identifier: MIT */
/* `airlock mcp`: the one place the CLI reaches the MCP front end
 * (src/mcp/mcp.h); it only maps the server's end to an exit status. */
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "mcp/mcp.h"

extern char **environ;

int cmd_mcp(int argc, char **argv)
{
	struct error err = { 0 };

	if (mcp_main(argc, argv, environ, &err) < 0) {
		cli_error("mcp: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}
