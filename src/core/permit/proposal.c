/* SPDX-License-Identifier: MIT */
#include "core/permit/proposal.h"

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
#include "core/store/jsonutil.h"

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

int permit_check_path(const char *path, size_t i, struct error *err)
{
	if (!*path)
		return error_set(err, EINVAL, "'expected_paths[%zu]' is empty", i);
	if (path[0] == '/')
		return error_set(err, EINVAL,
				 "'expected_paths[%zu]' is absolute: paths are relative to the workspace",
				 i);
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

int permit_get_label(json_t *v, const char *name, char **ret, struct error *err)
{
	if (!json_is_string(v))
		return error_set(err, EINVAL, "'%s' must be a string", name);
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0)
		return error_set(err, EINVAL,
				 "'%s' is empty: a label names the proposal, or leave it out", name);
	if (n > PERMIT_LABEL_MAX)
		return error_set(err, EINVAL, "'%s' is longer than %d bytes", name, PERMIT_LABEL_MAX);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] < 0xa0) ||
		    (s[i] == 0xe2 && i + 2 < n &&
		     ((s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae) ||
		      (s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9))))
			return error_set(err, EINVAL, "'%s' has a control character (byte %zu)",
					 name, i);
	return jsonutil_get_string(v, name, ret, err);
}

int permit_get_argv(json_t *v, const char *name, char ***ret, struct error *err)
{
	int r = jsonutil_get_strv(v, name, true, ret, err);
	if (r < 0)
		return r;
	if (!(*ret)[0] || !(*ret)[0][0])
		return error_set(err, EINVAL,
				 "'%s' must name a command: its first word is empty or missing", name);
	return 0;
}

/* permit_parse_proposal(): its label, and its command: argv, or a shell
 * string run as sh -c. */
static int proposal_parse_command(json_t *doc, struct permit_proposal *p, struct error *err)
{
	int r;

	/* The seed's `id` is the proposer's label, never the permit's id. */
	json_t *label = json_object_get(doc, "id");
	if (label && (r = permit_get_label(label, "id", &p->label, err)) < 0)
		return r;
	json_t *candidate = json_object_get(doc, "candidate"), *argv = json_object_get(doc, "argv");
	if (candidate && argv)
		return error_set(err, EINVAL, "give 'argv' or 'candidate', not both");
	if (!candidate && !argv)
		return error_set(err, EINVAL,
				 "no command: give 'argv' (preferred) or 'candidate' (a shell string)");
	if (argv) {
		r = permit_get_argv(argv, "argv", &p->argv, err);
	} else {
		r = jsonutil_get_string(candidate, "candidate", &p->candidate, err);
		if (r == 0 && strspn(p->candidate, " \t\n") == strlen(p->candidate))
			r = error_set(err, EINVAL, "'candidate' is empty");
		/* A shell string runs through a shell, explicitly and on record. */
		if (r == 0 && (strv_push(&p->argv, "sh") < 0 || strv_push(&p->argv, "-c") < 0 ||
			       strv_push(&p->argv, p->candidate) < 0))
			r = error_set(err, ENOMEM, "out of memory");
		p->via_shell = true;
	}
	return r < 0 ? r : 0;
}

/* permit_parse_proposal(): why, and the paths it is expected to change. */
static int proposal_parse_paths(json_t *doc, struct permit_proposal *p, struct error *err)
{
	int r;

	json_t *v = json_object_get(doc, "reason");
	if (!v)
		r = error_set(err, EINVAL, "'reason' is missing: a permit records why");
	else
		r = jsonutil_get_string(v, "reason", &p->reason, err);
	if (r < 0)
		return r;
	v = json_object_get(doc, "expected_paths");
	if (!v)
		return error_set(err, EINVAL,
				 "'expected_paths' is missing (give [] when nothing should change)");
	r = jsonutil_get_strv(v, "expected_paths", true, &p->expected_paths, err);
	if (r < 0)
		return r;
	if (strv_length(p->expected_paths) > PERMIT_MAX_PATHS)
		return error_set(err, E2BIG, "'expected_paths' has more than %d entries",
				 PERMIT_MAX_PATHS);
	for (size_t i = 0; p->expected_paths[i]; i++)
		if ((r = permit_check_path(p->expected_paths[i], i, err)) < 0)
			return r;
	return 0;
}

/* permit_parse_proposal(): the optional keys. */
static int proposal_parse_options(json_t *doc, struct permit_proposal *p, struct error *err)
{
	json_t *v;
	uint64_t u;
	int r;

	if ((v = json_object_get(doc, "rollback"))) {
		if (json_is_null(v))
			;
		else if ((r = jsonutil_get_string(v, "rollback", &p->rollback, err)) < 0)
			return r;
	}
	if ((v = json_object_get(doc, "verify")) &&
	    (r = permit_get_argv(v, "verify", &p->verify, err)) < 0)
		return r;
	if ((v = json_object_get(doc, "timeout_seconds"))) {
		if ((r = jsonutil_get_u64(v, "timeout_seconds", 1, PERMIT_TIMEOUT_MAX, &u, err)) < 0)
			return r;
		p->timeout_seconds = (unsigned)u;
	}
	if ((v = json_object_get(doc, "risk"))) {
		if ((r = jsonutil_get_u64(v, "risk", 1, 5, &u, err)) < 0)
			return r;
		p->declared_risk = (int)u;
	}
	if ((v = json_object_get(doc, "confidence"))) {
		double c = json_number_value(v);
		if (!json_is_number(v) || !isfinite(c) || c < 0 || c > 1)
			return error_set(err, EINVAL, "'confidence' must be a number from 0 to 1");
		p->has_confidence = true;
		p->confidence = c;
	}
	if ((v = json_object_get(doc, "dry_run_required"))) {
		bool b;
		if ((r = jsonutil_get_bool(v, "dry_run_required", &b, err)) < 0)
			return r;
		if (!b)
			return error_set(err, EINVAL,
					 "'dry_run_required' false is not offered: every permit is dry-run first");
	}
	return 0;
}

int permit_parse_proposal(const char *text, size_t n, struct permit_proposal *ret, struct error *err)
{
	static const char *const keys[] = { "id",	  "candidate",	      "argv",
					    "reason",	  "expected_paths",   "rollback",
					    "verify",	  "timeout_seconds",  "risk",
					    "confidence", "dry_run_required", NULL };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(permit_proposal_release) struct permit_proposal p = {
		.timeout_seconds = PERMIT_TIMEOUT_DEFAULT
	};
	int r;

	*ret = (struct permit_proposal){ 0 };
	r = jsonutil_parse_object(text, n, &doc, err);
	if (r < 0)
		return r;
	r = jsonutil_check_keys(doc, "", keys, err);
	if (r < 0)
		return r;
	if ((r = proposal_parse_command(doc, &p, err)) < 0 ||
	    (r = proposal_parse_paths(doc, &p, err)) < 0 ||
	    (r = proposal_parse_options(doc, &p, err)) < 0)
		return r;
	*ret = p;
	p = (struct permit_proposal){ 0 };
	return 0;
}
