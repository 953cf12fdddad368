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
#include "basic/strv.h"
#include "core/permit/proposal.h"
#include "core/permit/record.h"
#include "core/permit/storage.h"
#include "core/permit/risk.h"
#include "core/snapshot/apply.h"
#include "core/gate/approver.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "core/store/store.h"
#include "ledger/ledger.h"

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
	r = store_allocate_id_in(store, STATEPATH_PERMITS, LEDGER_PERMIT_TRANSITION, &p.id, err);
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
	char id_text[24], what[40];
	struct statepath path = statepath_permit(id), name = statepath_permit_name(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	if (faccessat(dir_fd, name.s, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		/* The record is a cache of its last entry, which carries its
		 * bytes: a file lost (a power loss, a deletion) is written back
		 * from the log, never over one that exists (store_read_record). */
		cleanup_free char *text = NULL;
		struct error ignored = { 0 };
		if (store_read_record(store, LEDGER_PERMIT_TRANSITION, id_text, path.s,
				      PERMIT_RECORD_MAX, &text, NULL, &ignored) < 0)
			return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	}
	r = permit_lock(dir_fd, id, ret_lock, err);
	if (r < 0)
		return r;
	/* A permit acted on is one the ledger backs: a record rewritten since
	 * its last transition is refused, whatever it says. A transition a
	 * crash cut between the record's rename and its entry never happened:
	 * the committed record is put back first; a torn copy of the record
	 * its entry carries is written back from the log (store_settle). */
	snprintf(what, sizeof(what), "permit %llu", (unsigned long long)id);
	r = store_settle(store, path.s, err);
	if (r >= 0)
		r = ledger_require(store_ledger(store), LEDGER_PERMIT_TRANSITION, id_text, path.s,
				   EPERM, what, NULL, "refusing it", err);
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

/* A dry run of argv in the permit's workspace; its receipt's outcome. git
 * (not NULL): started by the dry run once its change set is judged, when
 * that needs it (permit_git_judged()). */
static int permit_run_dryrun(const struct run_context *ctx, struct store *store,
			     const struct permit *p, char *const *argv, bool expect,
			     struct permit_git *git, struct run_outcome *ret, struct error *err)
{
	struct run_request req;
	struct run_context c = *ctx;
	char job[64];
	int r = 0;

	(void)store; /* the session's, which the run uses */
	if (git)
		c.dryrun_judged = (struct dryrun_judged_hook){ permit_git_judged, git };
	run_request_init(&req);
	req.source = "dryrun";
	req.dryrun = true;
	req.permit_id = p->id; /* plain `airlock apply` refuses it from the start */
	req.has_timeout = true;
	req.timeout_ms =
		(uint64_t)(p->p.timeout_seconds ? p->p.timeout_seconds : PERMIT_TIMEOUT_DEFAULT) * 1000;
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

/* The dry run of a locked permit p (permit_begin), committed: p is the
 * permit afterwards, its state the dry run's judgement. */
static int permit_dryrun_locked(const struct run_context *ctx, struct store *store,
				const struct rules *rules, struct permit *p, struct error *err)
{
	cleanup_with(run_outcome_release) struct run_outcome o = { 0 };
	cleanup_with(json_decrefp) json_t *detail = NULL;
	/* The observed risk's `git ls-files`, started by the dry run once its
	 * change set is judged: it runs beside the change set's and the
	 * receipt's syncs, collected by permit_recheck(); killed and reaped
	 * on any path that does not get there. */
	cleanup_with(permit_git_stop) struct permit_git git = PERMIT_GIT_INIT(p->workspace);

	if (p->state != PERMIT_PROPOSED && p->state != PERMIT_DRY_RUN_FAILED &&
	    p->state != PERMIT_CONFLICT) {
		return permit_refuse_state(p, "a dry run", err);
	}
	/* The dry run's change set is written (file and directory synced)
	 * before its entry, and its receipt syncs after it: that one
	 * fdatasync makes both entries durable (store_sync_defer), and a
	 * PROPOSED that `propose --exec` deferred with them. Nothing acts on
	 * them before: the receipt's sync comes before run_execute() returns,
	 * apply refuses a permit's dry run (its `permit` marker) and every
	 * other command syncs its own commit, which covers the lines before
	 * it, before it acts. A power loss before that sync leaves what a
	 * kill before the change set's append leaves, or with `propose
	 * --exec` what a kill before PROPOSED's leaves, but for a dry run's
	 * directory (its command ran in the snapshot) whose change set no
	 * entry backs: the permit's id may be handed out again, the receipt's
	 * is not (store_allocate_id skips the directory), `ledger recover`
	 * moves the change set aside (tests/cli/permit.bats, "a power loss at
	 * any log write of a propose --exec"). */
	store_sync_defer(store);
	int r = permit_run_dryrun(ctx, store, p, p->p.argv, true, &git, &o, err);
	store_sync_resume(store);
	if (r < 0)
		return r;
	/* A new dry run: an approval of the old one covers nothing now. */
	json_decref(p->approval);
	p->approval = NULL;
	p->dryrun_id = o.id;
	p->changeset_sha256[0] = '\0';
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
		r = permit_recheck(store, rules, p, &git, &c, err);
		if (r < 0) {
			permit_check_release(&c);
			return r;
		}
		p->risk_classified = c.classified;
		snprintf(p->classify_rule, sizeof(p->classify_rule), "%s", c.rule);
		snprintf(p->classify_reason, sizeof(p->classify_reason), "%s", c.reason);
		p->risk_observed = c.observed;
		snprintf(p->observed_why, sizeof(p->observed_why), "%s", c.why);
		p->risk = c.risk;
		snprintf(p->changeset_sha256, sizeof(p->changeset_sha256), "%s", c.changeset_sha256);
		to = permit_state_for_verdict(c.verdict, c.risk);
		json_object_set_new(detail, "verdict", json_string(dryrun_verdict_name(c.verdict)));
		json_object_set_new(detail, "changeset_sha256", json_string(c.changeset_sha256));
		json_object_set_new(detail, "observed", json_string(c.why));
		if (json_array_size(c.problems))
			json_object_set(detail, "problems", c.problems);
		permit_check_release(&c);
	}
	r = permit_commit_transition(store, p, to, "dryrun", detail, err);
	return r;
}

/* The end of a permit command whose commits deferred their checkpoint
 * (store_checkpoint_defer): one checkpoint signs them all, before the
 * command returns and its result is shown. r is the command's result; a
 * flush that fails fails a command that had succeeded (*ret released). */
static int permit_flush(struct store *store, int r, struct permit *ret, struct error *err)
{
	struct error flush_err = { 0 };
	int f = store_checkpoint_flush(store, r < 0 ? &flush_err : err);
	if (r < 0 || f == 0)
		return r;
	permit_release(ret);
	*ret = (struct permit){ 0 };
	return f;
}

static int permit_dryrun_command(const struct run_context *ctx, struct store *store,
				 const struct rules *rules, uint64_t id, struct permit *ret,
				 struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(permit_release) struct permit p = { 0 };

	*ret = (struct permit){ 0 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r == 0)
		r = permit_dryrun_locked(ctx, store, rules, &p, err);
	if (r < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}

/* A dry run commits the dry run's change set and the permit's transition
 * (each durable before the next step acts on it): one checkpoint signs
 * them at the end (docs/ledger.md, "When one is signed"). */
int permit_dryrun(const struct run_context *ctx, struct store *store, const struct rules *rules,
		  uint64_t id, struct permit *ret, struct error *err)
{
	store_checkpoint_defer(store);
	int r = permit_dryrun_command(ctx, store, rules, id, ret, err);
	return permit_flush(store, r, ret, err);
}

/* Checks that what is on disk is what the permit recorded at its dry run,
 * and that its risk allows it to go on; commits REJECTED when it does not. */
static int permit_verify_current(struct store *store, const struct rules *rules, struct permit *p,
				 const char *step, struct error *err)
{
	struct permit_check c;
	int r = permit_recheck(store, rules, p, NULL, &c, err);
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
			r = error_set(err, EPERM, "permit %llu is rejected: %s",
				      (unsigned long long)p->id, why);
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
		r = permit_recheck(store, rules, &p, NULL, &c, err);
	if (r == 0 && (strcmp(c.changeset_sha256, p.changeset_sha256) != 0 ||
		       c.verdict != DRYRUN_VERDICT_DRY_RUN_OK || c.risk >= 5))
		r = error_set(err, EPERM,
			      "permit %llu no longer matches its dry run: approve nothing; its exec will reject it",
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

/* This host's log origin: its ledger key's name, as its checkpoints and
 * the mirror's airlock.logs name it. Read from the ledger, never from the
 * mirror: it is what an approval made away from the host must name. */
static int permit_own_origin(struct store *store, char **ret, struct error *err)
{
	cleanup_free char *vkey = NULL;
	struct ledger_vkey k;
	int r = ledger_public_key(store_ledger(store), false, &vkey, err);
	if (r == 0)
		r = ledger_vkey_parse(vkey, &k, err);
	if (r < 0)
		return error_prefix(err, "this host's log origin");
	*ret = strdup(k.name);
	return *ret ? 0 : error_set(err, ENOMEM, "out of memory");
}

/* Whether approval is a signature over message (permit_message_for_origin()
 * with origin, this host's) by the approver in effect: -EACCES with the
 * one-line reason when not. */
static int permit_check_signed(const struct approver *a, json_t *approval, const char *message,
			       const char *origin, struct error *err)
{
	const char *signed_message = jsonutil_str(approval, "message");
	const char *signed_origin = NULL;
	size_t n = 0;
	char fp[20];
	if (signed_message)
		signed_origin = permit_message_origin(signed_message, &n);
	if (signed_message && !signed_origin)
		return error_set(err, EACCES,
				 "the approval names no log origin (an approval through the mirror signs the host's origin: `airlock fleet approve`)");
	if (signed_origin && (n != strlen(origin) || strncmp(signed_origin, origin, n) != 0))
		return error_set(err, EACCES,
				 "the approval is for another host's log (origin %.*s), not this one's (%s)",
				 (int)MIN(n, (size_t)256), signed_origin, origin);
	if (!signed_message || strcmp(signed_message, message) != 0)
		return error_set(err, EACCES,
				 "the approval does not cover this permit as it is now (its id, command, paths, risk or change set differ from what was signed)");
	if (!approver_verify(a, approval))
		return error_set(err, EACCES,
				 "the approval's signature is not by this host's approver (key %s)",
				 approver_fingerprint(a, fp));
	return 0;
}

int permit_approve_signed(struct store *store, const struct rules *rules, uint64_t id,
			  json_t *approval, const char *via, struct permit *ret, struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(approver_release) struct approver a = { 0 };
	cleanup_free char *before = NULL, *message = NULL, *origin = NULL;
	struct permit p;
	char fp[20];

	*ret = (struct permit){ 0 };
	if (!json_is_object(approval))
		return error_set(err, EACCES, "the approval is not an object");
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	if (p.state != PERMIT_DRY_RUN_OK && p.state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		r = permit_refuse_state(&p, "approval", err);
	/* Checked before anything is committed: a signature over another
	 * permit, or over this one as it was, is refused with nothing
	 * recorded. */
	if (r == 0)
		r = approver_load_in_effect(store, &a, err);
	if (r == 0)
		r = permit_own_origin(store, &origin, err);
	if (r == 0)
		r = permit_message_for_origin(&p, origin, &before, err);
	if (r == 0)
		r = permit_check_signed(&a, approval, before, origin, err);
	/* Then as permit_approve(): the workspace as the dry run left it, and
	 * the message again (a risk risen since is not what was signed). */
	if (r == 0)
		r = permit_verify_current(store, rules, &p, "approve", err);
	if (r == 0)
		r = permit_message_for_origin(&p, origin, &message, err);
	if (r == 0)
		r = permit_check_signed(&a, approval, message, origin, err);
	if (r == 0) {
		p.approval = json_pack("{s:s, s:s, s:s, s:s}", "approver",
				       jsonutil_str(approval, "approver")
					       ? jsonutil_str(approval, "approver")
					       : "?",
				       "public_key", jsonutil_str(approval, "public_key"), "message",
				       message, "signature", jsonutil_str(approval, "signature"));
		json_t *detail =
			json_pack("{s:s, s:s}", "approver", approver_fingerprint(&a, fp), "via", via);
		r = p.approval && detail ? permit_commit_transition(store, &p, PERMIT_APPROVED,
								    "approve", detail, err)
					 : error_set(err, ENOMEM, "out of memory");
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
static bool permit_approval_valid(struct store *store, const struct permit *p, char *why, size_t why_size)
{
	cleanup_with(approver_release) struct approver a = { 0 };
	cleanup_free char *message = NULL, *origin = NULL, *with_origin = NULL;
	struct error err = { 0 };

	if (!p->approval) {
		snprintf(why, why_size,
			 "risk %d needs the approver's signature: airlock permit approve %llu",
			 p->risk, (unsigned long long)p->id);
		return false;
	}
	if (permit_message(p, &message, &err) < 0 || approver_load_in_effect(store, &a, &err) < 0) {
		snprintf(why, why_size, "the approval cannot be checked: %.400s", err.msg);
		return false;
	}
	/* A local approval signs permit_message(); one that came through the
	 * mirror, permit_message_for_origin() with this host's origin. */
	const char *signed_message = jsonutil_str(p->approval, "message");
	bool covers = signed_message && strcmp(signed_message, message) == 0;
	if (!covers && signed_message && permit_message_origin(signed_message, &(size_t){ 0 })) {
		if (permit_own_origin(store, &origin, &err) < 0 ||
		    permit_message_for_origin(p, origin, &with_origin, &err) < 0) {
			snprintf(why, why_size, "the approval cannot be checked: %.400s", err.msg);
			return false;
		}
		covers = strcmp(signed_message, with_origin) == 0;
	}
	if (!covers) {
		snprintf(why, why_size,
			 "the approval does not cover this permit as it is now (its command, paths, risk or change set differ from what was signed)");
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
	       strcmp(jsonutil_str(last, "event") ? jsonutil_str(last, "event") : "",
		      "verify passed") != 0;
}

/* The verify of an applied permit, on a snapshot of the applied tree; the
 * tree rolled back (ROLLED_BACK) when it fails, "verify passed" recorded
 * when it does. */
static int permit_verify_applied(const struct run_context *ctx, struct store *store, struct permit *p,
				 char *const *check, struct permit_exec_result *res, struct error *err)
{
	struct apply_outcome out = { 0 };
	struct run_outcome o = { 0 };
	/* verify runs on a snapshot of the applied tree: it judges, it cannot
	 * change what a rollback must restore. */
	int r = permit_run_dryrun(ctx, store, p, check, false, NULL, &o, err);
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
static int permit_exec_applied(const struct run_context *ctx, struct store *store, struct permit *p,
			       char *const *check, enum dryrun_state dstate,
			       struct permit_exec_result *res, struct error *err)
{
	if (dstate == DRYRUN_STATE_ROLLED_BACK || dstate == DRYRUN_STATE_PENDING) {
		json_t *detail = json_pack("{s:I, s:s}", "dryrun", (json_int_t)p->dryrun_id,
					   "dryrun_state", dryrun_state_name(dstate));
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
		return error_set(err, EPERM,
				 "permit %llu is APPLIED%s: exec is not possible from there",
				 (unsigned long long)p->id, check ? " and verified" : "");
	return permit_verify_applied(ctx, store, p, check, res, err);
}

/* permit_exec() of a permit not yet APPLIED. judged: p's dry run was run
 * and judged by this process, under the lock it still holds, so the checks
 * of permit_verify_current() were made a moment ago on the same change set
 * (apply still checks its digest under the dry run's lock). */
static int permit_exec_apply(const struct run_context *ctx, struct store *store,
			     const struct rules *rules, struct permit *p, char *const *check,
			     bool judged, struct permit_exec_result *res, struct error *err)
{
	struct apply_outcome out = { 0 };
	char why[512];
	enum dryrun_state dstate = DRYRUN_STATE_PENDING;
	int r = 0;

	if (p->state != PERMIT_DRY_RUN_OK && p->state != PERMIT_APPROVED &&
	    p->state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		return permit_refuse_state(p, "exec", err);
	if (!judged)
		r = permit_verify_current(store, rules, p, "exec", err);
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
	 * state, once apply has finished what the crash left (apply_state). A
	 * dry run this process has just made was applied by no exec. */
	if (!judged)
		r = apply_state(store, p->dryrun_id, &dstate, err);
	if (r < 0)
		return r;
	bool recovered = dstate == DRYRUN_STATE_APPLIED;
	if (!recovered) {
		/* The apply's state and APPLIED share one fdatasync, APPLIED's
		 * (store_sync_defer): the state is renamed in before its entry
		 * (its `.prev` kept), and nothing acts on the entry before
		 * APPLIED's sync. A power loss before it loses both, and leaves
		 * what a kill between the journal's `committed` mark and the
		 * state's append leaves: with the mark kept, recovery commits
		 * "applied" again and the next exec records APPLIED ("found
		 * applied"); without it, recovery rolls the apply back (the
		 * workspace was synced first) and the permit is DRY_RUN_OK. A
		 * rollback by another process syncs its journal's
		 * `rolling_back` mark before it undoes anything; gc and discard
		 * sync their own entries, which cover this one, first. The
		 * recovery pass runs first, outside the deferral: what it
		 * commits for other dry runs is durable before this apply
		 * changes the workspace. */
		size_t n_recovered;
		r = apply_recover(store, &n_recovered, err);
		if (r < 0)
			return r;
		store_sync_defer(store);
		r = apply_changes_reviewed(store, p->dryrun_id, APPLY_LEAVE_MARK,
					   p->changeset_sha256, &out, err);
		store_sync_resume(store);
	}
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
				     recovered ? "exec: found applied by an exec that crashed before its commit"
					       : "exec",
				     detail, err);
	json_decref(detail);
	if (r < 0)
		return r;
	/* APPLIED's sync committed the apply's state too: it is no longer
	 * under way. */
	if (!recovered)
		apply_unmark(store, p->dryrun_id);
	if (check && (r = permit_verify_applied(ctx, store, p, check, res, err)) < 0)
		return r;
	return 0;
}

bool permit_exec_dry_runs(const struct permit *p)
{
	return p->state == PERMIT_PROPOSED && p->risk <= 3;
}

static int permit_exec_command(const struct run_context *ctx, struct store *store,
			       const struct rules *rules, uint64_t id, char *const *verify,
			       struct permit *ret, struct permit_exec_result *res, struct error *err)
{
	cleanup_close int lock = -1;
	cleanup_with(permit_release) struct permit p = { 0 };
	enum dryrun_state dstate;

	*ret = (struct permit){ 0 };
	*res = (struct permit_exec_result){ .verify_exit = -1 };
	int r = permit_begin(store, id, &lock, &p, err);
	if (r < 0)
		return r;
	char *const *check = verify && verify[0] ? verify : p.p.verify;
	if (p.state == PERMIT_APPLIED) {
		r = apply_state(store, p.dryrun_id, &dstate, err);
		if (r == 0)
			r = permit_exec_applied(ctx, store, &p, check, dstate, res, err);
	} else if (p.state == PERMIT_PROPOSED) {
		/* One step where three were: a permit of risk 3 or less is
		 * dry-run here first, each transition committed as `permit
		 * dryrun` would; only a DRY_RUN_OK goes on to the apply, whose
		 * risk is checked again there (a tracked file observed asks for
		 * the approver). A risk of 4 known before the dry run keeps its
		 * steps: dryrun, then the approver. */
		if (!permit_exec_dry_runs(&p))
			return error_set(err, EPERM,
					 "permit %llu is PROPOSED at risk %d: exec dry-runs only a permit of risk 3 or less itself; run airlock permit dryrun %llu, then the approver's approve",
					 (unsigned long long)p.id, p.risk, (unsigned long long)p.id);
		r = permit_dryrun_locked(ctx, store, rules, &p, err);
		if (r == 0 && p.state == PERMIT_DRY_RUN_OK)
			r = permit_exec_apply(ctx, store, rules, &p, check, true, res, err);
	} else {
		r = permit_exec_apply(ctx, store, rules, &p, check, false, res, err);
	}
	if (r < 0)
		return r;
	*ret = p;
	p = (struct permit){ 0 };
	return 0;
}

/* Every commit of one exec (the dry run's transitions, the apply's state,
 * APPLIED, a verify's) is appended and synced before the next step acts on
 * it; one checkpoint signs them all at the end, not one each. */
int permit_exec(const struct run_context *ctx, struct store *store, const struct rules *rules,
		uint64_t id, char *const *verify, struct permit *ret,
		struct permit_exec_result *res, struct error *err)
{
	store_checkpoint_defer(store);
	int r = permit_exec_command(ctx, store, rules, id, verify, ret, res, err);
	return permit_flush(store, r, ret, err);
}
