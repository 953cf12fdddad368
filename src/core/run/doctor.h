/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "core/host/hostview.h"

/* `airlock doctor`: each layer of the quarantine checked on this host, with
 * what to do about the ones that fail. */
struct doctor_check {
	const char *layer;
	bool ok;
	bool required; /* false: reported, but the quarantine works without it */
	char detail[256];
	char fix[512];
};

#define DOCTOR_MAX_CHECKS 12

struct doctor_report {
	struct doctor_check checks[DOCTOR_MAX_CHECKS];
	size_t n;
};

/* What a run from workspace would hide, as the policy and the caller's
 * environment say (core/host/hostview.h): masked directories with what stays
 * visible in them, then each hidden path that exists here. */
enum doctor_hidden_how {
	DOCTOR_HIDDEN, /* replaced by an empty view */
	DOCTOR_HIDDEN_BY_MASK, /* inside a masked directory already */
};

struct doctor_hidden {
	char *path;
	char *target; /* where a symlinked path resolves (hidden there); NULL otherwise */
	enum doctor_hidden_how how;
};

/* A sandbox.writable entry and what a run would make of it now
 * (hostview_open_writable(), the check run applies). */
struct doctor_writable {
	char *entry; /* as the policy says it */
	char *path; /* resolved, when it passes; NULL when refused */
	char *refusal; /* the refusal a run gives, when refused; NULL otherwise */
};

struct doctor_view {
	char *policy_origin;
	/* the denial a run gives a policy file that widens the built-in one
	 * unapproved (core/gate/policyapproval.h); NULL when runs take it */
	char *policy_refusal;
	bool home_hidden;
	bool share_net; /* sandbox.net "host" */
	/* sandbox.net's allowlist form (docs/network.md): its patterns,
	 * canonical; NULL unless net_allowlist */
	bool net_allowlist;
	char **net_allow, **net_deny;
	struct doctor_writable *writable;
	size_t n_writable;
	size_t n_refused;
	const char *workspace;
	struct hostview view;
	struct doctor_hidden *hidden;
	size_t n_hidden;
	size_t n_absent; /* listed by the policy, absent here: nothing to hide */
	char **state_dirs;
};

struct session;
/* The policy is the session's policy_path, else the workspace's
 * .airlock/policy.json (policy_route_path(), what a routed run gets), else
 * the built-in one; the state directory and the caller's environment are the
 * session's, and the state directory is never created. */
int doctor_view_build(struct session *s, const char *workspace, struct doctor_view *ret,
		      struct error *err);
void doctor_view_release(struct doctor_view *v);

/* Runs every check, including one real quarantined run of /bin/true. */
void doctor_run(struct doctor_report *report);
/* True when every required check passed. */
bool doctor_report_ok(const struct doctor_report *report);
