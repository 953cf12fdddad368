/* SPDX-License-Identifier: MIT */
#include "core/permit/permit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/faultpoint.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "core/snapshot/apply.h"
#include "core/gate/approver.h"
#include "core/snapshot/changeset.h"
#include "core/store/jsonutil.h"

#define PERMIT_RECORD_MAX (16 << 20)
#define PERMIT_CHANGESET_MAX (256 << 20)
#define PERMIT_GIT_MAX (256 << 20)

static const char *const permit_state_names[_PERMIT_STATE_MAX] = {
	[PERMIT_INVALID] = "INVALID",
	[PERMIT_PROPOSED] = "PROPOSED",
	[PERMIT_DRY_RUN_FAILED] = "DRY_RUN_FAILED",
	[PERMIT_NO_EFFECT] = "NO_EFFECT",
	[PERMIT_UNEXPECTED_PATH] = "UNEXPECTED_PATH",
	[PERMIT_EXPECTED_PATH_MISSING] = "EXPECTED_PATH_MISSING",
	[PERMIT_REJECTED] = "REJECTED",
	[PERMIT_DRY_RUN_OK] = "DRY_RUN_OK",
	[PERMIT_REJECTED_WITHOUT_APPROVAL] = "REJECTED_WITHOUT_APPROVAL",
	[PERMIT_APPROVED] = "APPROVED",
	[PERMIT_DENIED] = "DENIED",
	[PERMIT_CONFLICT] = "CONFLICT",
	[PERMIT_APPLIED] = "APPLIED",
	[PERMIT_ROLLED_BACK] = "ROLLED_BACK",
};

const char *permit_state_to_string(enum permit_state s)
{
	return (unsigned)s < _PERMIT_STATE_MAX ? permit_state_names[s] : "?";
}

int permit_state_from_string(const char *s)
{
	for (int i = 0; s && i < _PERMIT_STATE_MAX; i++)
		if (strcmp(permit_state_names[i], s) == 0)
			return i;
	return -EINVAL;
}

/* The state machine (docs/permit-format.md, "States"). from == to happens
 * for a repeated REJECTED_WITHOUT_APPROVAL, and APPLIED to APPLIED records
 * a verify that passed. */
static bool permit_transition_allowed(enum permit_state from, enum permit_state to)
{
	switch (from) {
	case PERMIT_PROPOSED:
	case PERMIT_DRY_RUN_FAILED:
	case PERMIT_CONFLICT:
		return to == PERMIT_DRY_RUN_FAILED || to == PERMIT_NO_EFFECT ||
		       to == PERMIT_UNEXPECTED_PATH || to == PERMIT_EXPECTED_PATH_MISSING ||
		       to == PERMIT_REJECTED || to == PERMIT_DRY_RUN_OK || to == PERMIT_DENIED;
	case PERMIT_DRY_RUN_OK:
	case PERMIT_REJECTED_WITHOUT_APPROVAL:
	case PERMIT_APPROVED:
		return to == PERMIT_APPROVED || to == PERMIT_DENIED ||
		       to == PERMIT_REJECTED_WITHOUT_APPROVAL || to == PERMIT_REJECTED ||
		       to == PERMIT_APPLIED || to == PERMIT_CONFLICT;
	case PERMIT_APPLIED:
		return to == PERMIT_ROLLED_BACK || to == PERMIT_APPLIED;
	default: /* INVALID, NO_EFFECT, UNEXPECTED_PATH, EXPECTED_PATH_MISSING,
		    REJECTED, DENIED, ROLLED_BACK are final */
		return false;
	}
}

void permit_proposal_release(struct permit_proposal *p)
{
	free(p->label);
	strv_free(p->argv);
	free(p->candidate);
	free(p->reason);
	strv_free(p->expected_paths);
	free(p->rollback);
	strv_free(p->verify);
	*p = (struct permit_proposal){ 0 };
}

void permit_release(struct permit *p)
{
	permit_proposal_release(&p->p);
	free(p->workspace);
	free(p->created_at);
	free(p->invalid_reason);
	json_decref(p->approval);
	json_decref(p->history);
	*p = (struct permit){ 0 };
}

/* ---- the proposal ------------------------------------------------------ */

/* An expected path is a pattern relative to the workspace (core/snapshot/changeset.h
 * matching): not empty, not absolute, no empty, "." or ".." component. */
static int permit_check_path(const char *path, size_t i, struct error *err)
{
	if (!*path)
		return error_set(err, EINVAL, "'expected_paths[%zu]' is empty", i);
	if (path[0] == '/')
		return error_set(err, EINVAL, "'expected_paths[%zu]' is absolute: paths are relative to the workspace", i);
	for (const char *c = path; *c;) {
		size_t len = strcspn(c, "/");
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return error_set(err, EINVAL,
					 "'expected_paths[%zu]' has an empty, '.' or '..' component: paths stay inside the workspace",
					 i);
		c += len;
		if (*c == '/')
			c++;
	}
	return 0;
}

/* The proposer's label is model text a reviewer reads: 1 to
 * PERMIT_LABEL_MAX bytes of UTF-8 (jansson's), none of them a control
 * character (C0, DEL, C1) or a bidi embedding, override or isolate, which
 * would reorder what a terminal shows. */
static int permit_get_label(json_t *v, const char *name, char **ret, struct error *err)
{
	if (!json_is_string(v))
		return error_set(err, EINVAL, "'%s' must be a string", name);
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0)
		return error_set(err, EINVAL, "'%s' is empty: a label names the proposal, or leave it out", name);
	if (n > PERMIT_LABEL_MAX)
		return error_set(err, EINVAL, "'%s' is longer than %d bytes", name, PERMIT_LABEL_MAX);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] < 0xa0) ||
		    (s[i] == 0xe2 && i + 2 < n &&
		     ((s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae) ||
		      (s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9))))
			return error_set(err, EINVAL, "'%s' has a control character (byte %zu)", name, i);
	return jsonutil_get_string(v, name, ret, err);
}

static int permit_get_argv(json_t *v, const char *name, char ***ret, struct error *err)
{
	int r = jsonutil_get_strv(v, name, true, ret, err);
	if (r < 0)
		return r;
	if (!(*ret)[0] || !(*ret)[0][0])
		return error_set(err, EINVAL, "'%s' must name a command: its first word is empty or missing", name);
	return 0;
}

int permit_parse_proposal(const char *text, size_t n, struct permit_proposal *ret,
			  struct error *err)
{
	static const char *const keys[] = { "id",	 "candidate", "argv",	 "reason",
					    "expected_paths", "rollback", "verify",
					    "timeout_seconds", "risk",	 "confidence",
					    "dry_run_required", NULL };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(permit_proposal_release) struct permit_proposal p = {
		.timeout_seconds = PERMIT_TIMEOUT_DEFAULT
	};
	uint64_t u;
	int r;

	*ret = (struct permit_proposal){ 0 };
	r = jsonutil_parse_object(text, n, &doc, err);
	if (r < 0)
		return r;
	r = jsonutil_check_keys(doc, "", keys, err);
	if (r < 0)
		return r;
	/* The seed's `id` is the proposer's label, never the permit's id. */
	json_t *label = json_object_get(doc, "id");
	if (label && (r = permit_get_label(label, "id", &p.label, err)) < 0)
		return r;
	json_t *candidate = json_object_get(doc, "candidate"), *argv = json_object_get(doc, "argv");
	if (candidate && argv) {
		r = error_set(err, EINVAL, "give 'argv' or 'candidate', not both");
		return r;
	}
	if (!candidate && !argv) {
		r = error_set(err, EINVAL, "no command: give 'argv' (preferred) or 'candidate' (a shell string)");
		return r;
	}
	if (argv) {
		r = permit_get_argv(argv, "argv", &p.argv, err);
	} else {
		r = jsonutil_get_string(candidate, "candidate", &p.candidate, err);
		if (r == 0 && strspn(p.candidate, " \t\n") == strlen(p.candidate))
			r = error_set(err, EINVAL, "'candidate' is empty");
		/* A shell string runs through a shell, explicitly and on record. */
		if (r == 0 && (strv_push(&p.argv, "sh") < 0 || strv_push(&p.argv, "-c") < 0 ||
			       strv_push(&p.argv, p.candidate) < 0))
			r = error_set(err, ENOMEM, "out of memory");
		p.via_shell = true;
	}
	if (r < 0)
		return r;
	json_t *v = json_object_get(doc, "reason");
	if (!v)
		r = error_set(err, EINVAL, "'reason' is missing: a permit records why");
	else
		r = jsonutil_get_string(v, "reason", &p.reason, err);
	if (r < 0)
		return r;
	v = json_object_get(doc, "expected_paths");
	if (!v) {
		r = error_set(err, EINVAL, "'expected_paths' is missing (give [] when nothing should change)");
		return r;
	}
	r = jsonutil_get_strv(v, "expected_paths", true, &p.expected_paths, err);
	if (r < 0)
		return r;
	if (strv_length(p.expected_paths) > PERMIT_MAX_PATHS) {
		r = error_set(err, E2BIG, "'expected_paths' has more than %d entries", PERMIT_MAX_PATHS);
		return r;
	}
	for (size_t i = 0; p.expected_paths[i]; i++)
		if ((r = permit_check_path(p.expected_paths[i], i, err)) < 0)
			return r;
	if ((v = json_object_get(doc, "rollback"))) {
		if (json_is_null(v))
			;
		else if ((r = jsonutil_get_string(v, "rollback", &p.rollback, err)) < 0)
			return r;
	}
	if ((v = json_object_get(doc, "verify")) && (r = permit_get_argv(v, "verify", &p.verify, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "timeout_seconds"))) {
		if ((r = jsonutil_get_u64(v, "timeout_seconds", 1, PERMIT_TIMEOUT_MAX, &u, err)) < 0)
			return r;
		p.timeout_seconds = (unsigned)u;
	}
	if ((v = json_object_get(doc, "risk"))) {
		if ((r = jsonutil_get_u64(v, "risk", 1, 5, &u, err)) < 0)
			return r;
		p.declared_risk = (int)u;
	}
	if ((v = json_object_get(doc, "confidence"))) {
		double c = json_number_value(v);
		if (!json_is_number(v) || !isfinite(c) || c < 0 || c > 1) {
			r = error_set(err, EINVAL, "'confidence' must be a number from 0 to 1");
			return r;
		}
		p.has_confidence = true;
		p.confidence = c;
	}
	if ((v = json_object_get(doc, "dry_run_required"))) {
		bool b;
		if ((r = jsonutil_get_bool(v, "dry_run_required", &b, err)) < 0)
			return r;
		if (!b) {
			r = error_set(err, EINVAL, "'dry_run_required' false is not offered: every permit is dry-run first");
			return r;
		}
	}
	*ret = p;
	p = (struct permit_proposal){ 0 };
	return 0;
}

/* ---- the record -------------------------------------------------------- */

static json_t *permit_strv_json(char *const *strv)
{
	json_t *a = json_array();
	for (size_t i = 0; a && strv && strv[i]; i++)
		if (json_array_append_new(a, json_string(strv[i])) < 0)
			return json_decref(a), NULL;
	return a;
}

/* The fields an approval covers: the command, the paths, the rollback, the
 * verify, the workspace, the risk and the change set. */
static json_t *permit_covered_json(const struct permit *p)
{
	json_t *o = json_pack("{s:s, s:I, s:s, s:o, s:b, s:s, s:o, s:i, s:i, s:I, s:s}", "schema",
			      PERMIT_SCHEMA, "id", (json_int_t)p->id, "workspace",
			      p->workspace ? p->workspace : "", "argv", permit_strv_json(p->p.argv),
			      "via_shell", p->p.via_shell, "reason", p->p.reason ? p->p.reason : "",
			      "expected_paths", permit_strv_json(p->p.expected_paths),
			      "timeout_seconds", (int)p->p.timeout_seconds, "risk", p->risk, "dryrun",
			      (json_int_t)p->dryrun_id, "changeset_sha256", p->changeset_sha256);
	if (!o)
		return NULL;
	if (p->p.candidate)
		json_object_set_new(o, "candidate", json_string(p->p.candidate));
	if (p->p.rollback)
		json_object_set_new(o, "rollback", json_string(p->p.rollback));
	if (p->p.verify)
		json_object_set_new(o, "verify", permit_strv_json(p->p.verify));
	if (p->p.declared_risk)
		json_object_set_new(o, "declared_risk", json_integer(p->p.declared_risk));
	return o;
}

/* What the approver signs: the permit's id and the SHA-256 of its covered
 * fields (sorted keys, compact), which include the change set's digest. */
static int permit_message(const struct permit *p, char **ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *covered = permit_covered_json(p);
	cleanup_free char *text = covered ? json_dumps(covered, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char hex[SHA256_HEX_SIZE];

	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	sha256_hex(text, strlen(text), hex);
	if (asprintf(ret, "%s\npermit=%llu\nworkspace=%s\nrisk=%d\nchangeset=%s\ndigest=%s\n",
		     PERMIT_APPROVAL_SCHEMA, (unsigned long long)p->id, p->workspace, p->risk,
		     p->changeset_sha256, hex) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

json_t *permit_to_json(const struct permit *p)
{
	json_t *o = permit_covered_json(p);
	if (!o)
		return NULL;
	json_object_set_new(o, "state", json_string(permit_state_to_string(p->state)));
	json_object_set_new(o, "created_at", json_string(p->created_at ? p->created_at : ""));
	json_object_set_new(o, "proposal_sha256", json_string(p->proposal_sha256));
	json_object_set_new(o, "dry_run_required", json_true());
	if (p->p.label)
		json_object_set_new(o, "label", json_string(p->p.label));
	if (p->invalid_reason)
		json_object_set_new(o, "invalid_reason", json_string(p->invalid_reason));
	if (p->p.has_confidence)
		json_object_set_new(o, "confidence", json_real(p->p.confidence));
	json_object_set_new(o, "risk_classified", json_integer(p->risk_classified));
	json_object_set_new(o, "classify_rule", json_string(p->classify_rule));
	json_object_set_new(o, "classify_reason", json_string(p->classify_reason));
	json_object_set_new(o, "risk_observed", json_integer(p->risk_observed));
	json_object_set_new(o, "observed", json_string(p->observed_why));
	json_object_set_new(o, "rollback_risk", json_integer(p->rollback_risk));
	if (p->approval)
		json_object_set(o, "approval", p->approval);
	json_object_set(o, "history", p->history ? p->history : json_array());
	return o;
}

static int permit_get_int(json_t *doc, const char *key, int min, int max, int *ret,
			  struct error *err)
{
	uint64_t u;
	int r = jsonutil_get_u64(json_object_get(doc, key), key, (uint64_t)min, (uint64_t)max, &u, err);
	if (r == 0)
		*ret = (int)u;
	return r;
}

static int permit_get_hex(json_t *doc, const char *key, bool allow_empty, char out[SHA256_HEX_SIZE],
			  struct error *err)
{
	const char *s = jsonutil_str(doc, key);
	if (!s || (strlen(s) != SHA256_HEX_SIZE - 1 && !(allow_empty && !*s)) ||
	    strspn(s, "0123456789abcdef") != strlen(s))
		return error_set(err, EINVAL, "'%s' must be a SHA-256 in hex", key);
	snprintf(out, SHA256_HEX_SIZE, "%s", s);
	return 0;
}

int permit_parse(const char *text, size_t n, struct permit *ret, struct error *err)
{
	static const char *const keys[] = {
		"schema", "id", "workspace", "argv", "via_shell", "reason", "expected_paths",
		"timeout_seconds", "risk", "dryrun", "changeset_sha256", "candidate", "rollback",
		"verify", "declared_risk", "state", "created_at", "proposal_sha256",
		"dry_run_required", "invalid_reason", "confidence", "risk_classified",
		"classify_rule", "risk_observed", "observed", "rollback_risk", "approval",
		"history", "label", "classify_reason", NULL
	};
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(permit_release) struct permit p = { 0 };
	uint64_t u;
	json_t *v;

	*ret = (struct permit){ 0 };
	int r = jsonutil_parse_object(text, n, &doc, err);
	if (r == 0)
		r = jsonutil_check_keys(doc, "", keys, err);
	if (r < 0)
		return r;
	if (!jsonutil_str(doc, "schema") || strcmp(jsonutil_str(doc, "schema"), PERMIT_SCHEMA) != 0)
		return error_set(err, EINVAL, "'schema' must be \"%s\"", PERMIT_SCHEMA);
	int state = permit_state_from_string(jsonutil_str(doc, "state"));
	if (state < 0)
		return error_set(err, EINVAL, "'state' is not a permit state");
	p.state = (enum permit_state)state;
	if ((r = jsonutil_get_u64(json_object_get(doc, "id"), "id", 1, INT64_MAX, &p.id, err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "workspace"), "workspace", &p.workspace, err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "created_at"), "created_at", &p.created_at, err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "reason"), "reason", &p.p.reason, err)) < 0 ||
	    (r = jsonutil_get_bool(json_object_get(doc, "via_shell"), "via_shell", &p.p.via_shell, err)) < 0 ||
	    (r = jsonutil_get_strv(json_object_get(doc, "argv"), "argv", true, &p.p.argv, err)) < 0 ||
	    (r = jsonutil_get_strv(json_object_get(doc, "expected_paths"), "expected_paths", true,
				   &p.p.expected_paths, err)) < 0 ||
	    (r = jsonutil_get_u64(json_object_get(doc, "timeout_seconds"), "timeout_seconds", 0,
				  PERMIT_TIMEOUT_MAX, &u, err)) < 0)
		return r;
	p.p.timeout_seconds = (unsigned)u;
	if ((r = permit_get_int(doc, "risk", 0, 5, &p.risk, err)) < 0 ||
	    (r = permit_get_int(doc, "risk_classified", 0, 5, &p.risk_classified, err)) < 0 ||
	    (r = permit_get_int(doc, "risk_observed", 0, 5, &p.risk_observed, err)) < 0 ||
	    (r = permit_get_int(doc, "rollback_risk", 0, 5, &p.rollback_risk, err)) < 0 ||
	    (r = jsonutil_get_u64(json_object_get(doc, "dryrun"), "dryrun", 0, INT64_MAX, &p.dryrun_id, err)) < 0 ||
	    (r = permit_get_hex(doc, "changeset_sha256", true, p.changeset_sha256, err)) < 0 ||
	    (r = permit_get_hex(doc, "proposal_sha256", false, p.proposal_sha256, err)) < 0)
		return r;
	if (p.state != PERMIT_INVALID && (!p.p.argv[0] || !p.p.argv[0][0])) {
		r = error_set(err, EINVAL, "'argv' is empty");
		return r;
	}
	for (size_t i = 0; p.p.expected_paths[i]; i++)
		if ((r = permit_check_path(p.p.expected_paths[i], i, err)) < 0)
			return r;
	if ((v = json_object_get(doc, "candidate")) &&
	    (r = jsonutil_get_string(v, "candidate", &p.p.candidate, err)) < 0)
		return r;
	/* A shell string is recorded as what runs: sh -c CANDIDATE, exactly. */
	if (p.p.via_shell != (p.p.candidate != NULL) ||
	    (p.p.candidate && (strv_length(p.p.argv) != 3 || strcmp(p.p.argv[0], "sh") != 0 ||
			       strcmp(p.p.argv[1], "-c") != 0 ||
			       strcmp(p.p.argv[2], p.p.candidate) != 0))) {
		r = error_set(err, EINVAL, "'candidate', 'via_shell' and 'argv' disagree");
		return r;
	}
	if ((v = json_object_get(doc, "rollback")) &&
	    (r = jsonutil_get_string(v, "rollback", &p.p.rollback, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "verify")) &&
	    (r = permit_get_argv(v, "verify", &p.p.verify, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "declared_risk")) &&
	    (r = permit_get_int(doc, "declared_risk", 1, 5, &p.p.declared_risk, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "confidence"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1) {
			r = error_set(err, EINVAL, "'confidence' must be a number from 0 to 1");
			return r;
		}
		p.p.has_confidence = true;
		p.p.confidence = json_number_value(v);
	}
	if ((v = json_object_get(doc, "invalid_reason")) &&
	    (r = jsonutil_get_string(v, "invalid_reason", &p.invalid_reason, err)) < 0)
		return r;
	const char *rule = jsonutil_str(doc, "classify_rule"), *why = jsonutil_str(doc, "observed");
	if (!rule || !why) {
		r = error_set(err, EINVAL, "'classify_rule' and 'observed' must be strings");
		return r;
	}
	snprintf(p.classify_rule, sizeof(p.classify_rule), "%s", rule);
	snprintf(p.observed_why, sizeof(p.observed_why), "%s", why);
	/* Both keys are optional: records before issue 20 have neither. */
	if ((v = json_object_get(doc, "label")) && (r = permit_get_label(v, "label", &p.p.label, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "classify_reason"))) {
		if (!json_is_string(v) || json_string_length(v) >= sizeof(p.classify_reason)) {
			r = error_set(err, EINVAL, "'classify_reason' must be a string of at most %zu bytes",
				      sizeof(p.classify_reason) - 1);
			return r;
		}
		snprintf(p.classify_reason, sizeof(p.classify_reason), "%s", json_string_value(v));
	}
	v = json_object_get(doc, "approval");
	if (v && (!json_is_object(v) || !jsonutil_str(v, "message") ||
		  !jsonutil_str(v, "signature") || !jsonutil_str(v, "public_key"))) {
		r = error_set(err, EINVAL, "'approval' must hold a message, public_key and signature");
		return r;
	}
	p.approval = json_incref(v);
	v = json_object_get(doc, "history");
	size_t i;
	json_t *h;
	if (!json_is_array(v)) {
		r = error_set(err, EINVAL, "'history' must be an array");
		return r;
	}
	json_array_foreach(v, i, h)
		if (!json_is_object(h) || permit_state_from_string(jsonutil_str(h, "to")) < 0) {
			r = error_set(err, EINVAL, "'history[%zu]' has no known 'to' state", i);
			return r;
		}
	p.history = json_incref(v);
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}

/* ---- storage ----------------------------------------------------------- */

static int permit_open_dir(struct store *store, bool create, int *ret_fd, struct error *err)
{
	return store_open_permits(store, create, ret_fd, err);
}

/* Holds permits/<id>.lock for the caller's whole step. */
static int permit_lock(int dir_fd, uint64_t id, int *ret_fd, struct error *err)
{
	char name[64];
	snprintf(name, sizeof(name), "%llu.lock", (unsigned long long)id);
	int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return error_set_errno(err, e, "lock permit %llu", (unsigned long long)id);
	}
	*ret_fd = fd;
	return 0;
}

int permit_commit_transition(struct store *store, struct permit *p, enum permit_state to,
			     const char *event, json_t *detail, struct error *err)
{
	bool first = !p->history || json_array_size(p->history) == 0;
	enum permit_state from = p->state;
	char now[64], name[64], tmp[80];

	if (first ? !(to == PERMIT_PROPOSED || to == PERMIT_REJECTED || to == PERMIT_INVALID)
		  : !permit_transition_allowed(from, to))
		return error_set(err, EPERM, "permit %llu is %s: it cannot become %s",
				 (unsigned long long)p->id, permit_state_to_string(from),
				 permit_state_to_string(to));
	cleanup_close int dir_fd = -1;
	int r = permit_open_dir(store, true, &dir_fd, err);
	if (r < 0)
		return r;
	if (!p->history && !(p->history = json_array()))
		return error_set(err, ENOMEM, "out of memory");
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *entry = json_pack("{s:s, s:s, s:s, s:i}", "at", now, "to", permit_state_to_string(to),
				  "event", event, "risk", p->risk);
	if (!entry)
		return error_set(err, ENOMEM, "out of memory");
	if (!first)
		json_object_set_new(entry, "from", json_string(permit_state_to_string(from)));
	if (detail)
		json_object_update(entry, detail);
	if (json_array_append_new(p->history, entry) < 0)
		return error_set(err, ENOMEM, "out of memory");
	p->state = to;
	cleanup_with(json_decrefp) json_t *doc = permit_to_json(p);
	cleanup_free char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6)) : NULL;
	if (!text)
		r = error_set(err, ENOMEM, "out of memory");
	/* The one commit path: the record (tmp, fsync, rename, fsync of the
	 * directory), then its ledger entry, which is the commit point. */
	snprintf(name, sizeof(name), "permits/%llu.json", (unsigned long long)p->id);
	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)p->id);
	if (r == 0) {
		size_t len = strlen(text);
		text[len] = '\n';
		r = store_commit(store, LEDGER_PERMIT_TRANSITION, tmp, name, text, len + 1, true, err);
		text[len] = '\0';
	}
	if (r < 0) {
		/* Not committed: the caller's permit stays what the disk says. */
		json_array_remove(p->history, json_array_size(p->history) - 1);
		p->state = from;
		return error_prefix(err, "permit %llu: commit %s", (unsigned long long)p->id,
				    permit_state_to_string(to));
	}
	return 0;
}

static int permit_load_at(int dir_fd, uint64_t id, struct permit *ret, struct error *err)
{
	char name[64];
	cleanup_free char *text = NULL;
	size_t n;

	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	int r = file_read_capped(dir_fd, name, PERMIT_RECORD_MAX, &text, &n, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	if (r == 0)
		r = permit_parse(text, n, ret, err);
	if (r == 0 && ret->id != id) {
		permit_release(ret);
		r = error_set(err, EINVAL, "its id is not %llu", (unsigned long long)id);
	}
	return r < 0 ? error_prefix(err, "permit %llu", (unsigned long long)id) : 0;
}

int permit_load(struct store *store, uint64_t id, struct permit *ret, struct error *err)
{
	cleanup_close int dir_fd = -1;
	int r = permit_open_dir(store, false, &dir_fd, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	return r < 0 ? r : permit_load_at(dir_fd, id, ret, err);
}

static int permit_compare_id(const void *a, const void *b)
{
	uint64_t x = ((const struct permit *)a)->id, y = ((const struct permit *)b)->id;
	return x < y ? -1 : x > y;
}

int permit_list(struct store *store, struct permit **ret, size_t *ret_n, size_t *ret_damaged,
		struct error *err)
{
	cleanup_close int dir_fd = -1;
	*ret = NULL;
	*ret_n = *ret_damaged = 0;
	int r = permit_open_dir(store, false, &dir_fd, err);
	if (r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0;
	}
	if (r < 0)
		return r;
	int dup = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup < 0 ? NULL : fdopendir(dup);
	if (!d) {
		if (dup >= 0)
			close(dup);
		return error_set_errno(err, errno, "list permits/");
	}
	struct permit *list = NULL;
	size_t count = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t id;
		char *dot = strchr(de->d_name, '.');
		if (!dot || strcmp(dot, ".json") != 0)
			continue;
		*dot = '\0';
		if (parse_u64(de->d_name, &id) < 0 || id == 0)
			continue;
		struct permit *grown = realloc(list, (count + 1) * sizeof(*list));
		if (!grown) {
			r = error_set(err, ENOMEM, "out of memory");
			break;
		}
		list = grown;
		struct error ignored = { 0 };
		if (permit_load_at(dir_fd, id, &list[count], &ignored) < 0)
			(*ret_damaged)++;
		else
			count++;
	}
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < count; i++)
			permit_release(&list[i]);
		free(list);
		return r;
	}
	if (count)
		qsort(list, count, sizeof(*list), permit_compare_id);
	*ret = list;
	*ret_n = count;
	return 0;
}

/* ---- risk -------------------------------------------------------------- */

/* The workspace's tracked files, as `git ls-files -z --cached` prints them
 * (relative to the workspace, sorted by bytes). git runs on the host, on a
 * tree the command may have written, so nothing in it may run code: no
 * system or global configuration, the repository's fsmonitor and untracked
 * cache off (the only settings through which ls-files starts a program), no
 * optional locks. -ESRCH when there is no git or no repository. */
static int permit_git_tracked(const char *workspace, char ***ret, struct error *err)
{
	static const char *const gits[] = { "/usr/bin/git", "/bin/git", "/usr/local/bin/git" };
	const char *git = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(gits) && !git; i++)
		if (access(gits[i], X_OK) == 0)
			git = gits[i];
	if (!git)
		return -ESRCH;
	char *const argv[] = { (char *)"git", (char *)"--no-optional-locks", (char *)"-c",
			       (char *)"core.fsmonitor=false", (char *)"-c",
			       (char *)"core.untrackedCache=false", (char *)"-c",
			       (char *)"safe.directory=*", (char *)"-C", (char *)workspace,
			       (char *)"ls-files", (char *)"-z", (char *)"--cached", NULL };
	char *const envp[] = { (char *)"PATH=/usr/bin:/bin", (char *)"HOME=/nonexistent",
			       (char *)"GIT_CONFIG_NOSYSTEM=1", (char *)"GIT_CONFIG_GLOBAL=/dev/null",
			       (char *)"LC_ALL=C", NULL };
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return error_set_errno(err, errno, "pipe");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int r = posix_spawn(&pid, git, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (r != 0) {
		close(pipefd[0]);
		return -ESRCH;
	}
	cleanup_free char *out = NULL;
	size_t n = 0;
	struct error read_err = { 0 };
	int rr = fd_read_capped(pipefd[0], PERMIT_GIT_MAX, &out, &n, &read_err);
	close(pipefd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rr < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ESRCH;
	char **list = NULL;
	for (size_t off = 0; off < n;) {
		size_t len = strnlen(out + off, n - off);
		if (strv_push(&list, out + off) < 0) {
			strv_free(list);
			return error_set(err, ENOMEM, "out of memory");
		}
		off += len + 1;
	}
	if (!list && !(list = calloc(1, sizeof(char *))))
		return error_set(err, ENOMEM, "out of memory");
	*ret = list;
	return 0;
}

/* The first entry of the sorted list tracked[0..n) not below key (bytes). */
static size_t permit_lower_bound(char *const *tracked, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(tracked[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a tracked file is path or lies below it. git lists the index in
 * byte order; "a/" sorts after "a-b", so the two are looked up apart. */
static bool permit_tracked_at(char *const *tracked, size_t n, const char *path)
{
	size_t i = permit_lower_bound(tracked, n, path);
	if (i < n && strcmp(tracked[i], path) == 0)
		return true;
	cleanup_free char *dir = NULL;
	if (asprintf(&dir, "%s/", path) < 0)
		return true; /* out of memory: the safer answer */
	i = permit_lower_bound(tracked, n, dir);
	return i < n && strncmp(tracked[i], dir, strlen(dir)) == 0;
}

/* The verdicts that are risk 5 whatever changed (docs/permit-format.md,
 * "Risk"); one without a name too, the safer answer. */
static bool permit_verdict_is_risk_5(enum dryrun_verdict verdict)
{
	switch (verdict) {
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
	case DRYRUN_VERDICT_NONE:
	case _DRYRUN_VERDICT_MAX:
		return true;
	case DRYRUN_VERDICT_DRY_RUN_OK:
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case DRYRUN_VERDICT_NO_EFFECT:
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
		return false;
	}
	return true;
}

/* What the dry run changed, as a level (docs/permit-format.md, "Risk"):
 * changes are the workspace's, scratch the change set's count of what the
 * command left in its private /tmp (NULL: not counted). */
static int permit_observe(const char *workspace, json_t *changes, json_t *scratch,
			  enum dryrun_verdict verdict, int *ret, char *why, size_t why_size,
			  struct error *err)
{
	if (permit_verdict_is_risk_5(verdict)) {
		const char *name = dryrun_verdict_name(verdict);
		snprintf(why, why_size, "the dry run's verdict is %s", name ? name : "unknown");
		*ret = 5;
		return 0;
	}
	if (json_array_size(changes) == 0) {
		json_int_t left = json_integer_value(json_object_get(scratch, "entries"));
		if (left > 0) {
			snprintf(why, why_size,
				 "only scratch space changed: %lld objects left in the private /tmp, nothing in the workspace",
				 (long long)left);
			*ret = 2;
		} else {
			snprintf(why, why_size, "nothing in the workspace changed");
			*ret = 1;
		}
		return 0;
	}
	cleanup_with(strv_freep) char **tracked = NULL;
	int r = permit_git_tracked(workspace, &tracked, err);
	if (r < 0 && r != -ESRCH)
		return r;
	size_t n_tracked = strv_length(tracked);
	*ret = 3;
	snprintf(why, why_size, "only untracked or ignored (generated) files changed");
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c) {
		const char *paths[] = { jsonutil_str(c, "path"), jsonutil_str(c, "from") };
		const char *change = jsonutil_str(c, "change");
		for (size_t k = 0; k < 2; k++) {
			if (!paths[k])
				continue;
			if (tracked && permit_tracked_at(tracked, n_tracked, paths[k])) {
				snprintf(why, why_size, "a tracked file changed: %s (%s)", paths[k], change);
				*ret = 4;
				return 0;
			}
			if (!tracked && (k == 1 || strcmp(change, "created") != 0)) {
				snprintf(why, why_size, "no git index to tell generated files apart: %s existed (%s)",
					 paths[k], change);
				*ret = 4;
				return 0;
			}
		}
		/* A mode or attributes set on one name of a hard-link group
		 * reach the shared inode: its other names change too. */
		size_t k;
		json_t *also;
		json_array_foreach(json_object_get(c, "also_names"), k, also) {
			const char *name = jsonutil_str(also, "path");
			if (tracked && name && permit_tracked_at(tracked, n_tracked, name)) {
				snprintf(why, why_size, "a tracked file changed: %s (%s, a hard link of %s)", name,
					 change, paths[0]);
				*ret = 4;
				return 0;
			}
		}
	}
	return 0;
}

/* What the permit's dry run holds now, recomputed from the files: used at
 * the dry run's end, and again by approve and exec, so no recorded field
 * is trusted for the decision. */
struct permit_check {
	enum dryrun_verdict verdict; /* recorded, or judged again when DRY_RUN_OK */
	int classified, observed, risk;
	char rule[64];
	char reason[256];
	char why[512];
	char changeset_sha256[SHA256_HEX_SIZE];
	json_t *changeset;
	json_t *problems;
};

static void permit_check_release(struct permit_check *c)
{
	json_decref(c->changeset);
	json_decref(c->problems);
	*c = (struct permit_check){ 0 };
}

static int permit_recheck(struct store *store, const struct rules *rules, const struct permit *p,
			  struct permit_check *c, struct error *err)
{
	char rel[80];
	cleanup_free char *text = NULL;
	size_t n;
	struct rules_verdict rv;

	*c = (struct permit_check){ 0 };
	rules_classify(rules, p->p.argv, &rv);
	c->classified = rv.risk;
	snprintf(c->rule, sizeof(c->rule), "%s", rv.rule);
	snprintf(c->reason, sizeof(c->reason), "%s", rv.reason);
	snprintf(rel, sizeof(rel), "dryruns/%llu/changeset.json", (unsigned long long)p->dryrun_id);
	int r = file_read_capped(store->dir_fd, rel, PERMIT_CHANGESET_MAX, &text, &n, err);
	if (r < 0)
		return error_prefix(err, "permit %llu: dry run %llu", (unsigned long long)p->id,
				    (unsigned long long)p->dryrun_id);
	sha256_hex(text, n, c->changeset_sha256);
	enum dryrun_verdict recorded;
	r = apply_parse_changeset(text, n, &c->changeset, &recorded, err);
	if (r < 0)
		return error_prefix(err, "permit %llu: dry run %llu", (unsigned long long)p->id,
				    (unsigned long long)p->dryrun_id);
	json_t *changes = json_object_get(c->changeset, "changes");
	c->verdict = recorded;
	/* The dry run judged with the permit's paths; judged again with what
	 * the record says now. */
	if (recorded == DRYRUN_VERDICT_DRY_RUN_OK)
		c->verdict = changeset_verdict(changes, true, p->p.expected_paths,
					       p->p.expected_paths, &c->problems);
	r = permit_observe(p->workspace, changes, json_object_get(c->changeset, "scratch"),
			   c->verdict, &c->observed, c->why, sizeof(c->why), err);
	if (r < 0)
		return r;
	c->risk = MAX(MAX(p->p.declared_risk, c->classified), c->observed);
	return 0;
}

static enum permit_state permit_state_for_verdict(enum dryrun_verdict verdict, int risk)
{
	enum permit_state state = PERMIT_REJECTED;

	switch (verdict) {
	case DRYRUN_VERDICT_NONE:
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
		return PERMIT_DRY_RUN_FAILED;
	case DRYRUN_VERDICT_NO_EFFECT:
		state = PERMIT_NO_EFFECT;
		break;
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
		state = PERMIT_UNEXPECTED_PATH;
		break;
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
		state = PERMIT_EXPECTED_PATH_MISSING;
		break;
	case DRYRUN_VERDICT_DRY_RUN_OK:
		state = PERMIT_DRY_RUN_OK;
		break;
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
	case _DRYRUN_VERDICT_MAX:
		break; /* a verdict apply never applies */
	}
	return risk >= 5 ? PERMIT_REJECTED : state;
}

/* ---- the steps --------------------------------------------------------- */

int permit_propose(struct store *store, const struct rules *rules,
		   const struct permit_proposal *proposal, const char *text, size_t n,
		   const char *parse_error, const char *workspace, struct permit *ret,
		   struct error *err)
{
	cleanup_with(permit_release) struct permit p = { 0 };
	char now[64];
	int r;

	*ret = (struct permit){ 0 };
	sha256_hex(text ? text : "", text ? n : 0, p.proposal_sha256);
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	p.created_at = strdup(now);
	p.workspace = strdup(workspace);
	if (!p.created_at || !p.workspace)
		return error_set(err, ENOMEM, "out of memory");
	enum permit_state state;
	const char *event;
	if (parse_error) {
		p.invalid_reason = strdup(parse_error);
		p.p.reason = strdup("");
		if (!p.invalid_reason || !p.p.reason || !(p.p.argv = calloc(1, sizeof(char *))) ||
		    !(p.p.expected_paths = calloc(1, sizeof(char *))))
			return error_set(err, ENOMEM, "out of memory");
		snprintf(p.classify_rule, sizeof(p.classify_rule), "none");
		state = PERMIT_INVALID;
		event = "propose: the proposal is invalid";
	} else {
		struct permit_proposal *q = &p.p;
		q->via_shell = proposal->via_shell;
		q->timeout_seconds = proposal->timeout_seconds;
		q->declared_risk = proposal->declared_risk;
		q->has_confidence = proposal->has_confidence;
		q->confidence = proposal->confidence;
		if (!(q->reason = strdup(proposal->reason)) ||
		    (proposal->label && !(q->label = strdup(proposal->label))) ||
		    (proposal->candidate && !(q->candidate = strdup(proposal->candidate))) ||
		    (proposal->rollback && !(q->rollback = strdup(proposal->rollback))))
			return error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; proposal->argv[i]; i++)
			if (strv_push(&q->argv, proposal->argv[i]) < 0)
				return error_set(err, ENOMEM, "out of memory");
		if (!(q->expected_paths = calloc(1, sizeof(char *))))
			return error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; proposal->expected_paths[i]; i++)
			if (strv_push(&q->expected_paths, proposal->expected_paths[i]) < 0)
				return error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; proposal->verify && proposal->verify[i]; i++)
			if (strv_push(&q->verify, proposal->verify[i]) < 0)
				return error_set(err, ENOMEM, "out of memory");
		struct rules_verdict rv;
		rules_classify(rules, q->argv, &rv);
		p.risk_classified = rv.risk;
		snprintf(p.classify_rule, sizeof(p.classify_rule), "%s", rv.rule);
		snprintf(p.classify_reason, sizeof(p.classify_reason), "%s", rv.reason);
		if (q->rollback) {
			/* Recorded, judged like any candidate; run by nothing today. */
			rules_classify_shell(rules, q->rollback, &rv);
			p.rollback_risk = rv.risk;
		}
		p.risk = MAX(q->declared_risk, p.risk_classified);
		state = p.risk >= 5 ? PERMIT_REJECTED : PERMIT_PROPOSED;
		event = p.risk >= 5 ? "propose: risk 5 is rejected without a dry run" : "propose";
	}
	r = store_allocate_id_in(store, "permits", &p.id, err);
	if (r == 0)
		r = permit_commit_transition(store, &p, state, event, NULL, err);
	if (r < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}

/* Locks and loads permit id; the lock's fd goes to *ret_lock. */
static int permit_begin(struct store *store, uint64_t id, int *ret_lock, struct permit *ret,
			struct error *err)
{
	cleanup_close int dir_fd = -1;
	int r = permit_open_dir(store, false, &dir_fd, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	if (r < 0)
		return r;
	char name[64];
	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	if (faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	r = permit_lock(dir_fd, id, ret_lock, err);
	if (r < 0)
		return r;
	/* A permit acted on is one the ledger backs: a record rewritten since
	 * its last transition is refused, whatever it says. A transition a
	 * crash cut between the record's rename and its entry never happened:
	 * the committed record is put back first (store_settle). */
	char path[80], id_text[24], what[40];
	snprintf(path, sizeof(path), "permits/%s", name);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	snprintf(what, sizeof(what), "permit %llu", (unsigned long long)id);
	r = store_settle(store, path, err);
	if (r >= 0)
		r = ledger_require(store, LEDGER_PERMIT_TRANSITION, id_text, path, EPERM, what, NULL,
				   "refusing it", err);
	if (r == 0)
		r = permit_load_at(dir_fd, id, ret, err);
	if (r < 0) {
		close(*ret_lock);
		*ret_lock = -1;
	}
	return r;
}

static int permit_refuse_state(const struct permit *p, const char *step, struct error *err)
{
	return error_set(err, EPERM, "permit %llu is %s: %s is not possible from there",
			 (unsigned long long)p->id, permit_state_to_string(p->state), step);
}

/* A dry run of argv in the permit's workspace; its receipt's outcome. */
static int permit_run_dryrun(const struct run_context *ctx, struct store *store,
			     const struct permit *p, char *const *argv, bool expect,
			     struct run_outcome *ret, struct error *err)
{
	struct run_request req;
	struct run_context c = *ctx;
	char job[64];
	int r = 0;

	c.state_dir = store->path;
	run_request_init(&req);
	req.source = "dryrun";
	req.dryrun = true;
	req.has_timeout = true;
	req.timeout_ms = (uint64_t)(p->p.timeout_seconds ? p->p.timeout_seconds : PERMIT_TIMEOUT_DEFAULT) * 1000;
	snprintf(job, sizeof(job), "permit-%llu", (unsigned long long)p->id);
	if (!(req.cwd = strdup(p->workspace)) || !(req.workspace = strdup(p->workspace)) ||
	    !(req.job_id = strdup(job)) || !(req.rationale = strdup(p->p.reason)))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && argv[i]; i++)
		r = strv_push(&req.argv, argv[i]);
	for (size_t i = 0; r == 0 && expect && p->p.expected_paths[i]; i++) {
		r = strv_push(&req.expect_paths, p->p.expected_paths[i]);
		if (r == 0) /* a permit's paths may change in any way, deletion included */
			r = strv_push(&req.expect_delete, p->p.expected_paths[i]);
	}
	if (r == 0)
		r = run_execute(&c, &req, ret, err);
	else
		r = error_set(err, ENOMEM, "out of memory");
	run_request_release(&req);
	return r;
}

int permit_dryrun(const struct run_context *ctx, struct store *store, const struct rules *rules,
		  uint64_t id, struct permit *ret, struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(permit_release) struct permit p = { 0 };
	cleanup_with(run_outcome_release) struct run_outcome o = { 0 };
	cleanup_with(json_decrefp) json_t *detail = NULL;

	*ret = (struct permit){ 0 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	if (p.state != PERMIT_PROPOSED && p.state != PERMIT_DRY_RUN_FAILED &&
	    p.state != PERMIT_CONFLICT) {
		return permit_refuse_state(&p, "a dry run", err);
	}
	r = permit_run_dryrun(ctx, store, &p, p.p.argv, true, &o, err);
	if (r < 0)
		return r;
	/* The dry run is the permit's: plain `airlock apply` refuses it. */
	if (o.id) {
		char rel[80], text[32];
		int len = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)p.id);
		snprintf(rel, sizeof(rel), "dryruns/%llu", (unsigned long long)o.id);
		cleanup_close int dfd = openat(store->dir_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0 && file_write_atomic(dfd, "permit", text, (size_t)len, 0600,
						  store->durable, err) < 0 && err->code != EEXIST) {
			return error_prefix(err, "dry run %llu: mark it the permit's", (unsigned long long)o.id);
		}
		*err = (struct error){ 0 };
	}
	/* A new dry run: an approval of the old one covers nothing now. */
	json_decref(p.approval);
	p.approval = NULL;
	p.dryrun_id = o.id;
	p.changeset_sha256[0] = '\0';
	detail = json_pack("{s:I, s:s}", "dryrun", (json_int_t)o.id, "receipt_status",
				   receipt_status_to_string(o.status));
	if (!detail)
		return error_set(err, ENOMEM, "out of memory");
	enum permit_state to = PERMIT_DRY_RUN_FAILED;
	bool ran = o.verdict != DRYRUN_VERDICT_NONE && o.verdict != DRYRUN_VERDICT_DRY_RUN_FAILED;
	if (o.message[0])
		json_object_set_new(detail, "message", json_string(o.message));
	if (ran) {
		struct permit_check c;
		r = permit_recheck(store, rules, &p, &c, err);
		if (r < 0) {
			permit_check_release(&c);
			return r;
		}
		p.risk_classified = c.classified;
		snprintf(p.classify_rule, sizeof(p.classify_rule), "%s", c.rule);
		snprintf(p.classify_reason, sizeof(p.classify_reason), "%s", c.reason);
		p.risk_observed = c.observed;
		snprintf(p.observed_why, sizeof(p.observed_why), "%s", c.why);
		p.risk = c.risk;
		snprintf(p.changeset_sha256, sizeof(p.changeset_sha256), "%s", c.changeset_sha256);
		to = permit_state_for_verdict(c.verdict, c.risk);
		json_object_set_new(detail, "verdict", json_string(dryrun_verdict_name(c.verdict)));
		json_object_set_new(detail, "changeset_sha256", json_string(c.changeset_sha256));
		json_object_set_new(detail, "observed", json_string(c.why));
		if (json_array_size(c.problems))
			json_object_set(detail, "problems", c.problems);
		permit_check_release(&c);
	}
	r = permit_commit_transition(store, &p, to, "dryrun", detail, err);
	if (r < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}

/* Checks that what is on disk is what the permit recorded at its dry run,
 * and that its risk allows it to go on; commits REJECTED when it does not. */
static int permit_verify_current(struct store *store, const struct rules *rules, struct permit *p,
				 const char *step, struct error *err)
{
	struct permit_check c;
	int r = permit_recheck(store, rules, p, &c, err);
	if (r < 0) {
		permit_check_release(&c);
		return r;
	}
	const char *why = NULL;
	char buf[640];
	if (strcmp(c.changeset_sha256, p->changeset_sha256) != 0)
		why = "its dry run's change set is not the one the permit recorded";
	else if (c.verdict != DRYRUN_VERDICT_DRY_RUN_OK) {
		snprintf(buf, sizeof(buf), "its change set judged again is %s",
			 dryrun_verdict_name(c.verdict));
		why = buf;
	} else if (c.risk >= 5) {
		snprintf(buf, sizeof(buf), "its risk is 5: %s", c.why);
		why = buf;
	}
	if (why) {
		json_t *detail = json_pack("{s:s}", "reason", why);
		p->risk = MAX(p->risk, c.risk);
		r = permit_commit_transition(store, p, PERMIT_REJECTED, step, detail, err);
		json_decref(detail);
		if (r == 0)
			r = error_set(err, EPERM, "permit %llu is rejected: %s", (unsigned long long)p->id, why);
	} else {
		/* Risk only rises: a file tracked since the dry run asks for more,
		 * a file untracked since (the index is the workspace's) asks for
		 * no less than before. */
		p->risk = MAX(p->risk, c.risk);
		p->risk_classified = c.classified;
		p->risk_observed = c.observed;
	}
	permit_check_release(&c);
	return r;
}

int permit_approval_message(struct store *store, const struct rules *rules, uint64_t id,
			    char **ret_message, struct error *err)
{
	struct permit p;
	int r = permit_load(store, id, &p, err);
	if (r < 0)
		return r;
	if (p.state != PERMIT_DRY_RUN_OK && p.state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		r = permit_refuse_state(&p, "approval", err);
	struct permit_check c = { 0 };
	if (r == 0)
		r = permit_recheck(store, rules, &p, &c, err);
	if (r == 0 && (strcmp(c.changeset_sha256, p.changeset_sha256) != 0 ||
		       c.verdict != DRYRUN_VERDICT_DRY_RUN_OK || c.risk >= 5))
		r = error_set(err, EPERM, "permit %llu no longer matches its dry run: approve nothing; its exec will reject it",
			      (unsigned long long)id);
	if (r == 0) {
		p.risk = MAX(p.risk, c.risk); /* as permit_verify_current() */
		r = permit_message(&p, ret_message, err);
	}
	permit_check_release(&c);
	permit_release(&p);
	return r;
}

int permit_approve(struct store *store, const struct rules *rules, uint64_t id,
		   const char *passphrase, struct permit *ret, struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(approver_release) struct approver a = { 0 };
	cleanup_free char *message = NULL;
	json_t *approval = NULL;
	struct permit p;
	char fp[20];

	*ret = (struct permit){ 0 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	if (p.state != PERMIT_DRY_RUN_OK && p.state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		r = permit_refuse_state(&p, "approval", err);
	if (r == 0)
		r = permit_verify_current(store, rules, &p, "approve", err);
	if (r == 0)
		r = permit_message(&p, &message, err);
	if (r == 0)
		r = approver_load_in_effect(store, &a, err);
	if (r == 0)
		r = approver_sign(&a, passphrase, message, &approval, err);
	if (r == 0) {
		p.approval = approval;
		json_t *detail = json_pack("{s:s}", "approver", approver_fingerprint(&a, fp));
		r = permit_commit_transition(store, &p, PERMIT_APPROVED, "approve", detail, err);
		json_decref(detail);
	}
	if (r < 0) {
		permit_release(&p);
		return r;
	}
	*ret = p;
	return 0;
}

int permit_deny(struct store *store, uint64_t id, const char *reason, struct permit *ret,
		struct error *err)
{
	cleanup_close int lock = -1;
	struct permit p;

	*ret = (struct permit){ 0 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	if (!permit_transition_allowed(p.state, PERMIT_DENIED))
		r = permit_refuse_state(&p, "deny", err);
	if (r == 0) {
		json_t *detail = json_pack("{s:s}", "reason", reason ? reason : "");
		r = permit_commit_transition(store, &p, PERMIT_DENIED, "deny", detail, err);
		json_decref(detail);
	}
	if (r < 0) {
		permit_release(&p);
		return r;
	}
	*ret = p;
	return 0;
}

/* Whether p's approval is the enrolled approver's signature over p as it is. */
static bool permit_approval_valid(struct store *store, const struct permit *p, char *why,
				  size_t why_size)
{
	cleanup_with(approver_release) struct approver a = { 0 };
	cleanup_free char *message = NULL;
	struct error err = { 0 };

	if (!p->approval) {
		snprintf(why, why_size, "risk %d needs the approver's signature: airlock permit approve %llu",
			 p->risk, (unsigned long long)p->id);
		return false;
	}
	if (permit_message(p, &message, &err) < 0 || approver_load_in_effect(store, &a, &err) < 0) {
		snprintf(why, why_size, "the approval cannot be checked: %.400s", err.msg);
		return false;
	}
	if (strcmp(jsonutil_str(p->approval, "message"), message) != 0) {
		snprintf(why, why_size, "the approval does not cover this permit as it is now (its command, paths, risk or change set differ from what was signed)");
		return false;
	}
	if (!approver_verify(&a, p->approval)) {
		snprintf(why, why_size, "the approval's signature is not the enrolled approver's");
		return false;
	}
	return true;
}

/* An APPLIED permit whose verify has not passed: the last transition is
 * the apply itself (an exec cut short in its verify, or one without any). */
static bool permit_awaits_verify(const struct permit *p)
{
	json_t *last = json_array_get(p->history, json_array_size(p->history) - 1);
	return p->state == PERMIT_APPLIED && last &&
	       strcmp(jsonutil_str(last, "event") ? jsonutil_str(last, "event") : "", "verify passed") != 0;
}

/* The verify of an applied permit, on a snapshot of the applied tree; the
 * tree rolled back (ROLLED_BACK) when it fails, "verify passed" recorded
 * when it does. */
static int permit_verify_applied(const struct run_context *ctx, struct store *store,
				 struct permit *p, char *const *check,
				 struct permit_exec_result *res, struct error *err)
{
	struct apply_outcome out = { 0 };
	struct run_outcome o = { 0 };
	/* verify runs on a snapshot of the applied tree: it judges, it cannot
	 * change what a rollback must restore. */
	int r = permit_run_dryrun(ctx, store, p, check, false, &o, err);
	if (r < 0)
		return r;
	res->verify_receipt = o.id;
	if (o.status == RECEIPT_EXITED)
		res->verify_exit = o.exit_code;
	bool passed = o.status == RECEIPT_EXITED && o.match_expected;
	run_outcome_release(&o);
	struct error ignored = { 0 };
	(void)apply_discard(store, res->verify_receipt, &ignored);
	json_t *detail = json_pack("{s:I, s:i}", "verify_receipt", (json_int_t)res->verify_receipt,
				   "verify_exit", res->verify_exit);
	if (!detail)
		return error_set(err, ENOMEM, "out of memory");
	if (passed) {
		r = permit_commit_transition(store, p, PERMIT_APPLIED, "verify passed", detail, err);
		json_decref(detail);
		return r;
	}
	r = apply_rollback(store, p->dryrun_id, &out, err);
	if (r < 0) {
		json_decref(detail);
		return error_prefix(err, "verify (receipt %llu) failed and the rollback did not happen",
				    (unsigned long long)res->verify_receipt);
	}
	json_object_set_new(detail, "undone", json_integer((json_int_t)out.ops));
	r = permit_commit_transition(store, p, PERMIT_ROLLED_BACK, "verify failed", detail, err);
	json_decref(detail);
	if (r == 0)
		snprintf(res->note, sizeof(res->note),
			 "verify failed (receipt %llu): the journal undid %zu operations",
			 (unsigned long long)res->verify_receipt, out.ops);
	return r;
}

/* exec of an APPLIED permit: what an exec cut short left to do. A dry run
 * rolled back since (a crash between the rollback and its commit, or
 * `airlock rollback` by hand) is recorded ROLLED_BACK; an apply whose
 * verify never finished is verified now. */
static int permit_exec_applied(const struct run_context *ctx, struct store *store,
			       struct permit *p, char *const *check, const char *dstate,
			       struct permit_exec_result *res, struct error *err)
{
	if (!strcmp(dstate, "rolled_back") || !strcmp(dstate, "pending")) {
		json_t *detail = json_pack("{s:I, s:s}", "dryrun", (json_int_t)p->dryrun_id,
					   "dryrun_state", dstate);
		int r = permit_commit_transition(store, p, PERMIT_ROLLED_BACK,
						 "exec: found rolled back (by an exec that crashed before its commit, or by hand)",
						 detail, err);
		json_decref(detail);
		if (r == 0)
			snprintf(res->note, sizeof(res->note), "dry run %llu was found rolled back",
				 (unsigned long long)p->dryrun_id);
		return r;
	}
	if (!check || !permit_awaits_verify(p))
		return error_set(err, EPERM, "permit %llu is APPLIED%s: exec is not possible from there",
				 (unsigned long long)p->id, check ? " and verified" : "");
	return permit_verify_applied(ctx, store, p, check, res, err);
}

/* permit_exec() of a permit not yet APPLIED. */
static int permit_exec_apply(const struct run_context *ctx, struct store *store,
			     const struct rules *rules, struct permit *p, char *const *check,
			     struct permit_exec_result *res, struct error *err)
{
	struct apply_outcome out = { 0 };
	char why[512], dstate[32];

	if (p->state != PERMIT_DRY_RUN_OK && p->state != PERMIT_APPROVED &&
	    p->state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		return permit_refuse_state(p, "exec", err);
	int r = permit_verify_current(store, rules, p, "exec", err);
	if (r < 0)
		return r;
	if (p->risk >= 4 && !permit_approval_valid(store, p, why, sizeof(why))) {
		json_t *detail = json_pack("{s:s}", "reason", why);
		r = permit_commit_transition(store, p, PERMIT_REJECTED_WITHOUT_APPROVAL, "exec",
					     detail, err);
		json_decref(detail);
		if (r == 0)
			r = error_set(err, EACCES, "permit %llu: %s", (unsigned long long)p->id, why);
		return r;
	}
	/* An exec that crashed between its apply and its commit: the dry run's
	 * state, once apply has finished what the crash left (apply_state). */
	r = apply_state(store, p->dryrun_id, dstate, sizeof(dstate), err);
	if (r < 0)
		return r;
	bool recovered = !strcmp(dstate, "applied");
	if (!recovered)
		r = apply_changes_reviewed(store, p->dryrun_id, 0, p->changeset_sha256, &out, err);
	if (r == -EBUSY) {
		json_t *detail = json_pack("{s:s}", "conflict", out.conflict);
		struct error commit_err = { 0 };
		if (permit_commit_transition(store, p, PERMIT_CONFLICT, "exec", detail, &commit_err) < 0)
			error_prefix(err, "%s; and", commit_err.msg);
		json_decref(detail);
		return r;
	}
	if (r < 0)
		return r;
	FAULT_POINT("permit.exec.applied"); /* a crash before the commit */
	res->ops = out.ops;
	json_t *detail = json_pack("{s:I, s:I}", "dryrun", (json_int_t)p->dryrun_id, "operations",
				   (json_int_t)out.ops);
	r = permit_commit_transition(store, p, PERMIT_APPLIED,
				     recovered ? "exec: found applied by an exec that crashed before its commit" : "exec",
				     detail, err);
	json_decref(detail);
	if (r < 0)
		return r;
	if (check && (r = permit_verify_applied(ctx, store, p, check, res, err)) < 0)
		return r;
	return 0;
}

int permit_exec(const struct run_context *ctx, struct store *store, const struct rules *rules,
		uint64_t id, char *const *verify, struct permit *ret,
		struct permit_exec_result *res, struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(permit_release) struct permit p = { 0 };
	char dstate[32];

	*ret = (struct permit){ 0 };
	*res = (struct permit_exec_result){ .verify_exit = -1 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	char *const *check = verify && verify[0] ? verify : p.p.verify;
	if (p.state == PERMIT_APPLIED) {
		r = apply_state(store, p.dryrun_id, dstate, sizeof(dstate), err);
		if (r == 0)
			r = permit_exec_applied(ctx, store, &p, check, dstate, res, err);
	} else {
		r = permit_exec_apply(ctx, store, rules, &p, check, res, err);
	}
	if (r < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}
