/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/capture.h"
#include "basic/error.h"
#include "core/host/hostsafety.h"

/* One attempt to run a command, whatever became of it (docs/receipt-format.md). */
#define RECEIPT_SCHEMA "airlock.receipt/3"

enum receipt_status {
	RECEIPT_EXITED,
	RECEIPT_SIGNALED,
	RECEIPT_TIMEOUT,
	RECEIPT_NOT_FOUND,
	RECEIPT_NOT_EXECUTABLE,
	RECEIPT_DENIED,
	RECEIPT_SETUP_ERROR,
	RECEIPT_INVALID,
	RECEIPT_UNKNOWN, /* host receipts: the host ran it and did not report how it ended */
	_RECEIPT_STATUS_MAX,
};

const char *receipt_status_to_string(enum receipt_status status);

/* A stream as the receipt records it: from capture when one is given, else
 * from the fields below (a receipt read back; all zero when nothing ran). */
struct receipt_stream {
	const struct capture *capture;
	const char *text; /* the clipped text; NULL: empty */
	size_t text_len;
	uint64_t bytes, head_bytes, tail_bytes, omitted_bytes;
	const char *sha256; /* NULL: none */
	bool truncated;
	bool spilled;
	uint64_t spill_bytes;
	bool spill_truncated;
	char *spill_error; /* why spilling stopped early, if it did */
};

/* How far a limit reaches: the whole run, each process, each file. */
enum receipt_limit_scope {
	RECEIPT_LIMIT_RUN,
	RECEIPT_LIMIT_PROCESS,
	RECEIPT_LIMIT_FILE,
};

/* A limit and what held it. A partial one is in force but does not bound
 * what its name says (RLIMIT_AS bounds address space, not memory): the
 * receipt does not claim it (`limits_partial`, not `limits`), and
 * `not_counted` says what escapes it. */
struct receipt_limit {
	const char *name;
	uint64_t value;
	const char *mechanism; /* "RLIMIT_NOFILE", "cgroup-v1 memory", ... */
	enum receipt_limit_scope scope;
	bool partial;
	const char *not_counted; /* partial limits: what escapes them */
};

struct receipt_denial {
	const char *syscall; /* NULL: unknown number */
	int nr;
	unsigned count;
};

/* A connect() to a Unix socket outside the workspace and /tmp, refused. */
struct receipt_socket_denial {
	char *path; /* valid UTF-8 (ill-formed bytes replaced) */
	unsigned count;
};

/* What the quarantine enforced; `enforced` is false when nothing ran in it. */
struct receipt_sandbox {
	const char *profile; /* "default" or "none" */
	bool enforced;
	bool share_net;
	const char *workspace;
	char *const *writable; /* sandbox.writable, resolved */
	uint64_t tmp_bytes;
	char *const *hidden, *const *read_only;
	char *const *exposed; /* left visible inside the masked directories */
	unsigned allow_workspace; /* enum hostview_allow: the caller's overrides */
	int landlock_abi;
	uint64_t landlock_scoped;
	unsigned seccomp_rules;
	bool cgroup_memory, cgroup_pids;
	bool memory_limit_hit, pids_limit_hit;
	struct receipt_limit limits[8];
	size_t n_limits;
	struct receipt_denial denials[32];
	size_t n_denials;
	unsigned denials_dropped;
	bool connect_mediated; /* Unix sockets scoped by the supervisor, not Landlock */
	struct receipt_socket_denial socket_denials[32];
	size_t n_socket_denials;
	unsigned socket_denials_dropped;
	const char *killed_by;
	/* sandbox.net's allowlist form: the proxy's object (mode, proxy, allow,
	 * deny, connections, connections_dropped; docs/receipt-format.md);
	 * NULL: none (written as null). Borrowed. */
	json_t *network;
};

/* Which file exec_path was when airlock resolved it: a rerun of a failure
 * must run the same one (docs/gate.md). */
struct receipt_exec_identity {
	uint64_t dev, ino, size;
	char sha256[65]; /* of its bytes; empty when it could not be read */
	bool changed_during_run; /* replaced or written between the digest and the end */
};

/* How a host reported a run it ran itself (core/hook/hook.c). */
struct receipt_host {
	const char *agent, *session_id, *tool_use_id, *event; /* NULL: not given */
	bool exit_code_reported, verified;
	const char *masking; /* NULL: the shell text masks no status */
	const char *exit_status;
	const char *unknown_reason, *interpretation;
};

/* What the receipt does to the gate (core/gate: gate_effect_to_receipt()). */
#define RECEIPT_GATE_MAX_CLOSES 16
struct receipt_gate {
	const char *error; /* the gate could not decide: the document holds only this */
	const char *scope;
	bool opened, verified;
	uint64_t fixes; /* 0: names no failure */
	uint64_t closes[RECEIPT_GATE_MAX_CLOSES];
	const char *moves[RECEIPT_GATE_MAX_CLOSES];
	size_t n_closes;
	const char *note; /* NULL or empty: none */
	uint64_t rerun, rerun_of, fix; /* 0: none */
};

struct receipt {
	uint64_t id;
	const char *source; /* "run", "job" */
	char *const *argv; /* may be empty for a job that did not parse */
	const char *cwd;
	const char *exec_path;
	const struct receipt_exec_identity *exec_identity; /* NULL: not resolved */
	const char *job_id, *rationale, *job_sha256;
	uint64_t timeout_ms;
	uint64_t kill_after_ms; /* the grace between TERM and KILL the run got */
	const int *expected;
	size_t n_expected;
	enum receipt_status status;
	bool has_exit_code;
	int exit_code;
	int signal; /* 0: none */
	bool timed_out;
	bool match_expected;
	uint64_t started_ns, ended_ns, duration_ms; /* realtime ns */
	char *const *env_keys;
	struct receipt_stream out, err;
	const char *error; /* why it did not run or did not finish */
	const char *denied_rule, *denied_value;
	const char *setup_stage;
	int setup_errno;
	unsigned descendants_killed;
	uint64_t max_rss_kib, user_cpu_ms, system_cpu_ms;
	const char *policy_origin;
	const char *policy_sha256;
	const struct receipt_sandbox *sandbox;
	/* What the run left that would run code on the host, moved aside;
	 * NULL when the workspace was not checked (nothing ran quarantined). */
	const struct hostsafety_report *host_code;
	/* A host's reported run: its command as the host gave it, and how the
	 * host reported it; NULL for airlock's own runs. */
	const char *shell;
	const struct receipt_host *host;
	/* A dry run's summary (core/snapshot); NULL: not a dry run. */
	json_t *dryrun;
	/* What the receipt does to the gate; NULL while the gate decides
	 * (the document then has no "gate"). */
	const struct receipt_gate *gate;
};

/* The receipt as a JSON document; NULL on allocation failure. */
json_t *receipt_to_json(const struct receipt *receipt);

/* A receipt read back (receipt_from_json()): the struct, and what it points
 * to: strings of doc (held), and what the reader allocated. */
struct receipt_parsed {
	struct receipt receipt;
	json_t *doc;
	char **argv, **env_keys;
	int *expected;
	struct receipt_exec_identity exec_identity;
	struct receipt_sandbox sandbox;
	char **writable, **hidden, **read_only, **exposed;
	struct hostsafety_report host_code; /* its items' strings are doc's */
	struct receipt_host host;
	struct receipt_gate gate;
};
void receipt_parsed_release(struct receipt_parsed *p);
/* The one reader of a receipt document (docs/receipt-format.md), strict
 * about types: a key of the wrong type, an unknown name or a list past the
 * struct's room fails with -EINVAL, naming the key. What the writer derives
 * (schema, signal_name, timeout_sec, the constants of sandbox.enforced...)
 * is checked for its type only. receipt_to_json() of what it read, read
 * again, gives the same receipt. */
int receipt_from_json(json_t *doc, struct receipt_parsed *ret, struct error *err);

/* The receipt's "gate" object. */
json_t *receipt_gate_to_json(const struct receipt_gate *g);

/* The one-line summary kept in index.jsonl, from a receipt document. */
json_t *receipt_index_entry(json_t *receipt_json);

/* What a re-run of a recorded attempt needs (airlock run --fixes,
 * docs/gate.md), read back from its receipt document: the exact argv bytes
 * (argv_b64 where present), cwd, expectations, limits, environment names,
 * quarantine and policy, and the executable it resolved to. */
struct receipt_rerun {
	char **argv;
	char *cwd;
	int expected[32];
	size_t n_expected;
	uint64_t timeout_ms, kill_after_ms;
	char **env_keys;
	const char *sandbox_profile; /* "default" or "none" (static) */
	char *workspace; /* NULL: the cwd */
	bool share_net;
	unsigned allow_workspace; /* enum hostview_allow */
	char *policy; /* "default" or a path */
	char *policy_sha256; /* NULL in receipts written before it */
	char *exec_path; /* NULL: it was never resolved */
	bool has_identity;
	struct receipt_exec_identity identity;
};

int receipt_rerun_from_json(json_t *doc, struct receipt_rerun *ret, struct error *err);
void receipt_rerun_release(struct receipt_rerun *r);
