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
#include "core/gate/gate.h"
#include "core/host/hostsafety.h"
#include "core/host/hostview.h"
#include "core/store/jsonutil.h"
#include "core/policy/policy.h"
#include "core/gate/policyapproval.h"
#include "core/policy/rules.h"
#include "core/session/session.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"


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

struct run_state {
	const struct run_request *req;
	struct policy *policy;
	struct store *store;
	struct receipt receipt;
	struct run_stream streams[2];
	char *cwd;
	char *exec_path;
	struct receipt_exec_identity exec_id; /* valid when has_exec_id */
	bool has_exec_id;
	struct timespec exec_ctime; /* when exec_id was taken */
	/* A re-run (airlock run --fixes): the failed attempt it repeats, its id,
	 * and the fix it follows. */
	const struct receipt_rerun *rerun;
	uint64_t rerun_of, fix_id;
	uint64_t rerun_id; /* a fix run: the id allocated for its re-run */
	struct run_env env;
	char *workspace;
	struct hostview_caller caller;
	char **state_dirs; /* every state directory airlock would use (core/host/hostview.h) */
	struct hostview view;
	char **hide, **read_only, **exposed;
	char **known_gitdirs; /* core/host/hostsafety.h, read before the run */
	/* Protected paths that existed before the run as a directory, or as a
	 * file with no other link: their read-only mounts leave the command no
	 * way to change them, so a change seen after the run is the host's
	 * own (its tool writing .claude/settings.local.json meanwhile), not
	 * moved aside. Absolute. */
	char **protected_sealed;
	/* sandbox.writable, resolved and checked; paths in writable_paths */
	struct sandbox_writable writable[SANDBOX_MAX_WRITABLE];
	char **writable_paths;
	size_t n_writable;
	struct receipt_sandbox sandbox;
	bool sandbox_enabled;
	char *state_dir_real;
	bool store_durable; /* the session's store's, restored after the run */
	char *scope; /* the gate's scope: the git root of the cwd, else the cwd */
	char *dry_upper, *dry_work; /* dry runs: the snapshot's overlay directories */
	bool dry_ran; /* the snapshot was built and the command started in it */
	mode_t dry_root_mode; /* the mode the command left on the workspace root */
	/* The quarantine's teardown, finished once the receipt is written. */
	struct sandbox_teardown *teardown;
	json_t *outside_writes; /* dry runs: what the command tried to write outside */
	unsigned outside_writes_dropped;
	bool dry_owners; /* every id mapped: the change set carries owners */
	unsigned dry_device_nodes; /* device nodes root's real run would have made */
	unsigned dry_privileged_xattrs; /* trusted.*, file capabilities: likewise */
	unsigned dry_setid_refused; /* set-id requests the filter refused */
	char dry_setid_syscall[24]; /* the first one's system call */
	/* dry runs: the traced calls on paths inside the workspace (heap) */
	struct sandbox_path_event *path_events;
	size_t n_path_events;
	bool path_events_overflow;
	/* dry runs: what the command left in the private /tmp */
	bool scratch_counted;
	uint64_t scratch_entries, scratch_bytes;
	struct hostsafety_report host_code; /* valid when host_code_checked */
	bool host_code_checked;
	uint64_t started_coarse_ns; /* the run's start on the file systems' clock */
	char host_code_message[1024];
	char denial_names[32][32];
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

static void run_on_output(void *userdata, enum sandbox_stream stream, const void *data, size_t n)
{
	struct run_state *st = userdata;
	struct run_stream *s = &st->streams[stream == SANDBOX_STDOUT ? 0 : 1];

	capture_feed(&s->capture, data, n);
	run_stream_spill(s, data, n);
	if (s->tee_fd >= 0 && fd_write_all(s->tee_fd, data, n) < 0)
		s->tee_fd = -1; /* the terminal went away; the receipt still has it all */
}

static void run_state_release(struct run_state *st)
{
	sandbox_teardown_finish(st->teardown);
	for (int i = 0; i < 2; i++) {
		capture_release(&st->streams[i].capture);
		if (st->streams[i].spill_fd >= 0)
			close(st->streams[i].spill_fd);
	}
	policy_free(st->policy);
	if (st->store) /* the session's: as it was before this run */
		st->store->durable = st->store_durable;
	free(st->cwd);
	free(st->exec_path);
	free(st->workspace);
	free(st->state_dir_real);
	free(st->scope);
	free(st->dry_upper);
	free(st->dry_work);
	json_decref(st->outside_writes);
	for (size_t i = 0; i < st->n_path_events; i++)
		free(st->path_events[i].path);
	free(st->path_events);
	for (size_t i = 0; i < st->sandbox.n_socket_denials; i++)
		free(st->sandbox.socket_denials[i].path);
	hostsafety_report_release(&st->host_code);
	strv_free(st->hide);
	strv_free(st->read_only);
	strv_free(st->state_dirs);
	strv_free(st->exposed);
	strv_free(st->known_gitdirs);
	strv_free(st->protected_sealed);
	strv_free(st->writable_paths);
	hostview_release(&st->view);
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
	run_refuse(st, RECEIPT_DENIED, "denied by policy rule %s: %s", denial->rule,
		   denial->message);
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

	if (!st->sandbox_enabled)
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
	st->sandbox.workspace = st->workspace;
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
	struct error err = { 0 };

	if (!st->sandbox_enabled || st->req->dryrun)
		return 0;
	for (size_t i = 0; writable && writable[i]; i++) {
		struct stat sb;
		cleanup_free char *resolved = NULL;
		cleanup_close int fd = hostview_open_writable(writable[i], st->workspace, st->state_dirs,
							      &st->caller, &sb, &resolved, &err);
		if (fd < 0) {
			run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
			return -1;
		}
		if (strv_contains(st->writable_paths, resolved))
			continue;
		if (st->n_writable == SANDBOX_MAX_WRITABLE ||
		    strv_push(&st->writable_paths, resolved) < 0) {
			run_refuse(st, RECEIPT_INVALID, "sandbox.writable: too many paths, or out of memory");
			return -1;
		}
		st->writable[st->n_writable++] = (struct sandbox_writable){
			.path = st->writable_paths[strv_length(st->writable_paths) - 1],
			.dev = sb.st_dev,
			.ino = sb.st_ino,
		};
	}
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
	cleanup_with(json_decrefp) json_t *open = NULL;
	size_t i;
	json_t *entry;

	if (gate_list_open(st->store, st->scope, &open, err) < 0)
		return false;
	json_array_foreach(open, i, entry)
		if ((uint64_t)json_integer_value(json_object_get(entry, "receipt")) == st->req->fixes)
			return true;
	return false;
}

static int run_check_fixes(struct run_state *st)
{
	struct error err = { 0 };
	cleanup_with(json_decrefp) json_t *entry = NULL;
	int r = gate_scope(st->cwd, &st->scope, &err);
	if (r == 0)
		r = gate_find_open(st->store, st->req->fixes, &entry, &err);
	if (r == -ENOENT) {
		run_refuse(st, RECEIPT_INVALID, "--fixes %llu: receipt %llu is not an open failure",
			   (unsigned long long)st->req->fixes, (unsigned long long)st->req->fixes);
		return -1;
	}
	if (r < 0) {
		run_refuse(st, RECEIPT_INVALID, "--fixes %llu: %s", (unsigned long long)st->req->fixes,
			   err.msg);
		return -1;
	}
	const char *scope = json_string_value(json_object_get(entry, "scope"));
	if (scope && strcmp(scope, st->scope) != 0 && run_fixes_visible(st, &err))
		return 0; /* a failure of a nested scope, which this one's gate sees */
	if (!scope || strcmp(scope, st->scope) != 0) {
		run_refuse(st, RECEIPT_INVALID, "--fixes %llu: that failure is open in %.300s, not in %.300s",
			   (unsigned long long)st->req->fixes, scope ? scope : "?", st->scope);
		return -1;
	}
	return 0;
}

/* Every check that can refuse the run before anything starts, in order;
 * returns -1 after recording the refusal. */
static int run_check_request(struct run_state *st, char **environ_)
{
	const struct run_request *req = st->req;
	const struct policy *policy = st->policy;
	struct policy_denial denial;

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
		denial = (struct policy_denial){ .rule = "max_argv_bytes" };
		snprintf(denial.value, sizeof(denial.value), "%zu", argv_bytes);
		snprintf(denial.message, sizeof(denial.message),
			 "argv is %zu bytes; the policy allows %llu (limits.max_argv_bytes)",
			 argv_bytes, (unsigned long long)policy->max_argv_bytes);
		run_deny(st, &denial);
		return -1;
	}
	if (run_resolve_cwd(st) < 0 || run_resolve_workspace(st) < 0 ||
	    run_resolve_writable(st) < 0)
		return -1;
	if (req->fixes && run_check_fixes(st) < 0)
		return -1;
	if (req->dryrun && !st->sandbox_enabled) {
		run_refuse(st, RECEIPT_INVALID,
			   "a dry run needs the quarantine: its snapshot is an overlay in the quarantine's mount namespace (drop --sandbox=none)");
		return -1;
	}
	if (req->dryrun) {
		struct error err = { 0 };
		if (dryrun_check_workspace(st->workspace, st->state_dir_real, &err) < 0) {
			run_refuse(st, RECEIPT_SETUP_ERROR, "%s", err.msg);
			return -1;
		}
	}
	if (policy_denies_argv0(policy, req->argv[0], &denial) ||
	    policy_denies_timeout(policy, st->receipt.timeout_ms,
				  req->has_kill_after ? &req->kill_after_ms : NULL,
				  &st->receipt.kill_after_ms, &denial)) {
		run_deny(st, &denial);
		return -1;
	}
	struct error err = { 0 };
	int r = run_env_build(policy, req, environ_, st->id_text, &st->env, &denial, &err);
	if (r < 0) {
		run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
		return -1;
	}
	if (r > 0) {
		run_deny(st, &denial);
		return -1;
	}
	st->receipt.env_keys = st->env.keys;
	return 0;
}

/* Which file exec_path is: device, inode, size and the SHA-256 of its bytes
 * (empty when it cannot be read, as an execute-only file). */
static void run_exec_identity(struct run_state *st)
{
	/* A relative exec_path is found from the command's cwd, as execve does. */
	cleanup_close int cwd_fd = open(st->cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd = openat(cwd_fd, st->exec_path,
				      O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat sb;

	if (cwd_fd < 0 || (fd >= 0 ? fstat(fd, &sb) : fstatat(cwd_fd, st->exec_path, &sb, 0)) < 0)
		return;
	st->exec_id = (struct receipt_exec_identity){ .dev = (uint64_t)sb.st_dev,
						      .ino = (uint64_t)sb.st_ino,
						      .size = (uint64_t)sb.st_size };
	st->exec_ctime = sb.st_ctim;
	if (fd >= 0 && S_ISREG(sb.st_mode) && sha256_fd_hex(fd, st->exec_id.sha256) < 0)
		st->exec_id.sha256[0] = '\0';
	st->has_exec_id = true;
	st->receipt.exec_identity = &st->exec_id;
}

/* A re-run runs the executable the failed attempt ran, or nothing: the same
 * path, device, inode and bytes. One that was never resolved (not found)
 * is resolved afresh. */
static int run_check_rerun_exec(struct run_state *st)
{
	const struct receipt_rerun *rr = st->rerun;

	if (!rr || !rr->exec_path)
		return 0;
	const struct receipt_exec_identity *was = &rr->identity, *now = &st->exec_id;
	bool same = strcmp(rr->exec_path, st->exec_path) == 0 &&
		    (!rr->has_identity ||
		     (st->has_exec_id && was->dev == now->dev && was->ino == now->ino &&
		      was->size == now->size && strcmp(was->sha256, now->sha256) == 0 &&
		      !was->changed_during_run));
	if (same)
		return 0;
	run_refuse(st, RECEIPT_INVALID,
		   "the executable changed since receipt %llu: it was %.300s (device %llu, inode %llu, sha256 %.16s), now %.300s (device %llu, inode %llu, sha256 %.16s); the re-run did not start",
		   (unsigned long long)st->rerun_of, rr->exec_path, (unsigned long long)was->dev,
		   (unsigned long long)was->ino, was->sha256[0] ? was->sha256 : "-", st->exec_path,
		   (unsigned long long)now->dev, (unsigned long long)now->ino,
		   now->sha256[0] ? now->sha256 : "-");
	return -1;
}

static int run_resolve_command(struct run_state *st)
{
	const char *cmd = st->req->argv[0];
	const char *path = strv_env_get(st->env.envp, "PATH");
	int r = sandbox_resolve_command(cmd, path, st->cwd, &st->exec_path);

	if (r == -ENOENT) {
		if (strchr(cmd, '/'))
			run_refuse(st, RECEIPT_NOT_FOUND, "'%.300s' not found", cmd);
		else
			run_refuse(st, RECEIPT_NOT_FOUND, "'%.200s' not found in the command's PATH (%.300s)",
				   cmd, path ? path : "unset");
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
	st->receipt.exec_path = st->exec_path;
	run_exec_identity(st);
	return run_check_rerun_exec(st);
}

/* After the run: a file replaced or written since its digest was taken
 * (a new inode, or a new ctime) is not known to be what ran. */
static void run_recheck_exec_identity(struct run_state *st)
{
	struct stat sb;
	cleanup_close int cwd_fd =
		st->has_exec_id ? open(st->cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (st->has_exec_id &&
	    (cwd_fd < 0 || fstatat(cwd_fd, st->exec_path, &sb, 0) < 0 ||
	     (uint64_t)sb.st_dev != st->exec_id.dev || (uint64_t)sb.st_ino != st->exec_id.ino ||
	     sb.st_ctim.tv_sec != st->exec_ctime.tv_sec ||
	     sb.st_ctim.tv_nsec != st->exec_ctime.tv_nsec))
		st->exec_id.changed_during_run = true;
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

static struct receipt_limit *run_add_limit(struct run_state *st, struct sandbox_config *config,
					   int resource, const char *name, uint64_t value,
					   const char *mechanism, enum receipt_limit_scope scope)
{
	if (resource >= 0)
		config->rlimits[config->n_rlimits++] = (struct sandbox_rlimit){ resource, value };
	struct receipt_limit *l = &st->sandbox.limits[st->sandbox.n_limits++];
	*l = (struct receipt_limit){ .name = name, .value = value, .mechanism = mechanism,
				     .scope = scope };
	return l;
}

static void run_fill_limits(struct run_state *st, struct sandbox_config *config)
{
	const struct policy *policy = st->policy;

	run_add_limit(st, config, RLIMIT_CORE, "core_bytes", policy->core_bytes, "RLIMIT_CORE",
		      RECEIPT_LIMIT_PROCESS);
	run_add_limit(st, config, RLIMIT_NOFILE, "open_files", policy->open_files, "RLIMIT_NOFILE",
		      RECEIPT_LIMIT_PROCESS);
	run_add_limit(st, config, RLIMIT_FSIZE, "file_size_bytes", policy->file_size_bytes,
		      "RLIMIT_FSIZE", RECEIPT_LIMIT_FILE);
	if (!config->isolation.enabled)
		return;
	/* Inside its own user namespace RLIMIT_NPROC counts only the
	 * quarantine's processes, root's included; on the host it would count
	 * every process of the caller. A pids cgroup, where the sandbox makes
	 * one, holds it too (run_settle_limits). */
	run_add_limit(st, config, RLIMIT_NPROC, "processes", policy->processes, "RLIMIT_NPROC",
		      RECEIPT_LIMIT_RUN);
	run_add_limit(st, config, RLIMIT_CPU, "cpu_seconds", policy->cpu_seconds, "RLIMIT_CPU",
		      RECEIPT_LIMIT_PROCESS);
	/* memory: a cgroup where the sandbox can make one, else RLIMIT_AS,
	 * which is not a memory limit (run_settle_limits) */
	run_add_limit(st, config, -1, "memory_bytes", policy->memory_bytes, "RLIMIT_AS",
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
			l->not_counted = "memory no mapping holds (a memfd, System V shared memory), "
					 "the page cache, kernel memory; and each process has its own";
		}
	}
}

static int run_build_isolation(struct run_state *st, struct sandbox_isolation *iso,
			       struct error *err)
{
	const struct policy *policy = st->policy;
	int r = hostview_build(policy, &st->caller, st->workspace, st->state_dirs, &st->view, err);
	if (r < 0)
		return r;
	for (size_t i = 0; policy->read_only && policy->read_only[i]; i++) {
		const char *p = policy->read_only[i];
		char *path = NULL;
		if (p[0] == '/' || p[0] == '~')
			path = hostview_expand_home(p, st->caller.home);
		else if (asprintf(&path, "%s/%s", st->workspace, p) < 0)
			path = NULL;
		if (path && strv_consume(&st->read_only, path) < 0)
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
		if (!strv_contains(st->read_only, configs[i]) && strv_push(&st->read_only, configs[i]) < 0)
			return error_set(err, ENOMEM, "out of memory");
	/* The repository's other files that would run code on the host, where
	 * they exist: read-only too (core/host/hostsafety.h). */
	if (hostsafety_protect_existing(st->workspace, &st->read_only) < 0 ||
	    hostsafety_known_gitdirs(st->workspace, &st->known_gitdirs) < 0)
		return -ENOMEM;
	for (size_t i = 0; st->read_only && st->read_only[i]; i++) {
		struct stat pst;
		if (lstat(st->read_only[i], &pst) == 0 &&
		    (S_ISDIR(pst.st_mode) || (S_ISREG(pst.st_mode) && pst.st_nlink == 1)) &&
		    strv_push(&st->protected_sealed, st->read_only[i]) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	*iso = (struct sandbox_isolation){
		.enabled = true,
		.share_net = st->req->share_net || policy->share_net,
		.workspace = st->workspace,
		.writable = st->writable,
		.n_writable = st->n_writable,
		.hide = st->view.hide,
		.masks = st->view.masks,
		.n_masks = st->view.n_masks,
		.read_only = st->read_only,
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
		run_refuse(st, RECEIPT_NOT_EXECUTABLE, "cannot execute '%.300s': %s", cmd,
			   strerror(e));
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
		rc->timed_out = true;
		rc->signal = res->term_signal;
		run_refuse(st, RECEIPT_TIMEOUT, "timed out after %llu ms; the process tree was killed",
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
		return "timeout";
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

static const char *run_denial_name(struct run_state *st, size_t i,
				   const struct sandbox_denial *denial)
{
	const char *name = sandbox_syscall_name(denial);

	if (!name)
		return NULL;
	snprintf(st->denial_names[i], sizeof(st->denial_names[i]), "%s", name);
	return st->denial_names[i];
}

static void run_record_sandbox(struct run_state *st, const struct sandbox_config *config,
			       struct sandbox_result *res)
{
	struct receipt_sandbox *sb = &st->sandbox;

	sb->killed_by = run_killed_by(res);
	if (!res->manifest.isolated)
		return;
	/* The manifest outlives res: keep its lists. */
	strv_free(st->hide);
	strv_free(st->read_only);
	strv_free(st->exposed);
	st->hide = TAKE_PTR(res->manifest.hidden);
	st->read_only = TAKE_PTR(res->manifest.read_only);
	st->exposed = TAKE_PTR(res->manifest.exposed);
	sb->enforced = res->outcome != SANDBOX_SETUP_FAILED;
	sb->share_net = config->isolation.share_net;
	sb->writable = st->writable_paths;
	sb->tmp_bytes = config->isolation.tmp_bytes;
	sb->hidden = st->hide;
	sb->read_only = st->read_only;
	sb->exposed = st->exposed;
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
			.syscall = run_denial_name(st, i, &res->denials[i]),
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
		.exec_path = st->exec_path,
		.argv = st->req->argv,
		.envp = st->env.envp,
		.cwd = st->cwd,
		.timeout_ms = st->receipt.timeout_ms,
		.kill_after_ms = st->receipt.kill_after_ms, /* fits under timeout.max_ms */
		.on_output = run_on_output,
		.userdata = st,
	};
	if (st->sandbox_enabled && (r = run_build_isolation(st, &config.isolation, err)) < 0)
		return r;
	if (st->req->dryrun) {
		r = dryrun_prepare(st->store, st->receipt.id, st->workspace, &st->dry_upper,
				   &st->dry_work, err);
		if (r < 0)
			return r;
		config.isolation.overlay_upper = st->dry_upper;
		config.isolation.overlay_work = st->dry_work;
		config.isolation.trace_outside_writes = true;
		/* Honoured for root only (docs/dryrun.md, "Root"); plain run keeps
		 * the caller's own ids. */
		config.isolation.map_ids_through = true;
	}
	run_fill_limits(st, &config);

	struct sandbox_result res;
	r = sandbox_run_until_result(&config, &res, &st->teardown, err);
	if (r < 0)
		return error_prefix(err, "run '%.200s'", st->req->argv[0]);
	st->dry_ran = st->req->dryrun && res.outcome != SANDBOX_SETUP_FAILED;
	if (st->req->dryrun) {
		/* The snapshot is read once its overlay is gone with the quarantine. */
		sandbox_teardown_finish(TAKE_PTR(st->teardown));
		if (st->dry_ran && (r = dryrun_settle(st->dry_upper, &st->dry_root_mode, err)) < 0)
			return r;
		st->outside_writes = json_array();
		for (size_t i = 0; st->outside_writes && i < res.n_outside_writes; i++)
			json_array_append_new(st->outside_writes,
					      json_pack("{s:s, s:s, s:i}", "path", res.outside_writes[i].path,
							"syscall", res.outside_writes[i].syscall, "count",
							(int)res.outside_writes[i].count));
		st->outside_writes_dropped = res.outside_writes_dropped;
		st->path_events = TAKE_PTR(res.path_events);
		st->n_path_events = res.n_path_events;
		st->path_events_overflow = res.path_events_overflow;
		res.n_path_events = 0;
		st->scratch_counted = res.scratch_counted;
		st->dry_owners = res.manifest.ids_mapped;
		/* Root's real run would have made them; anyone else's fails too. */
		st->dry_device_nodes = geteuid() == 0 ? res.device_nodes : 0;
		st->dry_privileged_xattrs = geteuid() == 0 ? res.privileged_xattrs : 0;
		/* The owner's real run makes a set-id file as root's does. */
		st->dry_setid_refused = res.setid_refused;
		memcpy(st->dry_setid_syscall, res.setid_syscall, sizeof(st->dry_setid_syscall));
		st->scratch_entries = res.scratch_entries;
		st->scratch_bytes = res.scratch_bytes;
	}
	run_record_sandbox(st, &config, &res);
	for (int i = 0; i < 2; i++) {
		struct run_stream *s = &st->streams[i];
		capture_finish(&s->capture);
		struct receipt_stream *rs = i == 0 ? &st->receipt.out : &st->receipt.err;
		rs->capture = &s->capture;
		rs->spilled = st->req->spill;
		rs->spill_bytes = s->spill_bytes;
		rs->spill_truncated = s->spill_truncated;
		rs->spill_error = s->spill_error[0] ? s->spill_error : NULL;
	}
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

	if (!st->scope) {
		/* The cwd may be what was invalid: fall back to the caller's. */
		cleanup_free char *here = getcwd(NULL, 0);
		const char *dir = st->cwd ? st->cwd : here;
		int r = dir ? gate_scope(dir, &st->scope, err) : -ENOENT;
		if (r < 0)
			st->scope = strdup(dir ? dir : "/");
		if (!st->scope)
			return error_set(err, ENOMEM, "out of memory");
	}
	/* The rules are only needed to classify a failure, or the command of a
	 * --fixes run: a plain success does not pay for loading them. */
	bool failed = !st->receipt.match_expected || st->receipt.status != RECEIPT_EXITED;
	cleanup_with(rules_freep) struct rules *rules = NULL;
	if ((failed || req->fixes) && rules_load_default(&rules, err) < 0)
		return -EINVAL;
	/* The gate's rules are the installed ones, never a --policy file's. */
	cleanup_with(policy_freep) struct policy *installed = NULL;
	if (req->fixes && policy_load_default(&installed, err) < 0)
		return -EINVAL;
	bool trivial = installed && req->argv && req->argv[0] &&
		       gate_is_trivial(installed, rules, req->argv);
	/* A success inside a snapshot proves nothing about the real tree. */
	int r = gate_prepare(st->store, &st->receipt, rules, st->scope, req->fixes, st->rerun_of,
			     trivial, !req->dryrun, effect, err);
	effect->fix = st->fix_id;
	/* The fix passed: the failed command runs again, as the next receipt. */
	if (r == 0 && effect->needs_rerun) {
		r = store_allocate_id(st->store, &effect->rerun, err);
		st->rerun_id = effect->rerun;
	}
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

/* The change set and verdict of a dry run, for the receipt (doc: the
 * receipt so far, for the hints its output gives). A dry run whose snapshot
 * was never built (a refusal, a setup failure) has none. */
static int run_dryrun_finish(struct run_state *st, json_t *doc, json_t **ret_summary,
			     enum dryrun_verdict *ret_verdict, struct error *err)
{
	const struct run_request *req = st->req;
	bool succeeded = st->receipt.status == RECEIPT_EXITED && st->receipt.match_expected;
	json_t *summary = NULL;
	enum dryrun_verdict verdict = DRYRUN_VERDICT_DRY_RUN_FAILED;

	if (!st->dry_ran) {
		summary = json_pack("{s:s, s:s, s:n, s:o}", "snapshot", "overlay", "verdict",
				    dryrun_verdict_name(verdict), "changes", "problems", json_array());
	} else {
		struct dryrun_request dr = {
			.upper = st->dry_upper,
			.work = st->dry_work,
			.workspace = st->workspace,
			.root_mode = st->dry_root_mode,
			.succeeded = succeeded,
			.expect = req->expect_paths,
			.expect_delete = req->expect_delete,
			.host_code = st->host_code_checked ? &st->host_code : NULL,
			.outside_writes = st->outside_writes,
			.outside_writes_dropped = st->outside_writes_dropped,
			.path_events = st->path_events,
			.n_path_events = st->n_path_events,
			.path_events_overflow = st->path_events_overflow,
			.scratch_counted = st->scratch_counted,
			.scratch_entries = st->scratch_entries,
			.scratch_bytes = st->scratch_bytes,
			.owners = st->dry_owners,
			.device_nodes = st->dry_device_nodes,
			.privileged_xattrs = st->dry_privileged_xattrs,
			.setid_refused = st->dry_setid_refused,
			.setid_syscall = st->dry_setid_syscall,
		};
		struct error finish_err = { 0 };
		int r = dryrun_finish(st->store, st->receipt.id, &dr, &summary, &verdict, &finish_err);
		if (r == -ENOMEM) {
			*err = finish_err;
			return r;
		}
		/* The change set could not be read (a tree deeper than the walk
		 * goes, too few descriptors...): nothing can be applied, the
		 * receipt says why, and the gate opens a failure for it. */
		if (r < 0) {
			/* The message may name a path that is not UTF-8. */
			cleanup_free char *msg = utf8_sanitize(finish_err.msg, strlen(finish_err.msg), NULL);
			verdict = DRYRUN_VERDICT_DRY_RUN_FAILED;
			summary = msg ? json_pack("{s:s, s:s, s:n, s:[{s:s}]}", "snapshot", "overlay",
						  "verdict", dryrun_verdict_name(verdict), "changes",
						  "problems", "changeset_error", msg)
				      : NULL;
		}
	}
	if (!summary)
		return error_set(err, ENOMEM, "out of memory");
	json_object_set_new(summary, "outside_writes",
			    st->outside_writes ? json_incref(st->outside_writes) : json_array());
	json_object_set_new(summary, "outside_writes_dropped",
			    json_integer(st->outside_writes_dropped));
	if (!succeeded)
		dryrun_explain_failure(summary, doc);
	*ret_summary = summary;
	*ret_verdict = verdict;
	return 0;
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
		/* The summary's hints read the receipt's output. */
		cleanup_with(json_decrefp) json_t *doc = receipt_to_json(&st->receipt);
		if (!doc)
			return error_set(err, ENOMEM, "cannot build receipt %llu",
					 (unsigned long long)st->receipt.id);
		int r = run_dryrun_finish(st, doc, &dryrun, &verdict, err);
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

/* The protected paths below the workspace, relative to it: with sealed
 * false those the walk judges, with sealed true those it leaves alone. In a
 * real run the sealed ones are those sealed before it and those below a
 * sealed directory (the command could not create them there:
 * run_state.protected_sealed). A dry run's snapshot holds only the
 * command's own changes: none is sealed. */
static char **run_protected_relative(const struct run_state *st, bool sealed)
{
	char **rel = NULL;
	size_t n = strlen(st->workspace);

	for (size_t i = 0; st->read_only && st->read_only[i]; i++) {
		const char *p = st->read_only[i];
		bool is_sealed = false;
		for (size_t k = 0; !st->req->dryrun && st->protected_sealed &&
				   st->protected_sealed[k] && !is_sealed; k++)
			is_sealed = path_is_under(p, st->protected_sealed[k]);
		if (is_sealed != sealed)
			continue;
		if (strncmp(p, st->workspace, n) == 0 && p[n] == '/' && p[n + 1] &&
		    strv_push(&rel, p + n + 1) < 0) {
			strv_free(rel);
			return NULL;
		}
	}
	return rel;
}

/* Files the run left that would make a host tool run code (core/host/hostsafety.h):
 * after a quarantined run they are moved aside and the receipt names them,
 * which opens a failure; a dry run's verdict names those in its snapshot. */
static void run_check_host_code(struct run_state *st)
{
	struct hostsafety_report *hc = &st->host_code;
	struct error err = { 0 };

	if (!st->sandbox.enforced)
		return; /* nothing ran in the quarantine */
	/* A dry run's snapshot reaches nothing: its verdict names what it holds
	 * (run_dryrun_finish), and no failure is opened for it. */
	st->host_code_checked = true;
	if (!st->req->dryrun)
		st->receipt.host_code = hc;
	cleanup_close int root_fd = open(st->req->dryrun ? st->dry_upper : st->workspace,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int lower_fd =
		st->req->dryrun ? open(st->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	cleanup_strv char **protected_paths = run_protected_relative(st, false);
	cleanup_strv char **sealed_paths = run_protected_relative(st, true);
	cleanup_strv char **host_config_names = NULL;
	bool oom = hostview_config_names(&host_config_names) < 0;
	struct hostsafety_request req = {
		.root_fd = root_fd,
		.lower_fd = lower_fd,
		.protected_paths = protected_paths,
		.sealed_paths = sealed_paths,
		.since_ns = st->req->dryrun ? 0 : (int64_t)st->started_coarse_ns,
		.known_gitdirs = st->known_gitdirs,
		.host_config_names = host_config_names,
	};
	int r = oom ? error_set(&err, ENOMEM, "out of memory")
		: root_fd < 0 || (st->req->dryrun && lower_fd < 0)
			? error_set_errno(&err, errno, "cannot open the workspace")
			: hostsafety_scan(&req, hc, &err);
	if (r == 0 && !st->req->dryrun)
		r = hostsafety_move_aside(st->store, st->receipt.id, root_fd, hc, &err);
	if (r < 0 && !hc->incomplete) {
		hc->incomplete = true;
		snprintf(hc->reason, sizeof(hc->reason), "%.250s", err.msg);
	}
	if (!hostsafety_report_failed(hc) || st->receipt.error)
		return;
	if (st->req->dryrun && hc->n_items > 0)
		snprintf(st->host_code_message, sizeof(st->host_code_message),
			 "the snapshot holds %zu files that would run code on the host (dryrun.problems)",
			 hc->n_items);
	else if (st->req->dryrun)
		snprintf(st->host_code_message, sizeof(st->host_code_message),
			 "the snapshot could not be checked for code left for the host: %.300s", hc->reason);
	else if (hc->n_items > 0)
		snprintf(st->host_code_message, sizeof(st->host_code_message),
			 "the command left %zu files that would run code on the host (first: %.200s); moved aside into %.200s/quarantine/%llu",
			 hc->n_items, hc->items[0].path, st->store->path,
			 (unsigned long long)st->receipt.id);
	else
		snprintf(st->host_code_message, sizeof(st->host_code_message),
			 "the workspace could not be checked for code left for the host: %.300s",
			 hc->reason);
	st->receipt.error = st->host_code_message;
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
	int r = path ? policy_load_file(path, &st->policy, &err)
		     : policy_load_default(&st->policy, &err);
	struct policy_denial denial;
	if (r == 0 && path && policyapproval_denies(st->store, st->policy, &denial)) {
		run_deny(st, &denial);
		struct policy *refused = TAKE_PTR(st->policy);
		r = policy_load_default(&st->policy, &err);
		if (r == 0) {
			char *origin = st->policy->origin;
			st->policy->origin = refused->origin;
			refused->origin = origin;
			memcpy(st->policy->sha256, refused->sha256, sizeof(refused->sha256));
		}
		policy_free(refused);
		return r < 0 ? -ENOMEM : -1;
	}
	if (r == 0)
		return 0;
	/* The attempt is still recorded, under the built-in policy's limits. */
	run_refuse(st, RECEIPT_INVALID, "%s", err.msg);
	struct error ignored;
	return policy_load_default(&st->policy, &ignored) < 0 ? -ENOMEM : -1;
}

static int run_execute_with_store(struct run_state *st, const struct run_context *ctx,
			      struct run_outcome *ret, struct error *err)
{
	const struct run_request *req = st->req;
	struct receipt *rc = &st->receipt;

	int policy_r = run_load_policy(st, ctx->policy_path);
	if (policy_r == -ENOMEM)
		return error_set(err, ENOMEM, "out of memory");
	st->store->durable = st->policy->fsync_receipts;
	rc->policy_origin = st->policy->origin;
	rc->policy_sha256 = st->policy->sha256;
	if (policy_r == 0 && st->rerun && st->rerun->policy_sha256 &&
	    strcmp(st->rerun->policy_sha256, st->policy->sha256) != 0) {
		run_refuse(st, RECEIPT_INVALID,
			   "the policy %.300s changed since receipt %llu (sha256 %.16s, now %.16s); the re-run did not start",
			   st->policy->origin, (unsigned long long)st->rerun_of,
			   st->rerun->policy_sha256, st->policy->sha256);
		policy_r = -1;
	}
	st->sandbox_enabled = req->sandbox_profile ? strcmp(req->sandbox_profile, "default") == 0
						   : st->policy->sandbox_enabled;
	st->sandbox.profile = st->sandbox_enabled ? "default" : "none";
	rc->sandbox = &st->sandbox;
	st->state_dir_real = realpath(st->store->path, NULL);
	st->caller = hostview_caller_from_env(ctx->session->environ_);
	st->sandbox.allow_workspace = req->allow_workspace;
	struct error state_err = { 0 };
	if (hostview_state_dirs(st->state_dir_real, ctx->session->environ_, &st->caller, &st->state_dirs,
				&state_err) < 0)
		return error_set(err, ENOMEM, "out of memory");
	rc->timeout_ms = req->has_timeout ? req->timeout_ms : st->policy->default_timeout_ms;
	/* What was asked; run_check_request() sets the grace the run gets. */
	rc->kill_after_ms = req->has_kill_after ? req->kill_after_ms : st->policy->kill_after_ms;
	rc->started_ns = rc->ended_ns = clock_realtime_ns();

	if (policy_r == 0 && run_check_request(st, ctx->session->environ_) == 0 &&
	    run_resolve_command(st) == 0) {
		/* The gate's scope is where the command was asked to run, read
		 * before it runs: not after whatever it does to the tree. */
		struct error ignored = { 0 };
		if (!st->scope)
			(void)gate_scope(st->cwd, &st->scope, &ignored);
		st->started_coarse_ns = clock_realtime_coarse_ns();
		int r = run_spawn(st, err);
		if (r < 0)
			return r;
		run_recheck_exec_identity(st);
		run_check_host_code(st);
	}
	/* The receipt is written while the kernel tears the quarantine down. */
	int r = run_write_receipt(st, ret, err);
	sandbox_teardown_finish(TAKE_PTR(st->teardown));
	return r;
}

/* One attempt, and its receipt. rerun (with rerun_of and fix_id) makes it
 * the re-run of a failed attempt; id, when not 0, was allocated for it. */
static int run_execute_one(const struct run_context *ctx, const struct run_request *req,
			   uint64_t id, const struct receipt_rerun *rerun, uint64_t rerun_of,
			   uint64_t fix_id, struct run_outcome *ret, struct error *err)
{
	struct run_state st = {
		.req = req,
		.rerun = rerun,
		.rerun_of = rerun_of,
		.fix_id = fix_id,
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
		st.store_durable = st.store->durable;
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

static int run_read_failed(const struct run_context *ctx, uint64_t id, json_t **ret,
			   struct error *err)
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
		r = run_execute_one(&rerun_ctx, &req, fix_outcome->rerun_id, r == 0 ? &rr : NULL,
				    fix->fixes, fix_outcome->id, out, err);
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
	int r = run_execute_one(ctx, req, 0, NULL, 0, 0, ret, err);

	if (r < 0 || !ret->rerun_id)
		return r;
	return run_execute_rerun(ctx, req, ret, err);
}
