/* SPDX-License-Identifier: MIT */
/* Properties, on any document:
 *  - reading a receipt back for a re-run (receipt_rerun_from_json, airlock
 *    run --fixes) never crashes, and either fills a re-run with a non-empty
 *    argv and a cwd or fails with a message;
 *  - the receipt reader (receipt_from_json) never crashes and fails with a
 *    message; what it read, written (receipt_to_json) and read again, is
 *    the same receipt, and writes the same document. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/record/receipt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_strv(char *const *a, char *const *b)
{
	for (; a && *a && b && *b; a++, b++)
		if (strcmp(*a, *b) != 0)
			return false;
	return !(a && *a) && !(b && *b);
}

static void check_same_stream(const struct receipt_stream *a, const struct receipt_stream *b)
{
	check(a->text_len == b->text_len && memcmp(a->text, b->text, a->text_len) == 0);
	check(a->bytes == b->bytes && a->head_bytes == b->head_bytes &&
	      a->tail_bytes == b->tail_bytes && a->omitted_bytes == b->omitted_bytes);
	check(same_str(a->sha256, b->sha256) && a->truncated == b->truncated);
	check(a->spilled == b->spilled && a->spill_bytes == b->spill_bytes &&
	      a->spill_truncated == b->spill_truncated && same_str(a->spill_error, b->spill_error));
}

static void check_same_sandbox(const struct receipt_sandbox *a, const struct receipt_sandbox *b)
{
	check(same_str(a->profile, b->profile) && a->enforced == b->enforced);
	check(a->allow_workspace == b->allow_workspace && a->n_denials == b->n_denials &&
	      a->denials_dropped == b->denials_dropped && a->n_socket_denials == b->n_socket_denials &&
	      a->socket_denials_dropped == b->socket_denials_dropped &&
	      same_str(a->killed_by, b->killed_by) && a->memory_limit_hit == b->memory_limit_hit &&
	      a->pids_limit_hit == b->pids_limit_hit);
	for (size_t i = 0; i < a->n_denials; i++)
		check(same_str(a->denials[i].syscall, b->denials[i].syscall) &&
		      a->denials[i].nr == b->denials[i].nr &&
		      a->denials[i].count == b->denials[i].count);
	for (size_t i = 0; i < a->n_socket_denials; i++)
		check(same_str(a->socket_denials[i].path, b->socket_denials[i].path) &&
		      a->socket_denials[i].count == b->socket_denials[i].count);
	if (!a->enforced)
		return;
	check(a->share_net == b->share_net && same_str(a->workspace, b->workspace) &&
	      same_strv(a->writable, b->writable) && a->tmp_bytes == b->tmp_bytes &&
	      same_strv(a->hidden, b->hidden) && same_strv(a->read_only, b->read_only) &&
	      same_strv(a->exposed, b->exposed) && a->landlock_abi == b->landlock_abi &&
	      a->landlock_scoped == b->landlock_scoped && a->seccomp_rules == b->seccomp_rules &&
	      a->cgroup_memory == b->cgroup_memory && a->cgroup_pids == b->cgroup_pids &&
	      a->connect_mediated == b->connect_mediated && a->n_limits == b->n_limits);
	for (size_t i = 0; i < a->n_limits; i++) {
		const struct receipt_limit *x = &a->limits[i], *y = &b->limits[i];
		check(same_str(x->name, y->name) && x->value == y->value &&
		      same_str(x->mechanism, y->mechanism) && x->scope == y->scope &&
		      x->partial == y->partial && same_str(x->not_counted, y->not_counted));
	}
}

static void check_same(const struct receipt *a, const struct receipt *b)
{
	check(a->id == b->id && same_str(a->source, b->source) && same_strv(a->argv, b->argv));
	check(same_str(a->cwd, b->cwd) && same_str(a->exec_path, b->exec_path) &&
	      same_str(a->job_id, b->job_id) && same_str(a->rationale, b->rationale) &&
	      same_str(a->job_sha256, b->job_sha256));
	check(!a->exec_identity == !b->exec_identity);
	if (a->exec_identity)
		check(memcmp(a->exec_identity, b->exec_identity, sizeof(*a->exec_identity)) == 0);
	check(a->timeout_ms == b->timeout_ms && a->kill_after_ms == b->kill_after_ms &&
	      a->n_expected == b->n_expected &&
	      memcmp(a->expected, b->expected, a->n_expected * sizeof(int)) == 0);
	check(a->status == b->status && a->has_exit_code == b->has_exit_code &&
	      a->exit_code == b->exit_code && a->signal == b->signal &&
	      a->timed_out == b->timed_out && a->match_expected == b->match_expected);
	check(a->started_ns == b->started_ns && a->ended_ns == b->ended_ns &&
	      a->duration_ms == b->duration_ms && same_strv(a->env_keys, b->env_keys));
	check_same_stream(&a->out, &b->out);
	check_same_stream(&a->err, &b->err);
	check(same_str(a->error, b->error) && same_str(a->denied_rule, b->denied_rule) &&
	      same_str(a->denied_value, b->denied_value) &&
	      same_str(a->setup_stage, b->setup_stage) && a->setup_errno == b->setup_errno);
	check(a->descendants_killed == b->descendants_killed && a->max_rss_kib == b->max_rss_kib &&
	      a->user_cpu_ms == b->user_cpu_ms && a->system_cpu_ms == b->system_cpu_ms);
	check(same_str(a->policy_origin, b->policy_origin) &&
	      same_str(a->policy_sha256, b->policy_sha256));
	check_same_sandbox(a->sandbox, b->sandbox);
	check(!a->host_code == !b->host_code);
	if (a->host_code) {
		const struct hostsafety_report *x = a->host_code, *y = b->host_code;
		check(x->n_items == y->n_items && x->entries == y->entries &&
		      x->incomplete == y->incomplete && strcmp(x->reason, y->reason) == 0);
		for (size_t i = 0; i < x->n_items; i++)
			check(same_str(x->items[i].path, y->items[i].path) &&
			      x->items[i].kind == y->items[i].kind &&
			      same_str(x->items[i].moved_to, y->items[i].moved_to) &&
			      x->items[i].move_errno == y->items[i].move_errno);
	}
	check(same_str(a->shell, b->shell) && !a->host == !b->host);
	if (a->host)
		check(same_str(a->host->agent, b->host->agent) &&
		      same_str(a->host->session_id, b->host->session_id) &&
		      same_str(a->host->tool_use_id, b->host->tool_use_id) &&
		      same_str(a->host->event, b->host->event) &&
		      a->host->exit_code_reported == b->host->exit_code_reported &&
		      a->host->verified == b->host->verified &&
		      same_str(a->host->masking, b->host->masking) &&
		      same_str(a->host->exit_status, b->host->exit_status) &&
		      same_str(a->host->unknown_reason, b->host->unknown_reason) &&
		      same_str(a->host->interpretation, b->host->interpretation));
	check(!a->dryrun == !b->dryrun && (!a->dryrun || json_equal(a->dryrun, b->dryrun)));
	check(!a->gate == !b->gate);
	if (a->gate) {
		const struct receipt_gate *x = a->gate, *y = b->gate;
		check(same_str(x->error, y->error));
		if (!x->error) {
			check(same_str(x->scope, y->scope) && x->opened == y->opened &&
			      x->verified == y->verified && x->fixes == y->fixes &&
			      x->n_closes == y->n_closes && same_str(x->note, y->note) &&
			      x->rerun == y->rerun && x->rerun_of == y->rerun_of && x->fix == y->fix);
			for (size_t i = 0; i < x->n_closes; i++)
				check(x->closes[i] == y->closes[i] &&
				      same_str(x->moves[i], y->moves[i]));
		}
	}
}

static void check_round_trip(json_t *doc)
{
	struct receipt_parsed p = { 0 }, q = { 0 };
	struct error err = { 0 };

	if (receipt_from_json(doc, &p, &err) < 0) {
		check(err.msg[0]);
		return;
	}
	json_t *written = receipt_to_json(&p.receipt);
	check(written);
	struct error again_err = { 0 };
	check(receipt_from_json(written, &q, &again_err) == 0);
	check_same(&p.receipt, &q.receipt);
	json_t *rewritten = receipt_to_json(&q.receipt);
	check(rewritten && json_equal(written, rewritten));
	json_decref(rewritten);
	receipt_parsed_release(&q);
	json_decref(written);
	receipt_parsed_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	struct receipt_rerun rr = { 0 };
	struct error err = { 0 };

	if (!doc)
		return 0;
	int r = receipt_rerun_from_json(doc, &rr, &err);
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0 && (!rr.argv || !rr.argv[0] || !rr.cwd || rr.n_expected == 0))
		abort();
	receipt_rerun_release(&rr);
	check_round_trip(doc);
	json_decref(doc);
	return 0;
}
