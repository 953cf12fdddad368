/* SPDX-License-Identifier: MIT */
#include "core/run/job.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "core/host/hostview.h"
#include "core/store/jsonutil.h"

/* A year: anything longer is a typo, whatever the policy's maximum. */
#define JOB_MAX_TIMEOUT_MS (365ULL * 24 * 3600 * 1000)


static const char *const job_keys[] = {
	"job_id",      "argv",		"cwd",
	"timeout_sec", "expected_exit", "env_allowlist",
	"rationale",   "command",	"workdir",
	"timeout_ms",  "justification", "with_escalated_permissions",
	"fixes",       "kill_after_ms", "allow_workspace",
	NULL,
};

/* Returns the value of whichever of two spellings is present; both is an error. */
static int job_pick(json_t *root, const char *a, const char *b, json_t **ret, const char **ret_name,
		    struct error *err)
{
	json_t *va = json_object_get(root, a), *vb = json_object_get(root, b);

	if (va && vb)
		return error_set(err, EINVAL, "'%s' and '%s' are the same field; give one", a, b);
	*ret = va ? va : vb;
	*ret_name = va ? a : b;
	return 0;
}

static int job_parse_argv(json_t *root, struct run_request *req, struct error *err)
{
	json_t *v = NULL;
	const char *name = NULL;
	int r = job_pick(root, "argv", "command", &v, &name, err);
	if (r < 0)
		return r;
	if (!v)
		return error_set(err, EINVAL, "missing 'argv'");
	r = jsonutil_get_strv(v, name, false, &req->argv, err);
	if (r < 0)
		return r;
	if (!req->argv[0])
		return error_set(err, EINVAL, "'%s' is empty", name);
	return 0;
}

static int job_parse_cwd(json_t *root, struct run_request *req, struct error *err)
{
	json_t *v = NULL;
	const char *name = NULL;
	int r = job_pick(root, "cwd", "workdir", &v, &name, err);
	if (r < 0 || !v)
		return r;
	r = jsonutil_get_string(v, name, &req->cwd, err);
	if (r < 0)
		return r;
	if (req->cwd[0] != '/')
		return error_set(err, EINVAL, "'%s' must be an absolute path, not '%.200s'", name,
				 req->cwd);
	return 0;
}

static int job_parse_timeout(json_t *root, struct run_request *req, struct error *err)
{
	json_t *sec = json_object_get(root, "timeout_sec"), *ms = json_object_get(root, "timeout_ms");

	if (sec && ms)
		return error_set(err, EINVAL, "'timeout_sec' and 'timeout_ms' both given; give one");
	if (ms) {
		int r = jsonutil_get_u64(ms, "timeout_ms", 1, JOB_MAX_TIMEOUT_MS, &req->timeout_ms,
					 err);
		if (r < 0)
			return r;
		req->has_timeout = true;
	}
	if (sec) {
		if (!json_is_number(sec))
			return error_set(err, EINVAL, "'timeout_sec' must be a number");
		double s = json_number_value(sec);
		if (!(s > 0) || !isfinite(s) || s * 1000 > (double)JOB_MAX_TIMEOUT_MS)
			return error_set(err, ERANGE,
					 "'timeout_sec' must be above 0 and at most a year, not %g",
					 s);
		/* ceil() without libm (not linked: cli/cmd_report.c): s * 1000
		 * is at most a year's milliseconds, exact in both types */
		double t = s * 1000;
		req->timeout_ms = (uint64_t)t;
		if ((double)req->timeout_ms < t)
			req->timeout_ms++;
		req->has_timeout = true;
	}
	json_t *grace = json_object_get(root, "kill_after_ms");
	if (grace) {
		int r = jsonutil_get_u64(grace, "kill_after_ms", 0, JOB_MAX_TIMEOUT_MS,
					 &req->kill_after_ms, err);
		if (r < 0)
			return r;
		req->has_kill_after = true;
	}
	return 0;
}

static int job_parse_exit_value(json_t *v, const char *name, int *ret, struct error *err)
{
	uint64_t code;
	int r = jsonutil_get_u64(v, name, 0, 255, &code, err);

	if (r == 0)
		*ret = (int)code;
	return r;
}

static int job_parse_expected(json_t *root, struct run_request *req, struct error *err)
{
	json_t *v = json_object_get(root, "expected_exit");
	if (!v)
		return 0;
	if (!json_is_array(v)) {
		req->n_expected = 1;
		return job_parse_exit_value(v, "expected_exit", &req->expected[0], err);
	}
	size_t n = json_array_size(v);
	if (n == 0 || n > RUN_MAX_EXPECTED)
		return error_set(err, EINVAL, "'expected_exit' must list 1 to %d statuses",
				 RUN_MAX_EXPECTED);
	for (size_t i = 0; i < n; i++) {
		int r = job_parse_exit_value(json_array_get(v, i), "expected_exit[]",
					     &req->expected[i], err);
		if (r < 0)
			return r;
	}
	req->n_expected = n;
	return 0;
}

/* ["home"], ["system"] or both: as --allow-workspace. */
static int job_parse_allow_workspace(json_t *v, struct run_request *req, struct error *err)
{
	cleanup_strv char **names = NULL;
	int r = jsonutil_get_strv(v, "allow_workspace", false, &names, err);

	for (size_t i = 0; r == 0 && names && names[i]; i++)
		if (strchr(names[i], ',') || hostview_parse_allow(names[i], &req->allow_workspace) < 0)
			r = error_set(err, EINVAL,
				      "'allow_workspace[%zu]' must be \"home\" or \"system\"", i);
	return r;
}

static int job_parse_strings(json_t *root, struct run_request *req, struct error *err)
{
	json_t *v = NULL;
	const char *name = NULL;
	int r = 0;

	if ((v = json_object_get(root, "job_id")))
		r = jsonutil_get_string(v, "job_id", &req->job_id, err);
	if (r == 0)
		r = job_pick(root, "rationale", "justification", &v, &name, err);
	if (r == 0 && v)
		r = jsonutil_get_string(v, name, &req->rationale, err);
	if (r == 0 && (v = json_object_get(root, "env_allowlist"))) {
		r = jsonutil_get_strv(v, "env_allowlist", false, &req->env_allow, err);
		req->env_replace = true;
	}
	if (r == 0 && (v = json_object_get(root, "fixes")))
		r = jsonutil_get_u64(v, "fixes", 1, UINT64_MAX >> 1, &req->fixes, err);
	if (r == 0 && (v = json_object_get(root, "allow_workspace")))
		r = job_parse_allow_workspace(v, req, err);
	if (r == 0 && (v = json_object_get(root, "with_escalated_permissions"))) {
		bool escalate;
		r = jsonutil_get_bool(v, "with_escalated_permissions", &escalate, err);
		if (r == 0 && escalate)
			r = error_set(err, EPERM,
				      "'with_escalated_permissions' is not supported: airlock never runs a job outside its quarantine");
	}
	return r;
}

int job_parse(const char *text, size_t n, struct run_request *req, struct error *err)
{
	char digest[SHA256_HEX_SIZE];

	req->source = "job";
	sha256_hex(text, n, digest);
	free(req->job_sha256);
	req->job_sha256 = strdup(digest);

	cleanup_with(json_decrefp) json_t *root = NULL;
	int r = jsonutil_parse_object(text, n, &root, err);
	if (r == 0)
		r = jsonutil_check_keys(root, "", job_keys, err);
	/* argv first, so a later error still leaves it for the receipt */
	if (r == 0)
		r = job_parse_argv(root, req, err);
	if (r == 0)
		r = job_parse_cwd(root, req, err);
	if (r == 0)
		r = job_parse_timeout(root, req, err);
	if (r == 0)
		r = job_parse_expected(root, req, err);
	if (r == 0)
		r = job_parse_strings(root, req, err);
	if (r < 0)
		return error_prefix(err, "job");
	return 0;
}
