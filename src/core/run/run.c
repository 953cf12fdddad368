/* SPDX-License-Identifier: MIT */
#include "core/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/capture.h"
#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/agents/agenthost.h"
#include "core/snapshot/dryrun.h"
#include "core/run/env.h"
#include "core/run/run_dryrun.h"
#include "core/run/run_hostcode.h"
#include "core/run/run_net.h"
#include "core/gate/gate.h"
#include "core/host/hostsafety.h"
#include "core/host/hostview.h"
#include "core/store/exedigest.h"
#include "core/store/jsonutil.h"
#include "core/policy/policy.h"
#include "core/gate/policyapproval.h"
#include "core/policy/rules.h"
#include "core/session/session.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"
#include "sandbox/pathcache.h"

/* How many paths a run's plan asks the path cache about (run_settle()). */
#define RUN_PATHCACHE_NONE	 24
#define RUN_PATHCACHE_QUARANTINE 384


/* Where the command's output goes while it runs: the bounded capture always,
 * the spill file and the caller's terminal when asked. */
struct run_stream {
	struct capture capture;
	int spill_fd;
	uint64_t spill_bytes, spill_max;
	bool spill_truncated;
	char spill_error[256];
	int tee_fd;
};

/* The executable the command runs, and which file it is. */
struct run_exec {
	char *path;
	struct receipt_exec_identity id; /* valid when has_id */
	bool has_id;
	struct timespec ctime; /* when id was taken */
	/* The file id names, open until id.sha256 is taken from it (hash_fd
	 * valid when hash_pending): while the command starts, unless a check
	 * before the start needs it. */
	int hash_fd;
	bool hash_pending;
	/* The state directory whose digest cache a large file's hash goes
	 * through (core/store/exedigest.h); -1: hashed, as a re-run's is. */
	int cache_dir_fd;
};

/* A re-run (airlock run --fixes): the failed attempt it repeats, its id,
 * and the fix it follows; all zero for any other run. */
struct run_rerun {
	const struct receipt_rerun *failed;
	uint64_t of, fix_id;
};

/* The run's side of the gate (core/gate/gate.h). */
struct run_gate_state {
	char *scope; /* the git root of the cwd, else the cwd */
};

/* The quarantine: what it is built from, and what the receipt says of it.
 * Not enabled: --sandbox=none, the command runs on the host. */
struct run_quarantine {
	bool enabled;
	struct hostview view;
	/* sandbox.writable, resolved and checked; paths in writable_paths */
	struct sandbox_writable writable[SANDBOX_MAX_WRITABLE];
	char **writable_paths;
	size_t n_writable;
	/* read_only: the paths to protect before the run, the manifest's after */
	char **hide, **read_only, **exposed;
	struct receipt_sandbox sandbox; /* the receipt's "sandbox" */
	char denial_names[32][32];
	/* The quarantine's teardown, finished once the receipt is written. */
	struct sandbox_teardown *teardown;
};

struct run_state {
	const struct run_request *req;
	/* The run's policy, read only: the built-in one in place
	 * (policy_builtin()), or policy_owned. */
	const struct policy *policy;
	struct policy *policy_owned; /* a --policy file's, or a refused one's stand-in */
	struct store *store;
	struct receipt receipt;
	struct run_stream streams[2];
	char *cwd;
	struct run_exec exec;
	struct run_rerun rerun;
	struct run_env env;
	char *workspace;
	struct hostview_caller caller;
	char **state_dirs; /* every state directory airlock would use (core/host/hostview.h) */
	struct run_quarantine quarantine;
	char *state_dir_real;
	struct run_gate_state gate;
	struct run_dryrun dry; /* a dry run's snapshot (run_dryrun.h) */
	struct dryrun_judged_hook dryrun_judged; /* the context's (run.h) */
	struct run_hostcode host_code; /* the host-code check (run_hostcode.h) */
	bool net_proxy; /* sandbox.net's allowlist form applies: the proxy runs (run_net.h) */
	struct run_net net;
	bool store_durable; /* the session's store's, restored after the run */
	char message[1024];
	char id_text[32];
};

void run_outcome_release(struct run_outcome *outcome)
{
	json_decref(outcome->receipt);
	outcome->receipt = NULL;
	if (outcome->rerun) {
		run_outcome_release(outcome->rerun);
		free(outcome->rerun);
		outcome->rerun = NULL;
	}
}

static void run_stream_spill(struct run_stream *s, const void *data, size_t n)
{
	if (s->spill_fd < 0)
		return;
	size_t room = s->spill_max - s->spill_bytes;
	size_t take = MIN(n, room);
	int r = fd_write_all(s->spill_fd, data, take);
	if (r < 0) {
		snprintf(s->spill_error, sizeof(s->spill_error), "spill stopped at %llu bytes: %s",
			 (unsigned long long)s->spill_bytes, strerror(-r));
		close(s->spill_fd);
		s->spill_fd = -1;
		return;
	}
	s->spill_bytes += take;
	if (take < n) {
		s->spill_truncated = true;
		close(s->spill_fd);
		s->spill_fd = -1;
	}
}

static void run_stream_release(struct run_stream *s)
{
	capture_release(&s->capture);
	if (s->spill_fd >= 0)
		close(s->spill_fd);
}

/* Once the command is gone: the stream as the receipt reads it. */
static void run_stream_finish(struct run_stream *s, bool spilled, struct receipt_stream *rs)
{
	capture_finish(&s->capture);
	rs->capture = &s->capture;
	rs->spilled = spilled;
	rs->spill_bytes = s->spill_bytes;
	rs->spill_truncated = s->spill_truncated;
	rs->spill_error = s->spill_error[0] ? s->spill_error : NULL;
}

static void run_on_output(void *userdata, enum sandbox_stream stream, const void *data, size_t n)
{
	struct run_state *st = userdata;
	struct run_stream *s = &st->streams[stream == SANDBOX_STDOUT ? 0 : 1];

	capture_feed(&s->capture, data, n);
	run_stream_spill(s, data, n);
	if (s->tee_fd >= 0 && fd_write_all(s->tee_fd, data, n) < 0)
		s->tee_fd = -1; /* the terminal went away; the receipt still has it all */
}

static void run_quarantine_release(struct run_quarantine *q)
{
	sandbox_teardown_finish(q->teardown);
	for (size_t i = 0; i < q->sandbox.n_socket_denials; i++)
		free(q->sandbox.socket_denials[i].path);
	strv_free(q->hide);
	strv_free(q->read_only);
	strv_free(q->exposed);
	strv_free(q->writable_paths);
	hostview_release(&q->view);
}

static void run_state_release(struct run_state *st)
{
	run_quarantine_release(&st->quarantine);
	for (int i = 0; i < 2; i++)
		run_stream_release(&st->streams[i]);
	policy_free(st->policy_owned);
	if (st->store) /* the session's: as it was before this run */
		store_set_durable(st->store, st->store_durable);
	free(st->cwd);
	free(st->exec.path);
	if (st->exec.hash_pending)
		close(st->exec.hash_fd);
	free(st->workspace);
	free(st->state_dir_real);
	free(st->gate.scope);
	run_dryrun_release(&st->dry);
	run_hostcode_release(&st->host_code);
	run_net_release(&st->net);
	json_decref(st->quarantine.sandbox.network);
	strv_free(st->state_dirs);
	run_env_release(&st->env);
}

/* Marks the receipt as not run, with the reason in message. */
static void run_refuse(struct run_state *st, enum receipt_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void run_refuse(struct run_state *st, enum receipt_status status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->message, sizeof(st->message), fmt, ap);
	va_end(ap);
	st->receipt.status = status;
	st->receipt.error = st->message;
}

static void run_deny(struct run_state *st, const struct policy_denial *denial)
{
	run_refuse(st, RECEIPT_DENIED, "denied by policy rule %s: %s", denial->rule, denial->message);
	st->receipt.denied_rule = denial->rule;
	/* The denial lives on the caller's stack: keep a copy in message's tail. */
	size_t used = strlen(st->message) + 1;
	snprintf(st->message + used, sizeof(st->message) - used, "%s", denial->value);
	st->receipt.denied_value = st->message + used;
}

/* The absolute, resolved directory for `what` (wanted, or fallback when
 * wanted is NULL); records the refusal and returns NULL when it is not one. */
static char *run_resolve_dir(struct run_state *st, const char *what, const char *wanted,
			     const char *fallback)
{
	char *resolved = wanted ? realpath(wanted, NULL) : strdup(fallback);
	if (!resolved) {
		run_refuse(st, RECEIPT_INVALID, "%s '%.300s': %s", what, wanted ? wanted : fallback,
			   strerror(errno));
		return NULL;
	}
	struct stat sb;
	if (stat(resolved, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		run_refuse(st, RECEIPT_INVALID, "%s '%.300s' is not a directory", what, resolved);
		free(resolved);
		return NULL;
	}
	return resolved;
}

static int run_resolve_cwd(struct run_state *st)
{
	cleanup_free char *here = getcwd(NULL, 0);
	if (!here) {
		run_refuse(st, RECEIPT_INVALID, "cwd: %s", strerror(errno));
		return -1;
	}
	st->cwd = run_resolve_dir(st, "cwd", st->req->cwd, here);
	st->receipt.cwd = st->cwd;
	return st->cwd ? 0 : -1;
}

/* The workspace is made writable: refuse the places where that would hand
 * the host to the command (core/host/hostview.h), unless the caller allowed them.
 * Only the quarantine has a workspace; --sandbox=none runs on the host. */
static int run_check_workspace(struct run_state *st)
{
	struct error err = { 0 };

	if (!st->quarantine.enabled)
		return 0;
	if (hostview_check_workspace(st->workspace, st->req->allow_workspace, st->state_dirs,
				     &st->caller, &err) < 0) {
		run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
		return -1;
	}
	return 0;
}

static int run_resolve_workspace(struct run_state *st)
{
	st->workspace = run_resolve_dir(st, "workspace", st->req->workspace, st->cwd);
	if (!st->workspace)
		return -1;
	if (st->req->cwd_in_workspace && !path_is_under(st->cwd, st->workspace)) {
		/* Refused, and filed where the workspace's gate looks. */
		struct error ignored = { 0 };
		(void)gate_scope(st->workspace, &st->gate.scope, &ignored);
		run_refuse(st, RECEIPT_INVALID, "cwd '%.300s' is outside the workspace %.300s",
			   st->cwd, st->workspace);
		return -1;
	}
	st->quarantine.sandbox.workspace = st->workspace;
	return run_check_workspace(st);
}

/* sandbox.writable: each directory is opened, the path of that descriptor
 * is what is checked (core/host/hostview.h), and its device and inode go to the
 * sandbox, which binds that same directory or fails the run: a symlink
 * swapped in after the check binds nothing else. A dry run keeps them
 * read-only: nothing of it reaches the host before `airlock apply`. */
static int run_resolve_writable(struct run_state *st)
{
	char *const *writable = st->policy->writable;
	struct run_quarantine *q = &st->quarantine;
	struct error err = { 0 };

	if (!q->enabled || st->req->dryrun)
		return 0;
	for (size_t i = 0; writable && writable[i]; i++) {
		struct stat sb;
		cleanup_free char *resolved = NULL;
		cleanup_close int fd =
			hostview_open_writable(writable[i], st->workspace, st->state_dirs,
					       &st->caller, &sb, &resolved, &err);
		if (fd < 0) {
			run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
			return -1;
		}
		if (strv_contains(q->writable_paths, resolved))
			continue;
		if (q->n_writable == SANDBOX_MAX_WRITABLE ||
		    strv_push(&q->writable_paths, resolved) < 0) {
			run_refuse(st, RECEIPT_INVALID,
				   "sandbox.writable: too many paths, or out of memory");
			return -1;
		}
		q->writable[q->n_writable++] = (struct sandbox_writable){
			.path = q->writable_paths[strv_length(q->writable_paths) - 1],
			.dev = sb.st_dev,
			.ino = sb.st_ino,
		};
	}
	return 0;
}

/* sandbox.net's allowlist form reaches the network only through the proxy
 * of docs/network.md, which this run starts (run_spawn()); its variables go
 * into the command's environment (run_check_env()). --net host (a person's
 * choice for this run) and --sandbox none keep their meaning: no proxy. */
static int run_check_net(struct run_state *st)
{
	st->net_proxy = st->quarantine.enabled && st->policy->net_allowlist &&
			!st->req->share_net && !st->policy->share_net;
	return 0;
}

static size_t argv_total_bytes(char *const *argv)
{
	size_t n = 0;

	for (size_t i = 0; argv && argv[i]; i++)
		n += strlen(argv[i]) + 1;
	return n;
}

/* --fixes must name a failure that is open in this run's scope. */
/* Whether --fixes names a failure that this scope's gate lists (one of a
 * nested scope, gate_list_open): the same failures the gate blocks on. */
static bool run_fixes_visible(struct run_state *st, struct error *err)
{
	cleanup_with(gate_failures_release) struct gate_failures open = { 0 };

	if (gate_list_open(st->store, st->gate.scope, &open, err) < 0)
		return false;
	for (size_t i = 0; i < open.n; i++)
		if (open.v[i].receipt == st->req->fixes)
			return true;
	return false;
}

static int run_check_fixes(struct run_state *st)
{
	struct error err = { 0 };
	cleanup_with(gate_failure_release) struct gate_failure entry = { 0 };
	int r = gate_scope(st->cwd, &st->gate.scope, &err);
	if (r == 0)
		r = gate_find_open(st->store, st->req->fixes, &entry, &err);
	if (r == -ENOENT) {
		run_refuse(st, RECEIPT_INVALID, "--fixes %llu: receipt %llu is not an open failure",
			   (unsigned long long)st->req->fixes, (unsigned long long)st->req->fixes);
		return -1;
	}
	if (r < 0) {
		run_refuse(st, RECEIPT_INVALID, "--fixes %llu: %s",
			   (unsigned long long)st->req->fixes, err.msg);
		return -1;
	}
	/* A fix writes its own scope: a --workspace elsewhere (the hook
	 * judged its path, which a symlink swapped since may move) is refused.
	 * MCP's workspace is the server's, not the request's. */
	if (st->req->workspace && !st->req->cwd_in_workspace &&
	    !path_is_under(st->workspace, st->gate.scope)) {
		run_refuse(st, RECEIPT_INVALID,
			   "--fixes %llu: the workspace %.300s is outside the scope %.300s",
			   (unsigned long long)st->req->fixes, st->workspace, st->gate.scope);
		return -1;
	}
	const char *scope = entry.scope;
	if (scope && strcmp(scope, st->gate.scope) != 0 && run_fixes_visible(st, &err))
		return 0; /* a failure of a nested scope, which this one's gate sees */
	if (!scope || strcmp(scope, st->gate.scope) != 0) {
		run_refuse(st, RECEIPT_INVALID,
			   "--fixes %llu: that failure is open in %.300s, not in %.300s",
			   (unsigned long long)st->req->fixes, scope ? scope : "?", st->gate.scope);
		return -1;
	}
	return 0;
}

/* The request itself: valid, a command, an argv the policy allows. */
static int run_check_argv(struct run_state *st)
{
	const struct run_request *req = st->req;
	const struct policy *policy = st->policy;

	if (run_request_is_invalid(req)) {
		run_refuse(st, RECEIPT_INVALID, "%s", req->invalid_reason);
		return -1;
	}
	if (!req->argv || !req->argv[0] || !req->argv[0][0]) {
		run_refuse(st, RECEIPT_INVALID, "no command given");
		return -1;
	}
	size_t argv_bytes = argv_total_bytes(req->argv);
	if (argv_bytes > policy->max_argv_bytes) {
		struct policy_denial denial = { .rule = "max_argv_bytes" };
		snprintf(denial.value, sizeof(denial.value), "%zu", argv_bytes);
		snprintf(denial.message, sizeof(denial.message),
			 "argv is %zu bytes; the policy allows %llu (limits.max_argv_bytes)",
			 argv_bytes, (unsigned long long)policy->max_argv_bytes);
		run_deny(st, &denial);
		return -1;
	}
	return 0;
}

/* A dry run needs the quarantine, and a workspace its overlay can snapshot. */
static int run_check_dryrun(struct run_state *st)
{
	struct error err = { 0 };

	if (!st->quarantine.enabled) {
		run_refuse(st, RECEIPT_INVALID,
			   "a dry run needs the quarantine: its snapshot is an overlay in the quarantine's mount namespace (drop --sandbox=none)");
		return -1;
	}
	if (dryrun_check_workspace(st->workspace, st->state_dir_real, &err) < 0) {
		run_refuse(st, RECEIPT_SETUP_ERROR, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* The command's environment (core/run/env.h), for the receipt too. */
static int run_check_env(struct run_state *st, char **environ_)
{
	struct policy_denial denial;
	struct error err = { 0 };
	int r = run_env_build(st->policy, st->req, environ_, st->id_text, &st->env, &denial, &err);

	if (r < 0) {
		run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
		return -1;
	}
	if (r > 0) {
		run_deny(st, &denial);
		return -1;
	}
	/* After the policy's env.set: a policy cannot point them elsewhere. */
	if (st->net_proxy && run_net_env(&st->env.envp, &st->env.keys) < 0) {
		run_refuse(st, RECEIPT_SETUP_ERROR, "out of memory");
		return -1;
	}
	st->receipt.env_keys = st->env.keys;
	return 0;
}

/* Every check that can refuse the run before anything starts, in order;
 * returns -1 after recording the refusal. */
static int run_check_request(struct run_state *st, char **environ_)
{
	const struct run_request *req = st->req;
	struct policy_denial denial;

	if (run_check_argv(st) < 0 || run_resolve_cwd(st) < 0 || run_resolve_workspace(st) < 0 ||
	    run_resolve_writable(st) < 0 || run_check_net(st) < 0)
		return -1;
	if (req->fixes && run_check_fixes(st) < 0)
		return -1;
	if (req->dryrun && run_check_dryrun(st) < 0)
		return -1;
	if (policy_denies_argv0(st->policy, req->argv[0], &denial) ||
	    policy_denies_timeout(st->policy, st->receipt.timeout_ms,
				  req->has_kill_after ? &req->kill_after_ms : NULL,
				  &st->receipt.kill_after_ms, &denial)) {
		run_deny(st, &denial);
		return -1;
	}
	return run_check_env(st, environ_);
}

/* The SHA-256 of the bytes of the file ex->id names, from the descriptor
 * opened when it was identified (the same inode, whatever the path names
 * now); empty when it cannot be read. Taken once. Bytes written between
 * the identification and the end of the run change the file's ctime, which
 * run_exec_recheck() compares: the receipt then says changed_during_run,
 * as for a write while the command runs. */
static void run_exec_hash(struct run_exec *ex)
{
	if (!ex->hash_pending)
		return;
	int r = ex->id.size >= EXEDIGEST_MIN_SIZE && ex->cache_dir_fd >= 0
			? exedigest_sha256_fd(ex->cache_dir_fd, ex->hash_fd, ex->id.sha256)
			: sha256_fd_hex(ex->hash_fd, ex->id.sha256);
	if (r < 0)
		ex->id.sha256[0] = '\0';
	close(ex->hash_fd);
	ex->hash_fd = -1;
	ex->hash_pending = false;
}

/* Which file ex->path is: device, inode, size and the SHA-256 of its bytes
 * (empty when it cannot be read, as an execute-only file). With defer, the
 * digest is left to run_exec_hash(): the command's start overlaps it. */
static void run_exec_identify(struct run_exec *ex, const char *cwd, bool defer)
{
	/* A relative path is found from the command's cwd, as execve does. */
	cleanup_close int cwd_fd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd = openat(cwd_fd, ex->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat sb;

	if (cwd_fd < 0 || (fd >= 0 ? fstat(fd, &sb) : fstatat(cwd_fd, ex->path, &sb, 0)) < 0)
		return;
	ex->id = (struct receipt_exec_identity){ .dev = (uint64_t)sb.st_dev,
						 .ino = (uint64_t)sb.st_ino,
						 .size = (uint64_t)sb.st_size };
	ex->ctime = sb.st_ctim;
	ex->has_id = true;
	if (fd >= 0 && S_ISREG(sb.st_mode)) {
		ex->hash_fd = TAKE_FD(fd);
		ex->hash_pending = true;
		if (!defer)
			run_exec_hash(ex);
	}
}

/* After the run: a file replaced or written since its digest was taken
 * (a new inode, or a new ctime) is not known to be what ran. */
static void run_exec_recheck(struct run_exec *ex, const char *cwd)
{
	struct stat sb;
	run_exec_hash(ex); /* if the command never started */
	cleanup_close int cwd_fd = ex->has_id ? open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (ex->has_id &&
	    (cwd_fd < 0 || fstatat(cwd_fd, ex->path, &sb, 0) < 0 ||
	     (uint64_t)sb.st_dev != ex->id.dev || (uint64_t)sb.st_ino != ex->id.ino ||
	     sb.st_ctim.tv_sec != ex->ctime.tv_sec || sb.st_ctim.tv_nsec != ex->ctime.tv_nsec))
		ex->id.changed_during_run = true;
}

/* A re-run runs the executable the failed attempt ran, or nothing: the same
 * path, device, inode and bytes. One that was never resolved (not found)
 * is resolved afresh. */
static int run_check_rerun_exec(struct run_state *st)
{
	const struct receipt_rerun *rr = st->rerun.failed;

	if (!rr || !rr->exec_path)
		return 0;
	const struct receipt_exec_identity *was = &rr->identity, *now = &st->exec.id;
	bool same = strcmp(rr->exec_path, st->exec.path) == 0 &&
		    (!rr->has_identity ||
		     (st->exec.has_id && was->dev == now->dev && was->ino == now->ino &&
		      was->size == now->size && strcmp(was->sha256, now->sha256) == 0 &&
		      !was->changed_during_run));
	if (same)
		return 0;
	run_refuse(st, RECEIPT_INVALID,
		   "the executable changed since receipt %llu: it was %.300s (device %llu, inode %llu, sha256 %.16s), now %.300s (device %llu, inode %llu, sha256 %.16s); the re-run did not start",
		   (unsigned long long)st->rerun.of, rr->exec_path, (unsigned long long)was->dev,
		   (unsigned long long)was->ino, was->sha256[0] ? was->sha256 : "-", st->exec.path,
		   (unsigned long long)now->dev, (unsigned long long)now->ino,
		   now->sha256[0] ? now->sha256 : "-");
	return -1;
}

static int run_resolve_command(struct run_state *st)
{
	const char *cmd = st->req->argv[0];
	const char *path = strv_env_get(st->env.envp, "PATH");
	int r = sandbox_resolve_command(cmd, path, st->cwd, &st->exec.path);

	if (r == -ENOENT) {
		if (strchr(cmd, '/'))
			run_refuse(st, RECEIPT_NOT_FOUND, "'%.300s' not found", cmd);
		else
			run_refuse(st, RECEIPT_NOT_FOUND,
				   "'%.200s' not found in the command's PATH (%.300s)", cmd,
				   path ? path : "unset");
		return -1;
	}
	if (r == -EACCES) {
		run_refuse(st, RECEIPT_NOT_EXECUTABLE, "'%.300s' is not an executable file", cmd);
		return -1;
	}
	if (r < 0) {
		run_refuse(st, RECEIPT_SETUP_ERROR, "cannot resolve '%.300s': %s", cmd, strerror(-r));
		return -1;
	}
	st->receipt.exec_path = st->exec.path;
	/* A re-run compares the digest before it starts, read from the file
	 * itself; any other run takes it while the command starts
	 * (run_on_started()), a large file's through the cache. */
	st->exec.cache_dir_fd = st->rerun.failed ? -1 : store_dir_fd(st->store);
	run_exec_identify(&st->exec, st->cwd, !st->rerun.failed);
	if (st->exec.has_id)
		st->receipt.exec_identity = &st->exec.id;
	return run_check_rerun_exec(st);
}

/* The proxy's record pipe, read while the run lasts (sandbox_config.on_watch). */
static bool run_on_net_records(void *userdata, int fd)
{
	struct run_state *st = userdata;

	(void)fd;
	return run_net_read(&st->net);
}

/* While the command starts on the other core: the executable's digest, and
 * the inode of the receipt's cache file (store_prepare_receipt()). */
static void run_on_started(void *userdata)
{
	struct run_state *st = userdata;

	run_exec_hash(&st->exec);
	store_prepare_receipt(st->store, st->receipt.id);
}

static int run_open_streams(struct run_state *st, struct error *err)
{
	const struct run_request *req = st->req;
	static const char *const names[2] = { "stdout", "stderr" };
	const int tee[2] = { req->tee_stdout_fd, req->tee_stderr_fd };

	for (int i = 0; i < 2; i++) {
		struct run_stream *s = &st->streams[i];
		if (capture_init(&s->capture, st->policy->keep_bytes) < 0)
			return error_set(err, ENOMEM, "out of memory");
		s->tee_fd = tee[i];
		s->spill_max = st->policy->spill_max_bytes;
		if (req->spill) {
			int r = store_open_spill(st->store, st->receipt.id, names[i], true,
						 &s->spill_fd, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static struct receipt_limit *run_add_limit(struct run_quarantine *q, struct sandbox_config *config,
					   int resource, const char *name, uint64_t value,
					   const char *mechanism, enum receipt_limit_scope scope)
{
	if (resource >= 0)
		config->rlimits[config->n_rlimits++] = (struct sandbox_rlimit){ resource, value };
	struct receipt_limit *l = &q->sandbox.limits[q->sandbox.n_limits++];
	*l = (struct receipt_limit){ .name = name, .value = value, .mechanism = mechanism, .scope = scope };
	return l;
}

static void run_fill_limits(struct run_quarantine *q, const struct policy *policy,
			    struct sandbox_config *config)
{
	run_add_limit(q, config, RLIMIT_CORE, "core_bytes", policy->core_bytes, "RLIMIT_CORE",
		      RECEIPT_LIMIT_PROCESS);
	run_add_limit(q, config, RLIMIT_NOFILE, "open_files", policy->open_files, "RLIMIT_NOFILE",
		      RECEIPT_LIMIT_PROCESS);
	run_add_limit(q, config, RLIMIT_FSIZE, "file_size_bytes", policy->file_size_bytes,
		      "RLIMIT_FSIZE", RECEIPT_LIMIT_FILE);
	if (!config->isolation.enabled)
		return;
	/* Inside its own user namespace RLIMIT_NPROC counts only the
	 * quarantine's processes, root's included; on the host it would count
	 * every process of the caller. A pids cgroup, where the sandbox makes
	 * one, holds it too (run_settle_limits). */
	run_add_limit(q, config, RLIMIT_NPROC, "processes", policy->processes, "RLIMIT_NPROC",
		      RECEIPT_LIMIT_RUN);
	run_add_limit(q, config, RLIMIT_CPU, "cpu_seconds", policy->cpu_seconds, "RLIMIT_CPU",
		      RECEIPT_LIMIT_PROCESS);
	/* memory: a cgroup where the sandbox can make one, else RLIMIT_AS,
	 * which is not a memory limit (run_settle_limits) */
	run_add_limit(q, config, -1, "memory_bytes", policy->memory_bytes, "RLIMIT_AS",
		      RECEIPT_LIMIT_PROCESS);
}

/* Once the run says which cgroups held it: a memory limit is claimed only
 * when a memory cgroup held it. RLIMIT_AS bounds each process's address
 * space: memory no mapping holds (a memfd written and unmapped, System V
 * segments detached), the page cache and the kernel's own escape it, and
 * every process has its own. */
static void run_settle_limits(struct receipt_sandbox *sb)
{
	for (size_t i = 0; i < sb->n_limits; i++) {
		struct receipt_limit *l = &sb->limits[i];
		if (strcmp(l->name, "processes") == 0 && sb->cgroup_pids)
			l->mechanism = "cgroup-v1 pids";
		if (strcmp(l->name, "memory_bytes") != 0)
			continue;
		if (sb->cgroup_memory) {
			l->mechanism = "cgroup-v1 memory";
			l->scope = RECEIPT_LIMIT_RUN;
		} else {
			l->partial = true;
			l->not_counted =
				"memory no mapping holds (a memfd, System V shared memory), "
				"the page cache, kernel memory; and each process has its own";
		}
	}
}

static int run_build_isolation(struct run_state *st, struct sandbox_isolation *iso, struct error *err)
{
	const struct policy *policy = st->policy;
	struct run_quarantine *q = &st->quarantine;
	int r = hostview_build(policy, &st->caller, st->workspace, st->state_dirs, &q->view, err);
	if (r < 0)
		return r;
	for (size_t i = 0; policy->read_only && policy->read_only[i]; i++) {
		const char *p = policy->read_only[i];
		char *path = NULL;
		if (p[0] == '/' || p[0] == '~')
			path = hostview_expand_home(p, st->caller.home);
		else if (asprintf(&path, "%s/%s", st->workspace, p) < 0)
			path = NULL;
		if (path && strv_consume(&q->read_only, path) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	/* Every host's configuration in the workspace (core/agents/agenthost.h): the
	 * same, so the command can neither switch a host's hooks off nor give
	 * it code to run. */
	cleanup_strv char **configs = NULL;
	r = hostview_config_in_workspace(st->workspace, st->cwd, &st->caller, &configs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; configs && configs[i]; i++)
		if (!strv_contains(q->read_only, configs[i]) && strv_push(&q->read_only, configs[i]) < 0)
			return error_set(err, ENOMEM, "out of memory");
	r = run_hostcode_protect(&st->host_code, st->workspace, &q->read_only, err);
	if (r < 0)
		return r;
	*iso = (struct sandbox_isolation){
		.enabled = true,
		.share_net = st->req->share_net || policy->share_net,
		.workspace = st->workspace,
		.writable = q->writable,
		.n_writable = q->n_writable,
		.hide = q->view.hide,
		.masks = q->view.masks,
		.n_masks = q->view.n_masks,
		.read_only = q->read_only,
		.tmp_bytes = policy->tmp_bytes,
		.memory_bytes = policy->memory_bytes,
		.max_processes = policy->processes,
	};
	return 0;
}

/* What to do when a quarantine layer cannot be built (airlock doctor checks
 * each of them). */
static const char *run_layer_hint(enum sandbox_stage stage)
{
	switch (stage) {
	case SANDBOX_STAGE_USER_NS:
		return "user namespaces are refused here: check sysctl user.max_user_namespaces and "
		       "kernel.apparmor_restrict_unprivileged_userns; see airlock doctor";
	case SANDBOX_STAGE_MOUNTS:
	case SANDBOX_STAGE_PIVOT:
		return "the mount namespace could not be built (a masked /proc, as in some containers, "
		       "prevents a fresh one); see airlock doctor";
	case SANDBOX_STAGE_LANDLOCK:
		return "enable Landlock (lsm=landlock,...); see airlock doctor";
	case SANDBOX_STAGE_SECCOMP:
		return "the kernel must support seccomp user notification (Linux 5.0 or later)";
	default:
		return "see airlock doctor; --sandbox=none runs without the quarantine, on a disposable machine only";
	}
}

static void run_record_exec_failure(struct run_state *st, const struct sandbox_result *res)
{
	int e = res->failed_errno;
	const char *cmd = st->req->argv[0];

	st->receipt.setup_stage = sandbox_stage_to_string(res->failed_stage);
	st->receipt.setup_errno = e;
	if (res->failed_message[0])
		run_refuse(st, RECEIPT_SETUP_ERROR, "quarantine layer '%s' could not be set up: %.400s",
			   st->receipt.setup_stage, res->failed_message);
	else if (res->failed_stage >= SANDBOX_STAGE_USER_NS)
		run_refuse(st, RECEIPT_SETUP_ERROR,
			   "quarantine layer '%s' could not be set up: %s; the command did not run (%s)",
			   st->receipt.setup_stage, strerror(e), run_layer_hint(res->failed_stage));
	else if (res->failed_stage != SANDBOX_STAGE_EXEC)
		run_refuse(st, RECEIPT_SETUP_ERROR, "setting up the command failed at stage '%s': %s",
			   st->receipt.setup_stage, strerror(e));
	else if (e == ENOENT)
		run_refuse(st, RECEIPT_NOT_FOUND,
			   "cannot execute '%.300s': its interpreter or loader was not found", cmd);
	else if (e == ENOEXEC)
		run_refuse(st, RECEIPT_NOT_EXECUTABLE,
			   "cannot execute '%.300s': not a binary and no #! line (airlock never guesses a shell)",
			   cmd);
	else if (e == EACCES || e == EPERM || e == EISDIR || e == ETXTBSY || e == ELIBBAD)
		run_refuse(st, RECEIPT_NOT_EXECUTABLE, "cannot execute '%.300s': %s", cmd, strerror(e));
	else
		run_refuse(st, RECEIPT_SETUP_ERROR, "cannot execute '%.300s': %s", cmd, strerror(e));
}

static bool run_exit_matches(const struct run_request *req, int code)
{
	if (req->n_expected == 0)
		return code == 0;
	for (size_t i = 0; i < req->n_expected; i++)
		if (req->expected[i] == code)
			return true;
	return false;
}

static void run_record_result(struct run_state *st, const struct sandbox_result *res)
{
	struct receipt *rc = &st->receipt;

	rc->started_ns = res->started_realtime_ns;
	rc->ended_ns = res->ended_realtime_ns;
	rc->duration_ms = res->duration_ns / 1000000;
	rc->descendants_killed = res->descendants_killed;
	rc->max_rss_kib = res->max_rss_kib;
	rc->user_cpu_ms = res->user_cpu_ms;
	rc->system_cpu_ms = res->system_cpu_ms;
	switch (res->outcome) {
	case SANDBOX_EXITED:
		rc->status = RECEIPT_EXITED;
		rc->has_exit_code = true;
		rc->exit_code = res->exit_code;
		rc->match_expected = run_exit_matches(st->req, res->exit_code);
		break;
	case SANDBOX_SIGNALED:
		rc->status = RECEIPT_SIGNALED;
		rc->signal = res->term_signal;
		break;
	case SANDBOX_TIMED_OUT:
		rc->timed_out = !res->cancelled;
		rc->signal = res->term_signal;
		if (res->cancelled)
			run_refuse(st, RECEIPT_CANCELLED,
				   "cancelled by the client; the process tree was killed");
		else
			run_refuse(st, RECEIPT_TIMEOUT,
				   "timed out after %llu ms; the process tree was killed",
				   (unsigned long long)rc->timeout_ms);
		break;
	case SANDBOX_SETUP_FAILED:
		run_record_exec_failure(st, res);
		break;
	}
}

static const char *run_killed_by(const struct sandbox_result *res)
{
	/* The OOM killer's SIGKILL looks like any other: the cgroup says. */
	if (res->manifest.memory_limit_hit && res->outcome != SANDBOX_EXITED)
		return "memory";
	if (res->outcome == SANDBOX_TIMED_OUT)
		return res->cancelled ? "cancelled" : "timeout";
	if (res->outcome != SANDBOX_SIGNALED)
		return NULL;
	switch (res->term_signal) {
	case SIGXCPU:
		return "cpu";
	case SIGXFSZ:
		return "file_size";
	case SIGSYS:
		return "seccomp";
	default:
		return NULL;
	}
}

static const char *run_denial_name(struct run_quarantine *q, size_t i,
				   const struct sandbox_denial *denial)
{
	const char *name = sandbox_syscall_name(denial);

	if (!name)
		return NULL;
	snprintf(q->denial_names[i], sizeof(q->denial_names[i]), "%s", name);
	return q->denial_names[i];
}

static void run_record_sandbox(struct run_quarantine *q, const struct sandbox_config *config,
			       struct sandbox_result *res)
{
	struct receipt_sandbox *sb = &q->sandbox;

	sb->killed_by = run_killed_by(res);
	if (!res->manifest.isolated)
		return;
	/* The manifest outlives res: keep its lists. */
	strv_free(q->hide);
	strv_free(q->read_only);
	strv_free(q->exposed);
	q->hide = TAKE_PTR(res->manifest.hidden);
	q->read_only = TAKE_PTR(res->manifest.read_only);
	q->exposed = TAKE_PTR(res->manifest.exposed);
	sb->enforced = res->outcome != SANDBOX_SETUP_FAILED;
	sb->share_net = config->isolation.share_net;
	sb->writable = q->writable_paths;
	sb->tmp_bytes = config->isolation.tmp_bytes;
	sb->hidden = q->hide;
	sb->read_only = q->read_only;
	sb->exposed = q->exposed;
	sb->landlock_abi = res->manifest.landlock_abi;
	sb->landlock_scoped = res->manifest.landlock_scoped;
	sb->seccomp_rules = res->manifest.n_seccomp_rules;
	sb->cgroup_memory = res->manifest.cgroup_memory;
	sb->cgroup_pids = res->manifest.cgroup_pids;
	sb->memory_limit_hit = res->manifest.memory_limit_hit;
	sb->pids_limit_hit = res->manifest.pids_limit_hit;
	run_settle_limits(sb);
	for (size_t i = 0; i < res->n_denials && i < ARRAY_SIZE(sb->denials); i++)
		sb->denials[sb->n_denials++] = (struct receipt_denial){
			.syscall = run_denial_name(q, i, &res->denials[i]),
			.nr = res->denials[i].syscall_nr,
			.count = res->denials[i].count,
		};
	sb->denials_dropped = res->denials_dropped;
	sb->connect_mediated = res->manifest.connect_mediated;
	for (size_t i = 0; i < res->n_socket_denials && i < ARRAY_SIZE(sb->socket_denials); i++) {
		const char *path = res->socket_denials[i].path;
		char *text = utf8_sanitize(path, strlen(path), NULL);
		if (!text)
			continue;
		sb->socket_denials[sb->n_socket_denials++] = (struct receipt_socket_denial){
			.path = text,
			.count = res->socket_denials[i].count,
		};
	}
	sb->socket_denials_dropped = res->socket_denials_dropped;
}

static int run_spawn(struct run_state *st, struct error *err)
{
	int r = run_open_streams(st, err);
	if (r < 0)
		return r;

	struct sandbox_config config = {
		.exec_path = st->exec.path,
		.argv = st->req->argv,
		.envp = st->env.envp,
		.cwd = st->cwd,
		.timeout_ms = st->receipt.timeout_ms,
		.kill_after_ms = st->receipt.kill_after_ms, /* fits under timeout.max_ms */
		.cancel_fd = st->req->cancel_fd,
		.on_output = run_on_output,
		.on_started = run_on_started,
		.userdata = st,
	};
	if (st->quarantine.enabled && (r = run_build_isolation(st, &config.isolation, err)) < 0)
		return r;
	if (st->req->dryrun) {
		r = run_dryrun_prepare(&st->dry, st->store, st->receipt.id, st->req->permit_id,
				       st->workspace, &config.isolation, err);
		if (r < 0)
			return r;
		/* The snapshot's directories are new: asked again as they are
		 * now, by both spellings of the state directory the plan uses. */
		pathcache_forget_below(store_path(st->store));
		pathcache_forget_below(st->state_dir_real);
	}
	run_fill_limits(&st->quarantine, st->policy, &config);
	if (st->net_proxy) {
		/* Started before the quarantine: its start overlaps init's. */
		r = run_net_start(&st->net, st->policy->net_allow, st->policy->net_deny,
				  clock_monotonic_ns(), err);
		if (r < 0)
			return r;
		config.isolation.net_listener_to = st->net.listen_to;
		config.watch_fd = st->net.records_fd;
		config.on_watch = run_on_net_records;
	}

	struct sandbox_result res;
	r = sandbox_run_until_result(&config, &res, &st->quarantine.teardown, err);
	if (st->net_proxy) {
		run_net_stop(&st->net, r < 0 ? clock_realtime_ns() : res.ended_realtime_ns);
		st->quarantine.sandbox.network =
			run_net_json(&st->net, st->policy->net_allow, st->policy->net_deny);
	}
	if (r < 0)
		return error_prefix(err, "run '%.200s'", st->req->argv[0]);
	if (st->req->dryrun) {
		/* The snapshot is read once its overlay is gone with the quarantine. */
		sandbox_teardown_finish(TAKE_PTR(st->quarantine.teardown));
		if ((r = run_dryrun_collect(&st->dry, &res, err)) < 0)
			return r;
	}
	run_record_sandbox(&st->quarantine, &config, &res);
	run_stream_finish(&st->streams[0], st->req->spill, &st->receipt.out);
	run_stream_finish(&st->streams[1], st->req->spill, &st->receipt.err);
	run_record_result(st, &res);
	return 0;
}

static void run_fill_outcome(const struct run_state *st, json_t *doc, struct run_outcome *ret)
{
	const struct receipt *rc = &st->receipt;

	*ret = (struct run_outcome){
		.id = rc->id,
		.status = rc->status,
		.exit_code = rc->exit_code,
		.signal = rc->signal,
		.timed_out = rc->timed_out,
		.match_expected = rc->match_expected,
		.descendants_killed = rc->descendants_killed,
		.host_code_failed = rc->host_code && hostsafety_report_failed(rc->host_code),
		.receipt = doc,
	};
	for (int i = 0; i < 2; i++)
		if (st->streams[i].capture.hash)
			ret->output_bytes += st->streams[i].capture.total_bytes;
	if (rc->error)
		snprintf(ret->message, sizeof(ret->message), "%s", rc->error);
}

/* What the receipt does to the gate, decided before it is written. A
 * failure is opened first, so a crash cannot leave a failed receipt behind
 * an open gate. */
static int run_gate_prepare(struct run_state *st, struct gate_effect *effect, struct error *err)
{
	const struct run_request *req = st->req;

	if (!st->gate.scope) {
		/* The cwd may be what was invalid: fall back to the caller's. */
		cleanup_free char *here = getcwd(NULL, 0);
		const char *dir = st->cwd ? st->cwd : here;
		int r = dir ? gate_scope(dir, &st->gate.scope, err) : -ENOENT;
		if (r < 0)
			st->gate.scope = strdup(dir ? dir : "/");
		if (!st->gate.scope)
			return error_set(err, ENOMEM, "out of memory");
	}
	/* The rules are only needed to classify a failure, or the command of a
	 * --fixes run: a plain success does not pay for loading them. */
	bool failed = !st->receipt.match_expected || st->receipt.status != RECEIPT_EXITED;
	cleanup_with(rules_freep) struct rules *rules = NULL;
	if ((failed || req->fixes) && rules_load_default(&rules, err) < 0)
		return -EINVAL;
	/* The gate's rules are the installed ones, never a --policy file's. */
	const struct policy *installed = req->fixes ? policy_builtin() : NULL;
	bool trivial = installed && req->argv && req->argv[0] &&
		       gate_is_trivial(installed, rules, req->argv);
	/* A success inside a snapshot proves nothing about the real tree. */
	/* The run's policy: a file may set it, and unsetting the built-in's
	 * is a widening (docs/policy-format.md). */
	bool cancelled_opens = st->policy && st->policy->gate_cancelled_opens_failure;
	int r = gate_prepare(st->store, &st->receipt, rules, st->gate.scope, req->fixes,
			     st->rerun.of, trivial, !req->dryrun, cancelled_opens, effect, err);
	effect->fix = st->rerun.fix_id;
	/* The fix passed: the failed command runs again, as the next receipt. */
	if (r == 0 && effect->needs_rerun)
		r = store_allocate_id(st->store, &effect->rerun, err);
	return r;
}

static void run_gate_outcome(const struct gate_effect *effect, struct run_outcome *ret)
{
	ret->failure_opened = effect->opened;
	ret->rerun_id = effect->rerun;
	for (size_t i = 0; i < effect->n_closes && i < ARRAY_SIZE(ret->closes); i++)
		ret->closes[ret->n_closes++] = effect->closes[i];
	snprintf(ret->gate_note, sizeof(ret->gate_note), "%s", effect->note);
}

/* A dry run's "dryrun" object and verdict (run_dryrun_finish). */
static int run_dryrun_summary(struct run_state *st, json_t **ret_summary,
			      enum dryrun_verdict *ret_verdict, struct error *err)
{
	/* The summary's hints read the receipt's output. */
	cleanup_with(json_decrefp) json_t *doc = receipt_to_json(&st->receipt);
	if (!doc)
		return error_set(err, ENOMEM, "cannot build receipt %llu",
				 (unsigned long long)st->receipt.id);
	struct dryrun_request base = {
		.workspace = st->workspace,
		.succeeded = st->receipt.status == RECEIPT_EXITED && st->receipt.match_expected,
		.expect = st->req->expect_paths,
		.expect_delete = st->req->expect_delete,
		.host_code = st->host_code.checked ? &st->host_code.report : NULL,
		.judged = st->dryrun_judged,
	};
	return run_dryrun_finish(&st->dry, &base, st->store, st->receipt.id, doc, ret_summary,
				 ret_verdict, err);
}

static int run_write_receipt(struct run_state *st, struct run_outcome *ret, struct error *err)
{
	/* Like a shell, and like the seed runner: a command that could not be
	 * found reads as exit code 127, one that could not be executed as 126. */
	if (st->receipt.status == RECEIPT_NOT_FOUND || st->receipt.status == RECEIPT_NOT_EXECUTABLE) {
		st->receipt.has_exit_code = true;
		st->receipt.exit_code = st->receipt.status == RECEIPT_NOT_FOUND ? 127 : 126;
	}
	enum dryrun_verdict verdict = DRYRUN_VERDICT_NONE;
	cleanup_with(json_decrefp) json_t *dryrun = NULL;
	if (st->req->dryrun) {
		int r = run_dryrun_summary(st, &dryrun, &verdict, err);
		if (r < 0)
			return r;
	}
	st->receipt.dryrun = dryrun;
	cleanup_with(gate_effect_release) struct gate_effect effect = { 0 };
	struct error gate_err = { 0 };
	int gate_r = run_gate_prepare(st, &effect, &gate_err);
	/* The one commit path for receipts (gate_commit_receipt). */
	char warning[sizeof(ret->warning)];
	cleanup_with(json_decrefp) json_t *doc = NULL;
	int r = gate_commit_receipt(st->store, &st->receipt, gate_r < 0 ? NULL : &effect,
				    gate_err.msg, &doc, warning, sizeof(warning), err);
	st->receipt.dryrun = NULL;
	if (r < 0)
		return r;
	run_fill_outcome(st, NULL, ret);
	memcpy(ret->warning, warning, sizeof(warning));
	if (gate_r < 0) {
		/* The receipt is kept; the gate could not record it, and says so. */
		*err = gate_err;
		return error_prefix(err, "receipt %llu was written but the gate is not updated",
				    (unsigned long long)st->receipt.id);
	}
	run_gate_outcome(&effect, ret);
	ret->verdict = verdict;
	ret->receipt = TAKE_PTR(doc);
	return 0;
}

/* Files the run left that would make a host tool run code (core/host/hostsafety.h):
 * after a quarantined run they are moved aside and the receipt names them,
 * which opens a failure; a dry run's verdict names those in its snapshot. */
static void run_check_host_code(struct run_state *st)
{
	if (!st->quarantine.sandbox.enforced)
		return; /* nothing ran in the quarantine */
	struct run_hostcode_where where = {
		.store = st->store,
		.workspace = st->workspace,
		.dryrun = st->req->dryrun,
		.upper = st->dry.upper,
		.read_only = st->quarantine.read_only,
	};
	run_hostcode_check(&st->host_code, &where, &st->receipt);
}

/* A --policy file may narrow the built-in policy; one that widens it is
 * refused (denied, rule policy_widens) unless the approver approved its
 * digest (core/gate/policyapproval.h): here, before anything of it is used, for
 * every run, job, dry run and re-run alike (a permit's runs take the
 * built-in policy). A denied run keeps the file's origin and digest in its
 * receipt; nothing else of it applies. */
static int run_load_policy(struct run_state *st, const char *path)
{
	struct error err = { 0 };
	if (!path) {
		/* read only here: the built-in policy in place, no copy */
		st->policy = policy_builtin();
		return 0;
	}
	int r = policy_load_file(path, &st->policy_owned, &err);
	st->policy = st->policy_owned;
	struct policy_denial denial;
	if (r == 0 && policyapproval_denies(st->store, st->policy, &denial)) {
		run_deny(st, &denial);
		/* The built-in policy's values under the refused file's origin
		 * and digest: a copy, as that changes it. */
		struct policy *refused = TAKE_PTR(st->policy_owned);
		r = policy_load_default(&st->policy_owned, &err);
		st->policy = st->policy_owned;
		if (r == 0) {
			char *origin = st->policy_owned->origin;
			st->policy_owned->origin = refused->origin;
			refused->origin = origin;
			memcpy(st->policy_owned->sha256, refused->sha256, sizeof(refused->sha256));
		}
		policy_free(refused);
		return r < 0 ? -ENOMEM : -1;
	}
	if (r == 0)
		return 0;
	/* The attempt is still recorded, under the built-in policy's limits. */
	run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
	st->policy = policy_builtin();
	return -1;
}

/* A re-run runs under the policy its failed attempt ran under, or not at
 * all; returns -1 after recording the refusal. */
static int run_check_rerun_policy(struct run_state *st)
{
	const struct receipt_rerun *failed = st->rerun.failed;

	if (!failed || !failed->policy_sha256 || strcmp(failed->policy_sha256, st->policy->sha256) == 0)
		return 0;
	run_refuse(st, RECEIPT_INVALID,
		   "the policy %.300s changed since receipt %llu (sha256 %.16s, now %.16s); the re-run did not start",
		   st->policy->origin, (unsigned long long)st->rerun.of, failed->policy_sha256,
		   st->policy->sha256);
	return -1;
}

/* What the policy and the caller settle before any check, for every
 * receipt, a refused one included: the quarantine or not, the state
 * directories, the timeouts asked for. */
static int run_settle(struct run_state *st, const struct run_context *ctx, struct error *err)
{
	const struct run_request *req = st->req;
	struct receipt *rc = &st->receipt;

	store_set_durable(st->store, st->policy->fsync_receipts);
	rc->policy_origin = st->policy->origin;
	rc->policy_sha256 = st->policy->sha256;
	st->quarantine.enabled = req->sandbox_profile ? strcmp(req->sandbox_profile, "default") == 0
						      : st->policy->sandbox_enabled;
	st->quarantine.sandbox.profile = st->quarantine.enabled ? "default" : "none";
	rc->sandbox = &st->quarantine.sandbox;
	/* The checks and the quarantine's plan read the host's paths through
	 * one cache (sandbox/pathcache.h), which the sandbox closes before the
	 * command starts; a dry run makes its snapshot's directories while it
	 * plans, in the state directory, whose answers it then forgets
	 * (run_spawn()). Its table is sized by what the plan
	 * asks (it grows past that): the quarantine's a few hundred paths (its
	 * masks, hidden and read-only paths and their parents: 224 as root
	 * here), a run without one a dozen (the state directories, the hide
	 * list's homes, the workspace), so that run does not zero 90 KB. */
	pathcache_open(st->quarantine.enabled ? RUN_PATHCACHE_QUARANTINE : RUN_PATHCACHE_NONE);
	st->state_dir_real = realpath(store_path(st->store), NULL);
	st->caller = hostview_caller_from_env(ctx->session->environ_);
	st->quarantine.sandbox.allow_workspace = req->allow_workspace;
	struct error state_err = { 0 };
	if (hostview_state_dirs(st->state_dir_real, ctx->session->environ_, &st->caller,
				&st->state_dirs, &state_err) < 0)
		return error_set(err, ENOMEM, "out of memory");
	rc->timeout_ms = req->has_timeout ? req->timeout_ms : st->policy->default_timeout_ms;
	/* What was asked; run_check_request() sets the grace the run gets. */
	rc->kill_after_ms = req->has_kill_after ? req->kill_after_ms : st->policy->kill_after_ms;
	rc->started_ns = rc->ended_ns = clock_realtime_ns();
	return 0;
}

/* The command, once every check passed, and what is checked after it. */
static int run_command(struct run_state *st, struct error *err)
{
	/* The gate's scope is where the command was asked to run, read
	 * before it runs: not after whatever it does to the tree. */
	struct error ignored = { 0 };
	if (!st->gate.scope)
		(void)gate_scope(st->cwd, &st->gate.scope, &ignored);
	st->host_code.started_coarse_ns = clock_realtime_coarse_ns();
	int r = run_spawn(st, err);
	run_exec_hash(&st->exec); /* if it did not start */
	if (r < 0)
		return r;
	run_exec_recheck(&st->exec, st->cwd);
	run_check_host_code(st);
	return 0;
}

/* The stages of one attempt: the policy, the settings, the checks that may
 * refuse it, the command, the receipt (written for a refusal too). */
static int run_execute_with_store(struct run_state *st, const struct run_context *ctx,
				  struct run_outcome *ret, struct error *err)
{
	int refused = run_load_policy(st, ctx->policy_path);
	if (refused == -ENOMEM)
		return error_set(err, ENOMEM, "out of memory");
	if (refused == 0)
		refused = run_check_rerun_policy(st);
	/* run_settle() opens the path cache, once the quarantine is decided. */
	int r = run_settle(st, ctx, err);
	if (r == 0 && refused == 0 && run_check_request(st, ctx->session->environ_) == 0 &&
	    run_resolve_command(st) == 0)
		r = run_command(st, err);
	pathcache_close();
	if (r < 0)
		return r;
	/* The receipt is written while the kernel tears the quarantine down. */
	r = run_write_receipt(st, ret, err);
	sandbox_teardown_finish(TAKE_PTR(st->quarantine.teardown));
	return r;
}

/* One attempt, and its receipt. rerun, when not NULL, makes it the re-run
 * of a failed attempt; id, when not 0, was allocated for it. */
static int run_execute_one(const struct run_context *ctx, const struct run_request *req, uint64_t id,
			   const struct run_rerun *rerun, struct run_outcome *ret, struct error *err)
{
	struct run_state st = {
		.req = req,
		.dryrun_judged = ctx->dryrun_judged,
		.rerun = rerun ? *rerun : (struct run_rerun){ 0 },
		.streams = { { .spill_fd = -1, .tee_fd = -1 }, { .spill_fd = -1, .tee_fd = -1 } },
		.receipt = {
			.source = req->source,
			.argv = req->argv,
			.job_id = req->job_id,
			.rationale = req->rationale,
			.job_sha256 = req->job_sha256,
			.expected = req->expected,
			.n_expected = req->n_expected,
		},
	};
	static const int default_expected[] = { 0 };
	if (req->n_expected == 0) {
		st.receipt.expected = default_expected;
		st.receipt.n_expected = 1;
	}

	int r = session_store(ctx->session, true, &st.store, err);
	if (r == 0)
		st.store_durable = store_durable(st.store);
	if (r == 0 && id)
		st.receipt.id = id;
	else if (r == 0)
		r = store_allocate_id(st.store, &st.receipt.id, err);
	if (r == 0) {
		snprintf(st.id_text, sizeof(st.id_text), "%llu", (unsigned long long)st.receipt.id);
		r = run_execute_with_store(&st, ctx, ret, err);
	}
	run_state_release(&st);
	return r;
}

/* The request that repeats a recorded attempt exactly (receipt_rerun), with
 * the fix run's terminal. */
static int run_rerun_request(const struct receipt_rerun *rr, const struct run_request *fix,
			     struct run_request *req)
{
	run_request_init(req);
	req->source = "rerun";
	for (size_t i = 0; rr->argv[i]; i++)
		if (strv_push(&req->argv, rr->argv[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; rr->env_keys && rr->env_keys[i]; i++)
		if (strv_push(&req->env_allow, rr->env_keys[i]) < 0 ||
		    strv_push(&req->env_force, rr->env_keys[i]) < 0)
			return -ENOMEM;
	req->env_replace = true; /* the same names, no more */
	req->cwd = strdup(rr->cwd);
	if (!req->cwd || (rr->workspace && !(req->workspace = strdup(rr->workspace))))
		return -ENOMEM;
	req->has_timeout = req->has_kill_after = rr->timeout_ms > 0;
	req->timeout_ms = rr->timeout_ms;
	req->kill_after_ms = rr->kill_after_ms;
	memcpy(req->expected, rr->expected, rr->n_expected * sizeof(rr->expected[0]));
	req->n_expected = rr->n_expected;
	req->sandbox_profile = rr->sandbox_profile;
	req->allow_workspace = rr->allow_workspace;
	req->share_net = rr->share_net;
	req->tee_stdout_fd = fix->tee_stdout_fd;
	req->tee_stderr_fd = fix->tee_stderr_fd;
	return 0;
}

static int run_read_failed(const struct run_context *ctx, uint64_t id, json_t **ret, struct error *err)
{
	struct store *store = NULL;
	cleanup_free char *text = NULL;

	int r = session_store(ctx->session, false, &store, err);
	if (r == 0)
		r = store_read_receipt(store, id, &text, err);
	if (r == 0)
		r = jsonutil_parse_object(text, strlen(text), ret, err);
	return r;
}

/* The fix passed: the failed attempt runs again as receipt ret->rerun_id,
 * under its own policy; only its success closes the failure. */
static int run_execute_rerun(const struct run_context *ctx, const struct run_request *fix,
			     struct run_outcome *fix_outcome, struct error *err)
{
	cleanup_with(json_decrefp) json_t *failed = NULL;
	struct receipt_rerun rr = { 0 };
	struct run_request req;
	struct error why = { 0 };
	int r = run_read_failed(ctx, fix->fixes, &failed, &why);

	if (r == 0)
		r = receipt_rerun_from_json(failed, &rr, &why);
	if (r == 0 && run_rerun_request(&rr, fix, &req) < 0) {
		run_request_release(&req);
		receipt_rerun_release(&rr);
		return error_set(err, ENOMEM, "out of memory");
	}
	if (r < 0) {
		/* Its id is taken and the fix names it: it is still recorded. */
		run_request_init(&req);
		req.source = "rerun";
		run_request_set_invalid(&req, "receipt %llu cannot be re-run: %s",
					(unsigned long long)fix->fixes, why.msg);
	}
	struct run_context rerun_ctx = *ctx;
	rerun_ctx.policy_path = rr.policy && strcmp(rr.policy, "default") != 0 ? rr.policy : NULL;
	struct run_outcome *out = calloc(1, sizeof(*out));
	if (!out)
		r = error_set(err, ENOMEM, "out of memory");
	else
		r = run_execute_one(&rerun_ctx, &req, fix_outcome->rerun_id,
				    &(struct run_rerun){ .failed = r == 0 ? &rr : NULL,
							 .of = fix->fixes,
							 .fix_id = fix_outcome->id },
				    out, err);
	if (r == 0)
		fix_outcome->rerun = out;
	else
		free(out);
	run_request_release(&req);
	receipt_rerun_release(&rr);
	return r;
}

int run_execute(const struct run_context *ctx, const struct run_request *req,
		struct run_outcome *ret, struct error *err)
{
	int r = run_execute_one(ctx, req, 0, NULL, ret, err);

	if (r < 0 || !ret->rerun_id)
		return r;
	return run_execute_rerun(ctx, req, ret, err);
}
