/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"

/* A run's allowlist proxy (docs/network.md), from the run's side: the
 * hidden `airlock __netproxy` started from /proc/self/exe with its config,
 * the socket its listener arrives on, its stop pipe and its record pipe,
 * and nothing else; the records it writes kept bounded (the first
 * RUN_NET_KEEP_FIRST and the last RUN_NET_KEEP_LAST connections) for the
 * receipt's sandbox.network. */

#define RUN_NET_KEEP_FIRST 500
#define RUN_NET_KEEP_LAST  500
/* sandbox.network.summary: every record counted, by distinct (host, port,
 * rule) refused and (host, port) allowed, up to this many of each */
#define RUN_NET_SUMMARY_MAX 256

/* The command's proxy settings: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and
 * lower case) name the proxy at 127.0.0.1:SANDBOX_NET_PROXY_PORT; NO_PROXY
 * (and no_proxy) is "localhost,127.0.0.1,::1": loopback inside the
 * quarantine is the run's own namespace, never the host's, so it needs no
 * proxy and the proxy would refuse it anyway. */
#define RUN_NET_NO_PROXY "localhost,127.0.0.1,::1"

struct run_net {
	bool started; /* run_net_start() was called: release has work */
	pid_t pid; /* 0: not started */
	int stop_fd, records_fd; /* our ends; -1: closed */
	int listen_to; /* the supervisor's end (sandbox_isolation.net_listener_to); -1: closed */
	char *partial; /* a record line not yet ended */
	size_t n_partial;
	json_t *first, *last; /* arrays; last is a ring of RUN_NET_KEEP_LAST */
	size_t last_next;
	uint64_t total; /* records read, kept or not */
	/* The proxy's count of connections it took, written at its stop; a
	 * larger count than total: records lost (cut short) */
	uint64_t accepted;
	bool have_accepted;
	/* The summary: arrays of entries in the order first seen, indexes by
	 * key (the same entries); NULL until the first record. *_unlisted:
	 * connections past RUN_NET_SUMMARY_MAX distinct entries. */
	json_t *denied, *denied_index, *allowed, *allowed_index;
	uint64_t denied_unlisted, allowed_unlisted;
	uint64_t eof_realtime_ns; /* the record pipe's EOF; 0: not seen */
	bool died; /* ended before the run did */
};

/* Sets the six variables in *envp (replacing any of the same name) and
 * adds their names to *keys when missing. 0 or -ENOMEM. */
int run_net_env(char ***envp, char ***keys);

/* Starts the proxy for these (canonical) patterns. start_ns: the run's
 * start, CLOCK_MONOTONIC. */
int run_net_start(struct run_net *n, char *const *allow, char *const *deny, uint64_t start_ns,
		  struct error *err);

/* Reads what the record pipe holds; false at its EOF (stop watching). */
bool run_net_read(struct run_net *n);

/* After the run (the command's tree gone, ended_realtime_ns its end): the
 * proxy told to stop, its last records read (a short deadline), then it
 * is killed and reaped, whatever it did. */
void run_net_stop(struct run_net *n, uint64_t ended_realtime_ns);

/* The receipt's sandbox.network (docs/receipt-format.md). */
json_t *run_net_json(const struct run_net *n, char *const *allow, char *const *deny);

void run_net_release(struct run_net *n);
