/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/sha256.h"

/* The rules a run is held to, loaded from a versioned JSON document
 * (docs/policy-format.md). The default ships in policy/default.json and is
 * compiled in; --policy FILE is laid over it. A field added here gets a row
 * in policy.c's policy_fields[]: whether a larger value widens what a run
 * gets, or neither. */
struct policy {
	char *origin; /* "default" or the file's path */
	/* SHA-256 of the document's bytes (the built-in one's for "default"):
	 * a re-run of a failure is held to the same policy (docs/gate.md). */
	char sha256[SHA256_HEX_SIZE];
	char **deny_argv0;
	uint64_t default_timeout_ms, max_timeout_ms, kill_after_ms;
	char **env_allow;
	char **secret_patterns;
	char **env_set; /* "NAME=VALUE" entries, in document order */
	uint64_t keep_bytes, spill_max_bytes;
	uint64_t max_argv_bytes;
	uint64_t core_bytes, open_files, file_size_bytes;
	uint64_t processes, memory_bytes, cpu_seconds; /* quarantine only */
	bool fsync_receipts;
	bool sandbox_enabled; /* sandbox.profile: "default" (true) or "none" */
	char **hide; /* "~/" is the caller's home; others absolute */
	bool home_hidden; /* sandbox.home: "hidden" (true) or "visible" */
	char **home_allow; /* visible when the home is hidden; "~/" or absolute */
	char **read_only; /* relative: to the workspace */
	uint64_t tmp_bytes;
	bool share_net; /* sandbox.net: "host" (true) or "loopback" */
	/* sandbox.net as an object (docs/network.md): the command reaches the
	 * network through the allowlist proxy only. Patterns in their canonical
	 * spelling (core/policy/netallow.h); NULL unless net_allowlist. */
	bool net_allowlist;
	char **net_allow, **net_deny;
	/* sandbox.writable: host directories writable besides the workspace;
	 * "~/" or absolute. core/host/hostview.h decides which may be. */
	char **writable;
	char **gate_trivial; /* basenames whose success proves nothing */
	/* a host run whose exit status the host did not report opens a failure */
	bool hooks_unknown_opens_failure;
	/* a run its client cancelled (MCP) opens a failure, as a timeout does */
	bool gate_cancelled_opens_failure;
};

#define POLICY_MAX_WRITABLE 16 /* sandbox.writable entries */

/* A rule that refused a run: which one, and the offending value. */
struct policy_denial {
	const char *rule; /* static: "deny_argv0", "max_timeout", "secret_env" */
	char value[256];
	char message[512];
};

/* A way a policy gives a run more than another (the built-in one) does:
 * which field, and how, for people. */
struct policy_widening {
	const char *field; /* static: "sandbox.net", as the document spells it */
	/* never approvable: sandbox.profile "none" is not taken from a file */
	bool never;
	char detail[256]; /* "\"host\", built-in \"loopback\"", "adds '/srv'", ... */
};
#define POLICY_MAX_WIDENINGS 32 /* at most one per field */

/* Compares policy with base field by field (one table, in document order;
 * docs/policy-format.md, "Widening needs the approver"): a number above
 * base's, a switch that opens what base keeps shut, a list that adds to an
 * allowlist or drops an entry of a denylist. Fills ret (up to max) and
 * returns how many fields widen; 0: policy only narrows base, or keeps it.
 * Fields that give a run no reach (output, receipts, gate, env.set) never
 * count. */
size_t policy_widenings(const struct policy *policy, const struct policy *base,
			struct policy_widening *ret, size_t max);

/* Parses a policy document laid over the built-in default: keys it leaves
 * out keep the default's values. */
int policy_parse(const char *text, size_t n, const char *origin, struct policy **ret,
		 struct error *err);
int policy_load_default(struct policy **ret, struct error *err);
/* The built-in policy as policy_load_default() loads it, compiled in and
 * read-only (its lists too: a write faults), for a reader that changes
 * nothing: no copy made, nothing to free. One object for the process. */
const struct policy *policy_builtin(void);
/* Parses a document over an empty policy, not over the built-in one: what
 * tests compare the compiled-in built-in policy (policy_embed.h) with. */
int policy_parse_alone(const char *text, size_t n, struct policy **ret, struct error *err);
int policy_load_file(const char *path, struct policy **ret, struct error *err);
/* The project's policy for routed commands, <scope>/.airlock/policy.json,
 * when it is a regular file (docs/gate.md, "Routing"): the --policy a
 * routed run gets. NULL when there is none (or no memory). */
char *policy_route_path(const char *scope);
void policy_free(struct policy *policy);
static inline void policy_freep(struct policy **p)
{
	policy_free(*p);
}

/* Each returns true and fills *ret_denial when the policy refuses. */
bool policy_denies_argv0(const struct policy *policy, const char *argv0,
			 struct policy_denial *ret_denial);
/* The command's whole life, its timeout plus the grace between TERM and
 * KILL, fits in timeout.max_ms. A grace the caller asked for (kill_after_ms
 * not NULL) that does not fit is denied, like a timeout that does not; the
 * policy's own grace is cut to what the timeout leaves (down to 0, KILL
 * right after TERM). Unless denied, *ret_kill_after_ms is the grace to use. */
bool policy_denies_timeout(const struct policy *policy, uint64_t timeout_ms,
			   const uint64_t *kill_after_ms, uint64_t *ret_kill_after_ms,
			   struct policy_denial *ret_denial);
bool policy_is_secret_name(const struct policy *policy, const char *name);
