/* SPDX-License-Identifier: MIT */
/* `airlock __netproxy PARENT START_NS`: the allowlist proxy of a run
 * (docs/network.md), started by the run itself from /proc/self/exe with
 * its descriptors at NETPROXY_FD_*; not a command for people, so not in
 * the usage. PARENT: the run's airlock, whose death ends the proxy;
 * START_NS: the run's start on CLOCK_MONOTONIC, for the records. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/net/netproxy.h"

int cmd_netproxy(int argc, char **argv)
{
	struct error err = { 0 };
	char *end1 = NULL, *end2 = NULL;

	if (argc != 3)
		return EXIT_AIRLOCK_ERROR;
	errno = 0;
	long parent = strtol(argv[1], &end1, 10);
	unsigned long long start_ns = strtoull(argv[2], &end2, 10);
	if (errno || *end1 || *end2 || parent <= 1)
		return EXIT_AIRLOCK_ERROR;
	struct netproxy_fds fds = { .config = NETPROXY_FD_CONFIG,
				    .listen = -1,
				    .listen_from = NETPROXY_FD_LISTEN_FROM,
				    .stop = NETPROXY_FD_STOP,
				    .records = NETPROXY_FD_RECORDS };
	if (netproxy_main(&fds, (pid_t)parent, (uint64_t)start_ns, &err) < 0) {
		cli_error("network proxy: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}
