/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/agents/agenthost.h"

/* The agent hosts' hooks (docs/gate.md, "Hooks"): each host of the table
 * (core/agents/agenthost.h) hands a JSON payload on stdin before a tool
 * runs, after it ran, and when the agent wants to stop. hook_handle() reads
 * one, consults the gate, and says what to do; the host's reply writer
 * formats that in its dialect. Unknown payload fields are ignored: hosts
 * add them monthly. */

enum hook_event {
	HOOK_PRE_TOOL_USE = AGENT_EVENT_PRE_TOOL,
	HOOK_POST_TOOL_USE = AGENT_EVENT_POST_TOOL,
	HOOK_STOP = AGENT_EVENT_STOP,
};

enum hook_decision {
	HOOK_PASS, /* no opinion: the host's own permission flow goes on */
	HOOK_BLOCK, /* refuse the tool, or refuse to stop */
};

#define HOOK_MAX_PAYLOAD (1 << 20)

struct session;
struct store;

/* How a host's shell command is routed through `airlock run` (docs/gate.md,
 * "Routing"). */
struct hook_route {
	/* The absolute path of the airlock that runs it; NULL: never route,
	 * unless find is set. */
	const char *airlock;
	/* Set instead of airlock: gives that path when a command is first
	 * routed (a file tool's call never needs it); never returns NULL. */
	const char *(*find)(void);
	/* The routed command names the session's state directory (it was
	 * given, not the default). */
	bool state_dir;
};

struct json_t;

struct hook_outcome {
	enum hook_decision decision;
	char message[4096]; /* the block reason, or context for the agent; facts only */
	char event_name[64]; /* the payload's hook_event_name, for the reply */
	uint64_t receipt; /* post-tool-use: the receipt recorded; 0 none */
	/* pre-tool-use of a routed shell command: the tool's whole new input
	 * (the host's own, its command replaced by the `airlock run` of it);
	 * NULL when the call runs as the host sent it. */
	struct json_t *updated_input;
	bool routed_skip; /* post-tool-use of a routed command: airlock run recorded it */
};

void hook_outcome_release(struct hook_outcome *o);

/* The session's state directory, policy (its --policy FILE is loaded up
 * front, so that a broken one blocks every call) and caller environment;
 * its store, policy and rules are opened only when the answer needs them.
 * route: NULL never routes. */
int hook_handle(struct session *s, const struct hook_route *route, const struct agent_host *host,
		enum hook_event event, const char *payload, size_t n, struct hook_outcome *ret,
		struct error *err);

/* The gate a front end's own run passes (MCP's run tool), as a shell tool's
 * pre-tool-use would judge argv run in cwd (NULL: the current directory):
 * ret->decision HOOK_BLOCK with the hooks' message when a failure is open
 * in cwd's scope and argv is not risk 1, or argv is risk 5; a run whose
 * fixes (0: none) names a failure open in the scope is exempt from the
 * first. The state directory is not created. */
int hook_gate_argv(struct session *s, const char *cwd, char *const *argv, uint64_t fixes,
		   struct hook_outcome *ret, struct error *err);

/* The gate a front end's exec of permit id passes (MCP's permit_exec): a
 * permit the approver has not approved (risk 3 or less, which exec
 * dry-runs and applies itself) changes its workspace, so ret->decision is
 * HOOK_BLOCK while a failure is open in that workspace's scope (or the
 * mirror holds a conflict), whatever its command is classified. An
 * approved permit is the human's decision; one that cannot be loaded is
 * permit_exec()'s to refuse (HOOK_PASS). */
int hook_gate_permit(struct session *s, struct store *store, uint64_t id, struct hook_outcome *ret,
		     struct error *err);

/* How many failures are open in the scope of the payload's cwd (the
 * process's own when the payload has none or is not JSON), for a hook
 * invocation too broken to be answered; ret_describe gets the newest's
 * facts. The state directory is not created. */
int hook_open_failures(struct session *s, const char *payload, size_t n, size_t *ret,
		       char *ret_describe, size_t size, struct error *err);

/* What a post-tool-use payload says of the run's exit status, as
 * post-tool-use records it (for the fuzz target): *ret_kind 0 reported,
 * 1 implied (0), 2 unknown, 3 interpreted; *ret_code the status when
 * reported. */
int hook_report_status(const struct agent_host *host, const char *payload, size_t n, int *ret_kind,
		       int *ret_code, struct error *err);
