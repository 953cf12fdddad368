/* SPDX-License-Identifier: MIT */
#include "core/snapshot/dryrun.h"

#include <dirent.h>
#include <errno.h>
#include <mntent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/text.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_collect.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/changeset_lost.h"
#include "core/snapshot/linkgroups.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "sandbox/sandbox.h"

int dryrun_check_workspace(const char *workspace, const char *state_dir, struct error *err)
{
	if (state_dir && path_is_under(state_dir, workspace))
		return error_set(err, ELOOP,
				 "the state directory %s is inside the workspace: the snapshot's upper layer would show inside the snapshot; use another --state-dir or --workspace",
				 state_dir);
	FILE *f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return error_set_errno(err, errno, "read /proc/self/mounts");
	struct mntent ent;
	char buf[8192];
	int r = 0;
	while (getmntent_r(f, &ent, buf, sizeof(buf))) {
		if (strcmp(ent.mnt_dir, workspace) != 0 && path_is_under(ent.mnt_dir, workspace)) {
			r = error_set(err, EBUSY,
				      "the workspace has a mount point inside it, %s: the kernel overlay cannot snapshot it (the fuse-overlayfs and copy fallbacks are not built yet); choose a --workspace without mounts inside",
				      ent.mnt_dir);
			break;
		}
	}
	endmntent(f);
	return r;
}

/* The workspace root's mode and carried extended attributes onto the
 * upper's root (the overlay shows the upper's, not the lower's). */
static int dryrun_copy_root(const char *workspace, const char *upper, struct error *err)
{
	cleanup_close int ws = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int up = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_with(json_decrefp) json_t *xattrs = NULL;
	struct stat st;
	size_t i;
	json_t *x;

	if (ws < 0 || up < 0 || fstat(ws, &st) < 0)
		return error_set_errno(err, errno, "read the workspace root %s", workspace);
	/* As root, with every id mapped, the command sees (and may change) the
	 * root's owner, which the change set then carries: first, since a chown
	 * clears what the rest sets. Anyone else's upper is their own, as the
	 * workspace must be, and stays mapped. */
	if (sandbox_can_map_ids() && fchown(up, st.st_uid, st.st_gid) < 0)
		return error_set_errno(err, errno, "give the snapshot root the owner of %s", workspace);
	int r = changeset_read_xattrs(ws, ".", CHANGESET_XATTRS_ALL, &xattrs);
	if (r < 0)
		return error_set_errno(err, -r, "read the extended attributes of %s", workspace);
	/* The ACLs last: setting one sets the mode too (a default ACL is what
	 * the files the command creates at the top inherit). */
	for (int acls = 0; acls < 2; acls++)
		json_array_foreach(xattrs, i, x) {
			size_t n;
			if (changeset_xattr_is_acl(jsonutil_str(x, "name")) != (acls == 1))
				continue;
			cleanup_free char *value = base64_decode(jsonutil_str(x, "base64"), &n);
			if (!value || fsetxattr(up, jsonutil_str(x, "name"), value, n, 0) < 0)
				return error_set_errno(err, value ? errno : ENOMEM,
						       "copy the extended attributes of %s",
						       workspace);
		}
	/* Last: a mode without write access for the owner is no obstacle to
	 * the overlay (its mounter may override it) nor to dryrun_settle(). */
	if (fchmod(up, st.st_mode & 07777) < 0)
		return error_set_errno(err, errno, "set the snapshot root's mode");
	return 0;
}

int dryrun_settle(const char *upper, mode_t *ret_root_mode, struct error *err)
{
	cleanup_close int fd = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	char proc[64];

	if (fd < 0 || fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "stat the snapshot's upper directory %s", upper);
	*ret_root_mode = st.st_mode;
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &nofile); /* else a deep walk fails, and says so */
	}
	/* Only the owner's bits, and only when they are missing: a chmod
	 * rewrites the root's access ACL too (changeset_compute() reads it with
	 * the command's mode back for a moment). */
	if ((st.st_mode & 0700) == 0700)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, (st.st_mode & 07777) | 0700) < 0)
		return error_set_errno(err, errno, "make %s readable", upper);
	return 0;
}

/* dryruns/<id>/permit, holding the permit's id for a reader. What apply
 * refuses by is its existence (apply.c), so it is created in place: a
 * crash leaves it whole, empty or absent, and the directory's fsync before
 * the change set's commit (dryrun_write_changeset()) makes its name
 * durable first. */
static int dryrun_mark_permit(struct store *store, const char *rel, uint64_t permit_id,
			      struct error *err)
{
	char path[STATEPATH_MAX + 16], text[32];
	int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)permit_id);

	snprintf(path, sizeof(path), "%s/" STATEPATH_PERMIT_MARK, rel);
	int fd = openat(store_dir_fd(store), path,
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "mark %s/%s the permit's", store_path(store), rel);
	int r = fd_write_all(fd, text, (size_t)n);
	close(fd);
	return r < 0 ? error_set_errno(err, -r, "mark %s/%s the permit's", store_path(store), rel) : 0;
}

int dryrun_prepare(struct store *store, uint64_t id, uint64_t permit_id, const char *workspace,
		   char **ret_upper, char **ret_work, struct error *err)
{
	cleanup_free char *upper = NULL, *work = NULL;

	if (mkdirat(store_dir_fd(store), STATEPATH_DRYRUNS, 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create %s/" STATEPATH_DRYRUNS, store_path(store));
	struct statepath rel = statepath_dryrun(id);
	if (mkdirat(store_dir_fd(store), rel.s, 0700) < 0)
		return error_set_errno(err, errno, "create %s/%s", store_path(store), rel.s);
	if (permit_id) {
		int r = dryrun_mark_permit(store, rel.s, permit_id, err);
		if (r < 0)
			return r;
	}
	/* The apply's journal, empty (no apply yet: journal_read() takes it
	 * as none): the directory's fsync before the change set's commit
	 * (dryrun_write_changeset()) makes its name durable, so an apply syncs its bytes alone
	 * (journal_write()). */
	char journal[STATEPATH_MAX + 16];
	snprintf(journal, sizeof(journal), "%s/" STATEPATH_JOURNAL, rel.s);
	int jfd = openat(store_dir_fd(store), journal,
			 O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (jfd < 0)
		return error_set_errno(err, errno, "create %s/%s", store_path(store), journal);
	close(jfd);
	if (asprintf(&upper, "%s/%s/" STATEPATH_UPPER, store_path(store), rel.s) < 0 ||
	    asprintf(&work, "%s/%s/" STATEPATH_WORK, store_path(store), rel.s) < 0)
		return error_set(err, ENOMEM, "out of memory");
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0)
		return error_set_errno(err, errno, "create the snapshot directories in %s/%s",
				       store_path(store), rel.s);
	/* The overlay needs absolute paths that the init process resolves
	 * before anything is mounted over them. */
	cleanup_free char *real_upper = realpath(upper, NULL), *real_work = realpath(work, NULL);
	if (!real_upper || !real_work)
		return error_set_errno(err, errno, "resolve %s", upper);
	int r = dryrun_copy_root(workspace, real_upper, err);
	if (r < 0)
		return r;
	*ret_upper = TAKE_PTR(real_upper);
	*ret_work = TAKE_PTR(real_work);
	return 0;
}

/* Code for the host in the snapshot outranks every verdict but a failed
 * command's: apply must not land it. Each file is a problem. */
static int dryrun_judge_host_code(const struct hostsafety_report *hc, enum dryrun_verdict *verdict,
				  json_t *problems)
{
	if (!hc || !hostsafety_report_failed(hc) || *verdict == DRYRUN_VERDICT_DRY_RUN_FAILED)
		return 0;
	*verdict = DRYRUN_VERDICT_HOST_CODE;
	for (size_t i = 0; i < hc->n_items; i++)
		if (json_array_append_new(problems,
					  json_pack("{s:s, s:s}", "host_code", hc->items[i].path, "kind",
						    hostsafety_kind_to_string(hc->items[i].kind))) < 0)
			return -ENOMEM;
	if (hc->incomplete &&
	    json_array_append_new(problems, json_pack("{s:s}", "host_code_unchecked", hc->reason)) < 0)
		return -ENOMEM;
	return 0;
}

/* A copy in the snapshot that lost attributes the real rename keeps
 * (changeset_attrs_lost) makes the change set other than what the command
 * would have done: ATTRS_LOST, never applied. It outranks the verdicts
 * that judge the paths (an --expect clears nothing here), not those that
 * refuse already (a failed command, code for the host, a set-id file). */
static int dryrun_judge_attrs_lost(const struct dryrun_request *req, const struct changeset *cs,
				   enum dryrun_verdict *verdict, json_t *problems, struct error *err)
{
	cleanup_with(json_decrefp) json_t *lost = NULL;

	if (*verdict != DRYRUN_VERDICT_DRY_RUN_OK && *verdict != DRYRUN_VERDICT_UNEXPECTED_PATH &&
	    *verdict != DRYRUN_VERDICT_EXPECTED_PATH_MISSING)
		return 0;
	int r = changeset_attrs_lost(req->upper, req->workspace, cs, &lost, err);
	if (r < 0 || json_array_size(lost) == 0)
		return r;
	*verdict = DRYRUN_VERDICT_ATTRS_LOST;
	if (json_array_clear(problems) < 0 || json_array_extend(problems, lost) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* Whether the workspace's directory rel still shows in the snapshot after
 * the run: the upper holds nothing over it or over a parent (no whiteout,
 * no object of another type, no opaque directory, which is one removed and
 * made again), or holds a directory merged with it. */
static bool dryrun_lower_dir_remains(int upper_fd, int ws_fd, const char *rel)
{
	const char *name;
	struct stat st;
	char prefix[PATH_MAX];
	cleanup_close int parent = fd_open_parent(ws_fd, rel, O_PATH, &name);

	if (parent < 0 || fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return false;
	size_t n = strlen(rel);
	if (n == 0 || n >= sizeof(prefix))
		return false;
	for (size_t end = 0; end <= n; end++) {
		if (rel[end] != '/' && rel[end] != '\0')
			continue;
		memcpy(prefix, rel, end);
		prefix[end] = '\0';
		cleanup_close int up =
			fd_open_beneath(upper_fd, prefix, O_RDONLY | O_NOFOLLOW | O_DIRECTORY);
		if (up == -ENOENT)
			return true; /* nothing in the upper from here down: the lower shows */
		if (up < 0)
			return false; /* a whiteout or another type over it */
		char value[8];
		ssize_t v = fgetxattr(up, "user.overlay.opaque", value, sizeof(value));
		if (v == 1 && value[0] == 'y')
			return false;
	}
	return true;
}

/* A directory of the workspace the command renamed (the trace's
 * SANDBOX_PATH_RENAMED) is a copy in the snapshot (EXDEV; mv copies, then
 * removes the source). Where the source still shows after the run, the
 * removal did not finish (a read-only directory below, a program that does
 * not copy), where the real rename leaves only the new name: the change set
 * is not the real run's. RENAME_INCOMPLETE, never applied, with the rank of
 * ATTRS_LOST, and in place of NO_EFFECT too (the real rename is an effect). The trace does not tell a rename's source from its
 * destination: an existing directory renamed over counts too (a refusal,
 * never a silent difference). */
static int dryrun_judge_rename_incomplete(const struct dryrun_request *req,
					  enum dryrun_verdict *verdict, json_t *problems,
					  struct error *err)
{
	if (!req->n_path_events ||
	    (*verdict != DRYRUN_VERDICT_DRY_RUN_OK && *verdict != DRYRUN_VERDICT_NO_EFFECT &&
	     *verdict != DRYRUN_VERDICT_UNEXPECTED_PATH &&
	     *verdict != DRYRUN_VERDICT_EXPECTED_PATH_MISSING))
		return 0;
	cleanup_close int upper_fd = open(req->upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int ws_fd = open(req->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (upper_fd < 0 || ws_fd < 0)
		return error_set_errno(err, errno, "open the snapshot's layers");
	bool found = false;
	for (size_t i = 0; i < req->n_path_events; i++) {
		const struct sandbox_path_event *e = &req->path_events[i];
		if (!(e->ops & SANDBOX_PATH_RENAMED) ||
		    !dryrun_lower_dir_remains(upper_fd, ws_fd, e->path))
			continue;
		json_t *p = json_object(); /* a name that is not UTF-8 too (changeset_set_bytes) */
		if (!p || json_array_append_new(problems, p) < 0 ||
		    changeset_set_bytes(p, "rename_incomplete", e->path) < 0)
			return error_set(err, ENOMEM, "out of memory");
		found = true;
	}
	if (found)
		*verdict = DRYRUN_VERDICT_RENAME_INCOMPLETE;
	return 0;
}

/* As root: a set-id file of the workspace changed in place (the trace) keeps
 * its bit in root's real run when written (CAP_FSETID), and loses it in
 * the snapshot's copy-up. Where the snapshot still holds a regular file
 * under the name, the change set compares it with the workspace's and
 * marks it refused (changeset.c); where not (removed, or moved away: a
 * copy without the bit), the real run left a set-id file the change set
 * does not show: PRIVILEGED_FILE, with {"setid_written": PATH}. */
static int dryrun_judge_setid_written(const struct dryrun_request *req, enum dryrun_verdict *verdict,
				      json_t *problems, struct error *err)
{
	if (!req->owners || !req->n_path_events)
		return 0;
	cleanup_close int upper_fd = open(req->upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int ws_fd = open(req->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (upper_fd < 0 || ws_fd < 0)
		return error_set_errno(err, errno, "open the snapshot's layers");
	for (size_t i = 0; i < req->n_path_events; i++) {
		const struct sandbox_path_event *e = &req->path_events[i];
		struct stat st;
		if (!(e->ops & SANDBOX_PATH_IN_PLACE) || !*e->path)
			continue;
		int fd = fd_open_beneath(ws_fd, e->path, O_PATH | O_NOFOLLOW);
		bool setid = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			     ((st.st_mode & S_ISUID) ||
			      (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP));
		if (fd >= 0)
			close(fd);
		if (!setid)
			continue;
		fd = fd_open_beneath(upper_fd, e->path, O_PATH | O_NOFOLLOW);
		bool held = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
		if (fd >= 0)
			close(fd);
		if (held)
			continue;
		json_t *p = json_object(); /* a name that is not UTF-8 too (changeset_set_bytes) */
		if (!p || json_array_append_new(problems, p) < 0 ||
		    changeset_set_bytes(p, "setid_written", e->path) < 0)
			return error_set(err, ENOMEM, "out of memory");
		if (*verdict != DRYRUN_VERDICT_DRY_RUN_FAILED && *verdict != DRYRUN_VERDICT_HOST_CODE)
			*verdict = DRYRUN_VERDICT_PRIVILEGED_FILE;
	}
	return 0;
}

/* The change set: the upper read against the workspace, its hard-link
 * groups judged (core/snapshot/linkgroups.h) where the command succeeded:
 * entries rewritten or added where apply reproduces them, problems where
 * it cannot. */
static int dryrun_collect(uint64_t id, const struct dryrun_request *req, struct changeset **ret,
			  json_t **ret_link_problems, struct error *err)
{
	struct linkgroups_trace trace = { .events = req->path_events,
					  .n_events = req->n_path_events,
					  .overflow = req->path_events_overflow,
					  .reads_traced = req->reads_traced };
	struct changeset_collect_request creq = { .upper = req->upper,
						  .workspace = req->workspace,
						  .root_mode = req->root_mode,
						  .owners = req->owners,
						  .trace = req->succeeded ? &trace : NULL,
						  .receipt = id,
						  .scratch_counted = req->scratch_counted,
						  .scratch_entries = req->scratch_entries,
						  .scratch_bytes = req->scratch_bytes };

	return changeset_collect(&creq, ret, ret_link_problems, err);
}

/* A set-id request the filter refused: the real run (the owner's or
 * root's) may have left a set-id object, which the snapshot cannot
 * hold and apply would never install, whatever the command made of the
 * failure or did after (chmod 4755 f; chmod 700 f). It takes the place
 * of every verdict below PRIVILEGED_FILE; the problem is listed
 * whatever the verdict. */
static int dryrun_judge_setid_refused(const struct dryrun_request *req,
				      enum dryrun_verdict *verdict, json_t *problems)
{
	if (!req->setid_refused)
		return 0;
	if (*verdict != DRYRUN_VERDICT_DRY_RUN_FAILED && *verdict != DRYRUN_VERDICT_HOST_CODE)
		*verdict = DRYRUN_VERDICT_PRIVILEGED_FILE;
	const char *name = req->setid_syscall ? req->setid_syscall : "?";
	return json_array_append_new(problems, json_pack("{s:s, s:i}", "refused_setid", name,
							 "count", (int)req->setid_refused)) < 0
		       ? -ENOMEM
		       : 0;
}

/* The change set is what the command did inside; a write it attempted
 * outside is something it meant to do and could not, so applying the
 * rest would not be what the command would have done: OUTSIDE_WRITE,
 * applied only with apply --allow-outside-writes. It takes the place
 * of DRY_RUN_OK only, so every other finding still shows. */
static void dryrun_judge_outside_writes(const struct dryrun_request *req,
					enum dryrun_verdict *verdict, json_t *problems)
{
	size_t attempts = json_array_size(req->outside_writes) + req->outside_writes_dropped;

	if (*verdict != DRYRUN_VERDICT_DRY_RUN_OK || attempts == 0)
		return;
	*verdict = DRYRUN_VERDICT_OUTSIDE_WRITE;
	size_t k;
	json_t *w;
	json_array_foreach(req->outside_writes, k, w)
		json_array_append_new(problems, json_pack("{s:O, s:O}", "outside_write",
							  json_object_get(w, "path"), "syscall",
							  json_object_get(w, "syscall")));
	if (req->outside_writes_dropped)
		json_array_append_new(problems, json_pack("{s:s, s:i}", "outside_write", "...",
							  "dropped", (int)req->outside_writes_dropped));
}

/* Something root's real run would have done and the quarantine could
 * not: the change set is not that run's, whatever the command made of
 * the failure. It outranks the verdicts that would let it be applied
 * or read as the whole story; a failed command, host code and a
 * privileged file keep their place. */
static void dryrun_judge_needs_privilege(const struct dryrun_request *req,
					 enum dryrun_verdict *verdict, json_t *problems)
{
	const struct {
		const char *what;
		unsigned count;
	} needs[] = { { "device_node", req->device_nodes }, { "xattr", req->privileged_xattrs } };

	for (size_t k = 0; k < ARRAY_SIZE(needs); k++) {
		if (!needs[k].count)
			continue;
		if (*verdict != DRYRUN_VERDICT_DRY_RUN_FAILED &&
		    *verdict != DRYRUN_VERDICT_HOST_CODE && *verdict != DRYRUN_VERDICT_PRIVILEGED_FILE)
			*verdict = DRYRUN_VERDICT_NEEDS_PRIVILEGE;
		json_array_append_new(problems, json_pack("{s:s, s:i}", "needs_privilege", needs[k].what,
							  "count", (int)needs[k].count));
	}
}

/* The verdict over the change set and the run's findings, in order of
 * precedence (docs/dryrun.md, "Verdicts"), and the problems behind it. */
static int dryrun_judge(const struct dryrun_request *req, const struct changeset *cs,
			json_t *link_problems, enum dryrun_verdict *ret_verdict,
			json_t **ret_problems, struct error *err)
{
	json_t *problems = NULL;
	enum dryrun_verdict verdict =
		changeset_verdict(cs, req->succeeded, req->expect, req->expect_delete, &problems);
	*ret_problems = problems;
	/* A hard-link group the snapshot cannot reproduce: whatever the
	 * declarations say, applying would not give the real run's tree. */
	if (json_array_size(link_problems) > 0 && verdict != DRYRUN_VERDICT_DRY_RUN_FAILED &&
	    verdict != DRYRUN_VERDICT_PRIVILEGED_FILE && verdict != DRYRUN_VERDICT_NO_EFFECT) {
		verdict = DRYRUN_VERDICT_LINK_GROUP;
		if (json_array_extend(problems, link_problems) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	int r = dryrun_judge_host_code(req->host_code, &verdict, problems);
	if (r < 0)
		return error_set(err, -r, "out of memory");
	r = dryrun_judge_attrs_lost(req, cs, &verdict, problems, err);
	if (r == 0)
		r = dryrun_judge_rename_incomplete(req, &verdict, problems, err);
	if (r == 0)
		r = dryrun_judge_setid_written(req, &verdict, problems, err);
	if (r < 0)
		return r;
	if (dryrun_judge_setid_refused(req, &verdict, problems) < 0)
		return error_set(err, ENOMEM, "out of memory");
	dryrun_judge_outside_writes(req, &verdict, problems);
	dryrun_judge_needs_privilege(req, &verdict, problems);
	*ret_verdict = verdict;
	return 0;
}

/* The whole change set beside the upper, committed (the receipt keeps the
 * first DRYRUN_MAX_IN_RECEIPT); the overlay's work directory removed. */
static int dryrun_write_changeset(struct store *store, uint64_t id, const struct changeset *cs,
				  struct error *err)
{
	struct statepath rel = statepath_dryrun(id);
	cleanup_close int dir_fd =
		openat(store_dir_fd(store), rel.s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open %s/%s", store_path(store), rel.s);
	cleanup_with(json_decrefp) json_t *full = changeset_to_json(cs);
	cleanup_free char *text = full ? jsonutil_dump_line(full) : NULL;
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	char id_text[24];
	struct statepath path = statepath_dryrun_changeset(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	/* The names dryrun_prepare() made (the permit's mark, the empty
	 * journal) durable before the commit: the change set's entry carries
	 * its bytes (store_commit()), and changeset.json, a cache of it, is
	 * written after, unsynced. */
	if (store_durable(store) && fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "sync %s/%s", store_path(store), rel.s);
	int r = store_commit(store, LEDGER_DRYRUN, id_text, path.s, text, strlen(text), false, err);
	if (r < 0)
		return r;
	/* The overlay leaves work/work (and with volatile, work/incompat) mode
	 * 000; nothing in it is needed once the snapshot is gone. */
	(void)remove_tree_at(dir_fd, STATEPATH_WORK);
	return 0;
}

int dryrun_finish(struct store *store, uint64_t id, const struct dryrun_request *req,
		  struct dryrun_summary *ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *link_problems = NULL;

	*ret = (struct dryrun_summary){ .verdict = DRYRUN_VERDICT_DRY_RUN_FAILED,
					.expect = req->expect,
					.expect_delete = req->expect_delete,
					.upper = req->upper,
					.outside_writes = req->outside_writes,
					.outside_writes_dropped = req->outside_writes_dropped,
					.reads_traced = req->reads_traced };
	int r = dryrun_collect(id, req, &ret->cs, &link_problems, err);
	if (r == 0)
		r = dryrun_judge(req, ret->cs, link_problems, &ret->verdict, &ret->problems, err);
	if (r == 0 && req->judged.fn)
		req->judged.fn(req->judged.data, ret->verdict, ret->cs);
	if (r == 0) {
		ret->cs->verdict = ret->verdict;
		r = dryrun_write_changeset(store, id, ret->cs, err);
	}
	if (r < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	return 0;
}

int dryrun_explain_failure(struct dryrun_summary *s, const char *stdout_text, const char *stderr_text)
{
	const char *const streams[] = { stderr_text, stdout_text };

	/* The overlay cannot copy up a file whose owner or group is outside the
	 * quarantine's identity map: the command sees EOVERFLOW where a real run
	 * would have worked. Its message in the output is the evidence. */
	for (size_t i = 0; i < ARRAY_SIZE(streams); i++)
		if (streams[i] && strstr(streams[i], "Value too large for defined data type"))
			return json_array_append_new(s->problems,
						     json_pack("{s:s}", "hint",
							       "the output shows EOVERFLOW: a file owned by a user or group outside the quarantine's identity map cannot be copied into the snapshot; the fuse-overlayfs fallback is not built yet")) <
					       0
				       ? -ENOMEM
				       : 0;
	return 0;
}

/* How many changes of each kind, keyed in the order first met. */
static json_t *dryrun_summary_counts(const struct changeset *cs)
{
	cleanup_with(json_decrefp) json_t *counts = json_object();

	for (size_t i = 0; counts && i < cs->n_entries; i++) {
		const char *kind = changeset_change_name(cs->entries[i].change);
		json_int_t n = json_integer_value(json_object_get(counts, kind));
		if (json_object_set_new(counts, kind, json_integer(n + 1)) < 0)
			return NULL;
	}
	return TAKE_PTR(counts);
}

static json_t *dryrun_summary_patterns(char *const *patterns)
{
	cleanup_with(json_decrefp) json_t *list = json_array();

	for (size_t i = 0; list && patterns && patterns[i]; i++)
		if (json_array_append_new(list, json_string(patterns[i])) < 0)
			return NULL;
	return TAKE_PTR(list);
}

/* The change set's part: what was declared, the counts, the first
 * DRYRUN_MAX_IN_RECEIPT changes, then (below) the problems. */
static int dryrun_summary_changes(const struct dryrun_summary *s, json_t *o)
{
	const struct changeset *cs = s->cs;
	size_t n = cs->n_entries;
	json_t *shown = json_array();

	for (size_t i = 0; shown && i < n && i < DRYRUN_MAX_IN_RECEIPT; i++)
		if (json_array_append_new(shown, changeset_entry_to_json(&cs->entries[i])) < 0) {
			json_decref(shown);
			return -ENOMEM;
		}
	if (json_object_set_new(o, "expect", dryrun_summary_patterns(s->expect)) < 0 ||
	    json_object_set_new(o, "expect_delete", dryrun_summary_patterns(s->expect_delete)) < 0 ||
	    json_object_set_new(o, "counts", dryrun_summary_counts(cs)) < 0 ||
	    json_object_set_new(o, "total", json_integer((json_int_t)n)) < 0 ||
	    json_object_set_new(o, "truncated", json_boolean(n > DRYRUN_MAX_IN_RECEIPT)) < 0 ||
	    json_object_set_new(o, "changes", shown) < 0)
		return -ENOMEM;
	return 0;
}

json_t *dryrun_summary_to_json(const struct dryrun_summary *s)
{
	cleanup_with(json_decrefp) json_t *o = json_pack("{s:s, s:s}", "snapshot", "overlay",
							 "verdict", dryrun_verdict_name(s->verdict));
	if (!o)
		return NULL;
	if (s->cs ? dryrun_summary_changes(s, o) < 0
		  : json_object_set_new(o, "changes", json_null()) < 0)
		return NULL;
	if (json_object_set_new(o, "problems", s->problems ? json_incref(s->problems) : json_array()) < 0)
		return NULL;
	if (s->cs && (json_object_set_new(o, "upper", json_string(s->upper)) < 0 ||
		      json_object_set_new(o, "reads_traced", json_boolean(s->reads_traced)) < 0))
		return NULL;
	if (s->cs && changeset_keys_has(&s->cs->keys, CHANGESET_KEY_SCRATCH) &&
	    json_object_set_new(o, "scratch",
				json_pack("{s:I, s:I}", "entries", (json_int_t)s->cs->scratch_entries,
					  "bytes", (json_int_t)s->cs->scratch_bytes)) < 0)
		return NULL;
	json_t *writes = s->outside_writes ? json_deep_copy(s->outside_writes) : json_array();
	if (json_object_set_new(o, "outside_writes", writes) < 0 ||
	    json_object_set_new(o, "outside_writes_dropped", json_integer(s->outside_writes_dropped)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

void dryrun_summary_release(struct dryrun_summary *s)
{
	changeset_freep(&s->cs);
	json_decref(s->problems);
	s->problems = NULL;
}
