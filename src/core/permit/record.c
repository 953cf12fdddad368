/* SPDX-License-Identifier: MIT */
#include "core/permit/record.h"

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
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/permit/proposal.h"
#include "core/store/jsonutil.h"

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

bool permit_transition_allowed(enum permit_state from, enum permit_state to)
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

int permit_message(const struct permit *p, char **ret, struct error *err)
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

int permit_message_for_origin(const struct permit *p, const char *origin, char **ret, struct error *err)
{
	cleanup_free char *message = NULL;
	if (!origin || !origin[0] || strpbrk(origin, "\r\n"))
		return error_set(err, EINVAL, "a log origin is one line of text");
	int r = permit_message(p, &message, err);
	if (r < 0)
		return r;
	if (asprintf(ret, "%sorigin=%s\n", message, origin) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

const char *permit_message_origin(const char *message, size_t *ret_n)
{
	static const char key[] = "origin=";
	size_t n = message ? strlen(message) : 0;
	if (n < 2 || message[n - 1] != '\n')
		return NULL;
	/* the last line: after the line break before its own */
	size_t start = n - 1;
	while (start > 0 && message[start - 1] != '\n')
		start--;
	if (start == 0 || strncmp(message + start, key, strlen(key)) != 0)
		return NULL;
	*ret_n = n - 1 - start - strlen(key);
	return message + start + strlen(key);
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

static int permit_get_int(json_t *doc, const char *key, int min, int max, int *ret, struct error *err)
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

/* permit_parse(): the keys every permit has, and its argv and paths checked. */
static int permit_parse_required(json_t *doc, struct permit *p, struct error *err)
{
	uint64_t u;
	int r;

	if ((r = jsonutil_get_u64(json_object_get(doc, "id"), "id", 1, INT64_MAX, &p->id, err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "workspace"), "workspace", &p->workspace,
				     err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "created_at"), "created_at",
				     &p->created_at, err)) < 0 ||
	    (r = jsonutil_get_string(json_object_get(doc, "reason"), "reason", &p->p.reason, err)) < 0 ||
	    (r = jsonutil_get_bool(json_object_get(doc, "via_shell"), "via_shell", &p->p.via_shell,
				   err)) < 0 ||
	    (r = jsonutil_get_strv(json_object_get(doc, "argv"), "argv", true, &p->p.argv, err)) < 0 ||
	    (r = jsonutil_get_strv(json_object_get(doc, "expected_paths"), "expected_paths", true,
				   &p->p.expected_paths, err)) < 0 ||
	    (r = jsonutil_get_u64(json_object_get(doc, "timeout_seconds"), "timeout_seconds", 0,
				  PERMIT_TIMEOUT_MAX, &u, err)) < 0)
		return r;
	p->p.timeout_seconds = (unsigned)u;
	if ((r = permit_get_int(doc, "risk", 0, 5, &p->risk, err)) < 0 ||
	    (r = permit_get_int(doc, "risk_classified", 0, 5, &p->risk_classified, err)) < 0 ||
	    (r = permit_get_int(doc, "risk_observed", 0, 5, &p->risk_observed, err)) < 0 ||
	    (r = permit_get_int(doc, "rollback_risk", 0, 5, &p->rollback_risk, err)) < 0 ||
	    (r = jsonutil_get_u64(json_object_get(doc, "dryrun"), "dryrun", 0, INT64_MAX,
				  &p->dryrun_id, err)) < 0 ||
	    (r = permit_get_hex(doc, "changeset_sha256", true, p->changeset_sha256, err)) < 0 ||
	    (r = permit_get_hex(doc, "proposal_sha256", false, p->proposal_sha256, err)) < 0)
		return r;
	if (p->state != PERMIT_INVALID && (!p->p.argv[0] || !p->p.argv[0][0]))
		return error_set(err, EINVAL, "'argv' is empty");
	for (size_t i = 0; p->p.expected_paths[i]; i++)
		if ((r = permit_check_path(p->p.expected_paths[i], i, err)) < 0)
			return r;
	return 0;
}

/* permit_parse(): the optional parts of the proposed command. */
static int permit_parse_command(json_t *doc, struct permit *p, struct error *err)
{
	json_t *v;
	int r;

	if ((v = json_object_get(doc, "candidate")) &&
	    (r = jsonutil_get_string(v, "candidate", &p->p.candidate, err)) < 0)
		return r;
	/* A shell string is recorded as what runs: sh -c CANDIDATE, exactly. */
	if (p->p.via_shell != (p->p.candidate != NULL) ||
	    (p->p.candidate &&
	     (strv_length(p->p.argv) != 3 || strcmp(p->p.argv[0], "sh") != 0 ||
	      strcmp(p->p.argv[1], "-c") != 0 || strcmp(p->p.argv[2], p->p.candidate) != 0)))
		return error_set(err, EINVAL, "'candidate', 'via_shell' and 'argv' disagree");
	if ((v = json_object_get(doc, "rollback")) &&
	    (r = jsonutil_get_string(v, "rollback", &p->p.rollback, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "verify")) &&
	    (r = permit_get_argv(v, "verify", &p->p.verify, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "declared_risk")) &&
	    (r = permit_get_int(doc, "declared_risk", 1, 5, &p->p.declared_risk, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "confidence"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
			return error_set(err, EINVAL, "'confidence' must be a number from 0 to 1");
		p->p.has_confidence = true;
		p->p.confidence = json_number_value(v);
	}
	return 0;
}

/* permit_parse(): why it is invalid, if it is, and how it was classified. */
static int permit_parse_verdicts(json_t *doc, struct permit *p, struct error *err)
{
	json_t *v;
	int r;

	if ((v = json_object_get(doc, "invalid_reason")) &&
	    (r = jsonutil_get_string(v, "invalid_reason", &p->invalid_reason, err)) < 0)
		return r;
	const char *rule = jsonutil_str(doc, "classify_rule"), *why = jsonutil_str(doc, "observed");
	if (!rule || !why)
		return error_set(err, EINVAL, "'classify_rule' and 'observed' must be strings");
	snprintf(p->classify_rule, sizeof(p->classify_rule), "%s", rule);
	snprintf(p->observed_why, sizeof(p->observed_why), "%s", why);
	/* Both keys are optional: records before issue 20 have neither. */
	if ((v = json_object_get(doc, "label")) &&
	    (r = permit_get_label(v, "label", &p->p.label, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "classify_reason"))) {
		if (!json_is_string(v) || json_string_length(v) >= sizeof(p->classify_reason))
			return error_set(err, EINVAL,
					 "'classify_reason' must be a string of at most %zu bytes",
					 sizeof(p->classify_reason) - 1);
		snprintf(p->classify_reason, sizeof(p->classify_reason), "%s", json_string_value(v));
	}
	return 0;
}

/* permit_parse(): its approval and its history. */
static int permit_parse_trail(json_t *doc, struct permit *p, struct error *err)
{
	json_t *v;

	v = json_object_get(doc, "approval");
	if (v && (!json_is_object(v) || !jsonutil_str(v, "message") ||
		  !jsonutil_str(v, "signature") || !jsonutil_str(v, "public_key")))
		return error_set(err, EINVAL,
				 "'approval' must hold a message, public_key and signature");
	p->approval = json_incref(v);
	v = json_object_get(doc, "history");
	size_t i;
	json_t *h;
	if (!json_is_array(v))
		return error_set(err, EINVAL, "'history' must be an array");
	json_array_foreach(v, i, h)
		if (!json_is_object(h) || permit_state_from_string(jsonutil_str(h, "to")) < 0)
			return error_set(err, EINVAL, "'history[%zu]' has no known 'to' state", i);
	p->history = json_incref(v);
	return 0;
}

int permit_parse(const char *text, size_t n, struct permit *ret, struct error *err)
{
	static const char *const keys[] = { "schema",
					    "id",
					    "workspace",
					    "argv",
					    "via_shell",
					    "reason",
					    "expected_paths",
					    "timeout_seconds",
					    "risk",
					    "dryrun",
					    "changeset_sha256",
					    "candidate",
					    "rollback",
					    "verify",
					    "declared_risk",
					    "state",
					    "created_at",
					    "proposal_sha256",
					    "dry_run_required",
					    "invalid_reason",
					    "confidence",
					    "risk_classified",
					    "classify_rule",
					    "risk_observed",
					    "observed",
					    "rollback_risk",
					    "approval",
					    "history",
					    "label",
					    "classify_reason",
					    NULL };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(permit_release) struct permit p = { 0 };

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
	if ((r = permit_parse_required(doc, &p, err)) < 0 ||
	    (r = permit_parse_command(doc, &p, err)) < 0 ||
	    (r = permit_parse_verdicts(doc, &p, err)) < 0 || (r = permit_parse_trail(doc, &p, err)) < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}
