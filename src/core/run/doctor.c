/* SPDX-License-Identifier: MIT */
#include "core/run/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/policy/policy.h"
#include "core/session/session.h"
#include "core/gate/policyapproval.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"

static struct doctor_check *doctor_add(struct doctor_report *report, const char *layer, bool ok,
				       bool required)
{
	struct doctor_check *c = &report->checks[report->n++];

	*c = (struct doctor_check){ .layer = layer, .ok = ok, .required = required };
	return c;
}

static long read_number(const char *path)
{
	cleanup_free char *text = NULL;

	if (file_read_capped(AT_FDCWD, path, 64, &text, NULL, NULL) < 0)
		return -1;
	return strtol(text, NULL, 10);
}

static void doctor_user_namespaces(struct doctor_report *report)
{
	long max = read_number("/proc/sys/user/max_user_namespaces");
	long apparmor = read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	int status = 1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	bool ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	struct doctor_check *c = doctor_add(report, "user namespaces", ok, true);
	snprintf(c->detail, sizeof(c->detail), "user.max_user_namespaces=%ld%s", max,
		 apparmor == 1 ? ", AppArmor restricts unprivileged user namespaces" : "");
	if (!ok)
		snprintf(c->fix, sizeof(c->fix), "%s",
			 apparmor == 1
				 ? "allow them: sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for airlock with 'userns,'"
				 : "enable them: sysctl user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 where it exists)");
}

static void doctor_landlock(struct doctor_report *report)
{
	int abi = sandbox_landlock_abi();
	struct doctor_check *c = doctor_add(report, "landlock", abi >= 1, true);

	snprintf(c->detail, sizeof(c->detail), "ABI %d%s%s", abi,
		 abi >= 6 ? " (with signal and abstract-socket scoping)" : "",
		 abi >= 9 ? "; pathname Unix sockets scoped by Landlock"
			  : "; pathname Unix sockets scoped by the supervisor (a round trip per connect)");
	if (abi < 1)
		snprintf(c->fix, sizeof(c->fix),
			 "boot with landlock in the LSM list (lsm=landlock,lockdown,yama,integrity,apparmor,bpf) on Linux 5.13 or later");
}

static void doctor_proc(struct doctor_report *report)
{
	cleanup_free char *info = NULL;
	int masked = 0;

	if (file_read_capped(AT_FDCWD, "/proc/self/mountinfo", 4 << 20, &info, NULL, NULL) == 0)
		for (char *line = strtok(info, "\n"); line; line = strtok(NULL, "\n")) {
			char mount_point[512];
			if (sscanf(line, "%*s %*s %*s %*s %511s", mount_point) == 1 &&
			    strncmp(mount_point, "/proc/", 6) == 0 &&
			    strcmp(mount_point, "/proc/sys/fs/binfmt_misc") != 0)
				masked++;
		}
	struct doctor_check *c = doctor_add(report, "fresh /proc", masked == 0, true);
	snprintf(c->detail, sizeof(c->detail), "%d mount(s) over parts of /proc", masked);
	if (masked)
		snprintf(c->fix, sizeof(c->fix),
			 "a container masks /proc, so a new one cannot be mounted: run the container with --security-opt systempaths=unconfined (Docker) or without masked paths");
}

static void doctor_cgroups(struct doctor_report *report)
{
	bool v1_pids = access("/sys/fs/cgroup/pids", F_OK) == 0;
	bool v1_memory = access("/sys/fs/cgroup/memory", F_OK) == 0;
	cleanup_free char *controllers = NULL;
	(void)file_read_capped(AT_FDCWD, "/sys/fs/cgroup/unified/cgroup.controllers", 4096,
			       &controllers, NULL, NULL);
	if (!controllers)
		(void)file_read_capped(AT_FDCWD, "/sys/fs/cgroup/cgroup.controllers", 4096,
				       &controllers, NULL, NULL);
	if (controllers)
		controllers[strcspn(controllers, "\n")] = '\0';
	struct doctor_check *c = doctor_add(report, "resource limits", true, false);
	snprintf(c->detail, sizeof(c->detail),
		 "rlimits in the quarantine (processes, CPU, file size, open files); memory and processes also by a v1 cgroup %s (v1 memory: %s, v1 pids: %s; v2 controllers: '%s', not used)",
		 geteuid() == 0 ? "as root" : "when run as root", v1_memory ? "yes" : "no",
		 v1_pids ? "yes" : "no", controllers ? controllers : "");
}

static void doctor_trial(struct doctor_report *report)
{
	char workspace[] = "/tmp/airlock-doctor-XXXXXX";
	if (!mkdtemp(workspace)) {
		struct doctor_check *c = doctor_add(report, "quarantined run", false, true);
		snprintf(c->detail, sizeof(c->detail), "cannot create a workspace in /tmp: %s",
			 strerror(errno));
		return;
	}
	char *argv[] = { (char *)"/bin/true", NULL };
	char *envp[] = { NULL };
	char *none[] = { NULL };
	struct sandbox_config config = {
		.exec_path = "/bin/true",
		.argv = argv,
		.envp = envp,
		.cwd = workspace,
		.timeout_ms = 10000,
		.kill_after_ms = 1000,
		.isolation = { .enabled = true,
			       .workspace = workspace,
			       .hide = none,
			       .read_only = none,
			       .tmp_bytes = 1 << 20,
			       .memory_bytes = 256 << 20,
			       .max_processes = 64 },
	};
	struct sandbox_result res = { 0 };
	struct error err = { 0 };
	int r = sandbox_run(&config, &res, &err);
	(void)rmdir(workspace);
	bool ok = r == 0 && res.outcome == SANDBOX_EXITED && res.exit_code == 0;
	struct doctor_check *c = doctor_add(report, "quarantined run", ok, true);

	if (r < 0)
		snprintf(c->detail, sizeof(c->detail), "%.250s", err.msg);
	else if (res.outcome == SANDBOX_SETUP_FAILED)
		snprintf(c->detail, sizeof(c->detail), "failed at layer '%s': %s %.150s",
			 sandbox_stage_to_string(res.failed_stage), strerror(res.failed_errno),
			 res.failed_message);
	else
		snprintf(c->detail, sizeof(c->detail),
			 "/bin/true ran with every layer: namespaces, mounts, capabilities dropped, no_new_privs, Landlock ABI %d, seccomp (%u rules)",
			 res.manifest.landlock_abi, res.manifest.n_seccomp_rules);
	if (!ok)
		snprintf(c->fix, sizeof(c->fix),
			 "fix the failing layer above; until then --sandbox=none runs commands unconfined (receipts only), for disposable machines");
	sandbox_result_release(&res);
}

void doctor_run(struct doctor_report *report)
{
	report->n = 0;
	doctor_user_namespaces(report);
	doctor_proc(report);
	doctor_landlock(report);
	doctor_cgroups(report);
	doctor_trial(report);
}

bool doctor_report_ok(const struct doctor_report *report)
{
	for (size_t i = 0; i < report->n; i++)
		if (report->checks[i].required && !report->checks[i].ok)
			return false;
	return true;
}

void doctor_view_release(struct doctor_view *v)
{
	free(v->policy_origin);
	free(v->policy_refusal);
	hostview_release(&v->view);
	for (size_t i = 0; i < v->n_hidden; i++) {
		free(v->hidden[i].path);
		free(v->hidden[i].target);
	}
	free(v->hidden);
	for (size_t i = 0; i < v->n_writable; i++) {
		free(v->writable[i].entry);
		free(v->writable[i].path);
		free(v->writable[i].refusal);
	}
	free(v->writable);
	strv_free(v->state_dirs);
	strv_free(v->net_allow);
	strv_free(v->net_deny);
	*v = (struct doctor_view){ 0 };
}

static bool doctor_is_masked(const struct hostview *hv, const char *path)
{
	for (size_t i = 0; i < hv->n_masks; i++) {
		if (!path_is_under(path, hv->mask_paths[i]))
			continue;
		for (size_t j = 0; hv->expose[i] && hv->expose[i][j]; j++)
			if (path_is_under(path, hv->expose[i][j]))
				return false;
		return true;
	}
	return false;
}

static int doctor_view_fill(struct doctor_view *v)
{
	size_t n = strv_length(v->view.hide);

	v->hidden = calloc(n + 1, sizeof(*v->hidden));
	if (!v->hidden)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *path = v->view.hide[i];
		struct stat st;
		cleanup_free char *resolved = realpath(path, NULL);
		if (!resolved || stat(resolved, &st) < 0) {
			v->n_absent++;
			continue;
		}
		struct doctor_hidden *h = &v->hidden[v->n_hidden];
		h->path = strdup(path);
		if (!h->path)
			return -ENOMEM;
		v->n_hidden++;
		if (strcmp(resolved, path) != 0)
			h->target = TAKE_PTR(resolved);
		h->how = doctor_is_masked(&v->view, h->target ? h->target : path)
				 ? DOCTOR_HIDDEN_BY_MASK
				 : DOCTOR_HIDDEN;
	}
	return 0;
}

static int doctor_view_writable(struct doctor_view *v, char *const *writable,
				const struct hostview_caller *caller)
{
	size_t n = strv_length(writable);

	v->writable = calloc(n + 1, sizeof(*v->writable));
	if (!v->writable)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct doctor_writable *w = &v->writable[v->n_writable++];
		struct stat st;
		struct error err = { 0 };
		int fd = hostview_open_writable(writable[i], v->workspace, v->state_dirs, caller,
						&st, &w->path, &err);
		if (fd >= 0)
			close(fd);
		else
			v->n_refused++;
		w->entry = strdup(writable[i]);
		if (fd < 0)
			w->refusal = strdup(err.msg);
		if (!w->entry || (fd < 0 && !w->refusal))
			return -ENOMEM;
	}
	return 0;
}

int doctor_view_build(struct session *s, const char *workspace, struct doctor_view *ret,
		      struct error *err)
{
	cleanup_with(policy_freep) struct policy *routed_policy = NULL;
	const struct policy *policy = NULL;
	struct doctor_view v = { .workspace = workspace };
	cleanup_free char *routed = s->policy_path ? NULL : policy_route_path(workspace);
	const char *path = s->policy_path ? s->policy_path : routed;
	/* The session's policy, unless the workspace routes its own. */
	int r = routed ? policy_load_file(routed, &routed_policy, err)
		       : session_policy(s, &policy, err);
	if (r < 0)
		return r;
	if (routed)
		policy = routed_policy;
	char *const *environ_ = s->environ_;
	const char *dir = s->state_dir;
	cleanup_free char *real = dir ? realpath(dir, NULL) : NULL;
	cleanup_free char *in_use = real ? TAKE_PTR(real) : hostview_resolve(dir);
	struct hostview_caller caller = hostview_caller_from_env(environ_);
	v.policy_origin = strdup(policy->origin);
	/* Read-only: a state directory that does not exist approves nothing. */
	struct store *store = NULL;
	struct policy_denial denial;
	struct error ignored = { 0 };
	if (path && dir)
		(void)session_store(s, false, &store, &ignored);
	if (path && policyapproval_denies(store, policy, &denial) &&
	    asprintf(&v.policy_refusal, "denied by policy rule %s: %s", denial.rule, denial.message) < 0)
		v.policy_refusal = NULL;
	v.home_hidden = policy->home_hidden;
	v.share_net = policy->share_net;
	v.net_allowlist = policy->net_allowlist;
	bool copied = true;
	for (size_t i = 0; policy->net_allow && policy->net_allow[i]; i++)
		copied = copied && strv_push(&v.net_allow, policy->net_allow[i]) == 0;
	for (size_t i = 0; policy->net_deny && policy->net_deny[i]; i++)
		copied = copied && strv_push(&v.net_deny, policy->net_deny[i]) == 0;
	if (!v.policy_origin || !copied)
		r = error_set(err, ENOMEM, "out of memory");
	if (r == 0)
		r = hostview_state_dirs(in_use, environ_, &caller, &v.state_dirs, err);
	if (r == 0)
		r = hostview_build(policy, &caller, workspace, v.state_dirs, &v.view, err);
	if (r == 0 &&
	    (doctor_view_fill(&v) < 0 || doctor_view_writable(&v, policy->writable, &caller) < 0))
		r = error_set(err, ENOMEM, "out of memory");
	if (r < 0) {
		doctor_view_release(&v);
		return r;
	}
	*ret = v;
	return 0;
}
