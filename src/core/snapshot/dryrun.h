/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/host/hostsafety.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"

/* Dry runs (docs/dryrun.md): the run's workspace is an overlay whose upper
 * layer lives in the state directory, dryruns/<id>/upper, so the command
 * changes nothing real; afterwards the upper is read into a change set
 * (core/snapshot/changeset.h) and judged against the declared paths. The upper is
 * kept: it is what a later apply puts into the real tree. */

#define DRYRUN_MAX_IN_RECEIPT 1000 /* changes embedded; the rest are in changeset.json */

/* Refuses a workspace the kernel overlay cannot snapshot: a mount point
 * strictly inside it (the overlay would not see it, and the kernel refuses
 * to clone a lower with locked submounts; -EBUSY names the first one), or
 * one that holds the state directory, where the snapshot's upper layer
 * would show inside its own lower (-ELOOP). */
int dryrun_check_workspace(const char *workspace, const char *state_dir, struct error *err);

/* Creates dryruns/<id>/{upper,work}; returns their absolute paths. The
 * upper's root is the snapshot's root: it gets the workspace root's mode
 * and extended attributes, so the command sees the root as it is. With
 * permit_id (not 0) the dry run is that permit's: dryruns/<id>/permit (its
 * id) is made first, before the command runs and so before the change set
 * is committed, and plain `airlock apply` refuses the dry run from the
 * moment it exists (a mark made after the commit left a window in which
 * it applied a change its permit had not judged). */
int dryrun_prepare(struct store *store, uint64_t id, uint64_t permit_id, const char *workspace,
		   char **ret_upper, char **ret_work, struct error *err);

/* After the command, before the upper is read: records the mode the
 * command left on the workspace root (the upper's root) in *ret_root_mode,
 * then gives the upper's root's owner rwx when it lacks any of them (and
 * changes nothing else), so airlock reads it and apply moves out of it
 * whatever mode the command gave the root (chmod 000 .). Raises
 * this process's soft RLIMIT_NOFILE to the hard one: the walks of the
 * upper hold descriptors per level (CHANGESET_MAX_DEPTH). */
int dryrun_settle(const char *upper, mode_t *ret_root_mode, struct error *err);

/* Called by dryrun_finish() once the change set is read and judged, before
 * it is written (its file and directory synced) and before the receipt that
 * carries the summary is committed: a caller starts there what it will
 * need beside those syncs (a permit's `git ls-files`, core/permit/risk.h).
 * Every process of the quarantine is gone by then, reaped by the
 * supervisor, which reaps and kills nothing more. cs is borrowed for the
 * call; the hook may do nothing, and what it starts is the caller's to end
 * on every path, dryrun_finish() failing after it included. */
struct dryrun_judged_hook {
	void (*fn)(void *data, enum dryrun_verdict verdict, const struct changeset *cs);
	void *data;
};

struct dryrun_request {
	const char *upper, *work, *workspace;
	mode_t root_mode; /* dryrun_settle(); 0: read the upper's root */
	bool succeeded; /* the command exited as expected */
	char *const *expect, *const *expect_delete;
	/* What in the upper would run code on the host (core/host/hostsafety.h);
	 * NULL: not checked. Anything found makes the verdict HOST_CODE. */
	const struct hostsafety_report *host_code;
	/* The writes the command attempted outside the workspace (refused by
	 * the kernel): [{path, syscall, count}], and how many were not listed. */
	json_t *outside_writes;
	unsigned outside_writes_dropped;
	/* The supervisor's trace of the command's calls on paths inside the
	 * workspace, for the hard-link groups (core/snapshot/linkgroups.h). */
	const struct sandbox_path_event *path_events;
	size_t n_path_events;
	bool path_events_overflow;
	bool reads_traced; /* struct sandbox_result.reads_traced */
	/* What the command left in the quarantine's private /tmp, a count of
	 * objects and bytes (no names, no contents): recorded as "scratch" in
	 * the change set and the receipt when counted. */
	bool scratch_counted;
	uint64_t scratch_entries, scratch_bytes;
	/* The quarantine mapped every id (a dry run as root): owners in the
	 * upper are the host's, and the change set carries them. */
	bool owners;
	/* Device nodes the command tried to make (the user namespace refuses
	 * them) where root's real run would have: NEEDS_PRIVILEGE. */
	unsigned device_nodes;
	/* trusted.* attributes and file capabilities it tried to set: likewise */
	unsigned privileged_xattrs;
	/* Set-id requests the filter refused (any caller), and the first one's
	 * system call: the real run may have made a set-id object the snapshot
	 * cannot hold, so the dry run is PRIVILEGED_FILE unless it failed or
	 * holds host code. */
	unsigned setid_refused;
	const char *setid_syscall;
	struct dryrun_judged_hook judged; /* {NULL}: none */
};

/* What a dry run found: the receipt's "dryrun" object as a C type, with
 * one writer, dryrun_summary_to_json(). */
struct dryrun_summary {
	enum dryrun_verdict verdict;
	/* The change set (owned); NULL when it was not read: the command did
	 * not run, or the walk failed (changes: null, and no expect, counts,
	 * upper or scratch). */
	struct changeset *cs;
	/* [{...}] in the order found: the verdict's reasons and hints (owned) */
	json_t *problems;
	/* Borrowed from the request (dryrun_request, run_dryrun): they must
	 * outlive the summary's writer. */
	char *const *expect, *const *expect_delete;
	const char *upper;
	/* The writes refused outside the workspace: [{path, syscall, count}]
	 * (NULL: none listed), and how many were not listed. */
	const json_t *outside_writes;
	unsigned outside_writes_dropped;
	/* The trace saw the opens that only read (docs/sandbox.md, "Read
	 * tracing"): the receipt's reads_traced, written with the change set */
	bool reads_traced;
};

/* Reads the change set, writes dryruns/<id>/changeset.json, removes the
 * overlay's work directory, and fills *ret (released by
 * dryrun_summary_release() also on failure) with what was found. */
int dryrun_finish(struct store *store, uint64_t id, const struct dryrun_request *req,
		  struct dryrun_summary *ret, struct error *err);

/* After a failed dry run: adds to the summary's problems what the command's
 * output (its stdout and stderr) says about the snapshot itself, such as
 * EOVERFLOW from a file whose owner is outside the identity map. */
int dryrun_explain_failure(struct dryrun_summary *s, const char *stdout_text, const char *stderr_text);

/* The receipt's "dryrun" object; NULL when out of memory. */
json_t *dryrun_summary_to_json(const struct dryrun_summary *s);
void dryrun_summary_release(struct dryrun_summary *s);
