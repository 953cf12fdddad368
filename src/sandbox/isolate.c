/* SPDX-License-Identifier: MIT */
/* The quarantine. isolate_plan_prepare() runs in the parent; every other
 * function runs in the init process between clone() and the command's
 * execve(), and makes raw syscalls only. */
#include "sandbox/isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fdpass.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "sandbox/pathcache.h"

#define STAGE "/tmp" /* where the new root is built before pivot_root */

/* ---- parent side ---------------------------------------------------- */

static char *staged_path(const char *host_path)
{
	char *s = NULL;

	if (strcmp(host_path, "/") == 0)
		return strdup(STAGE);
	return asprintf(&s, STAGE "%s", host_path) < 0 ? NULL : s;
}

int sandbox_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, AL_LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

static void isolate_plan_landlock(struct isolate_plan *plan)
{
	int abi = sandbox_landlock_abi();
	uint64_t fs = AL_FS_EXECUTE | AL_FS_WRITE_FILE | AL_FS_READ_FILE | AL_FS_READ_DIR |
		      AL_FS_REMOVE_DIR | AL_FS_REMOVE_FILE | AL_FS_MAKE_CHAR | AL_FS_MAKE_DIR |
		      AL_FS_MAKE_REG | AL_FS_MAKE_SOCK | AL_FS_MAKE_FIFO | AL_FS_MAKE_BLOCK |
		      AL_FS_MAKE_SYM;
	uint64_t dev = AL_FS_READ_FILE | AL_FS_WRITE_FILE | AL_FS_READ_DIR;

	if (abi >= 2)
		fs |= AL_FS_REFER;
	if (abi >= 3) {
		fs |= AL_FS_TRUNCATE;
		dev |= AL_FS_TRUNCATE;
	}
	if (abi >= 5) {
		fs |= AL_FS_IOCTL_DEV;
		dev |= AL_FS_IOCTL_DEV;
	}
	/* Pathname Unix sockets: reachable beneath the workspace and /tmp only
	 * (landlock_write), not on the read-only host, in /dev nor in the
	 * writable directories (isolate_landlock). Older kernels get the
	 * supervisor's mediation instead, and so does a run with a writable
	 * directory below /tmp: Landlock's grant beneath /tmp would cover it,
	 * and a rule can only grant. */
	if (abi >= 9)
		fs |= AL_FS_RESOLVE_UNIX;
	bool writable_in_tmp = false;
	for (size_t i = 0; i < plan->iso->n_writable; i++)
		writable_in_tmp |= path_is_under(plan->iso->writable[i].path, "/tmp");
	plan->mediate_connect = abi < 9 || writable_in_tmp;
	plan->landlock_abi = abi;
	plan->landlock_handled = (struct al_landlock_ruleset_attr){ .handled_access_fs = fs };
	plan->landlock_attr_size = sizeof(uint64_t);
	if (abi >= 4)
		plan->landlock_attr_size = 2 * sizeof(uint64_t);
	if (abi >= 6) {
		/* Abstract Unix sockets and signals stay inside the quarantine. */
		plan->landlock_handled.scoped = AL_SCOPE_ABSTRACT_UNIX_SOCKET | AL_SCOPE_SIGNAL;
		plan->landlock_attr_size = sizeof(struct al_landlock_ruleset_attr);
	}
	plan->landlock_read = AL_FS_EXECUTE | AL_FS_READ_FILE | AL_FS_READ_DIR;
	plan->landlock_write = fs;
	plan->landlock_dev = dev;
}

static int isolate_plan_read_only(struct isolate_plan *plan, const struct sandbox_isolation *iso,
				  struct error *err)
{
	plan->protect.workspace = iso->workspace;
	/* In a snapshot, pins (writable clones of the real tree) would let
	 * writes bypass the overlay: the snapshot gets read-only paths only. */
	plan->protect.no_pins = iso->overlay_upper != NULL;
	for (size_t i = 0; iso->read_only && iso->read_only[i]; i++) {
		int r = protect_plan_add(&plan->protect, iso->read_only[i], err);
		if (r < 0)
			return r;
	}
	protect_plan_finish(&plan->protect);
	for (size_t i = 0; i < plan->protect.n_mounts; i++) {
		plan->staged_protect[i] = staged_path(plan->protect.mounts[i].path);
		if (!plan->staged_protect[i])
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int isolate_plan_masks(struct isolate_plan *plan, const struct sandbox_isolation *iso,
			      struct error *err)
{
	if (iso->n_masks > SANDBOX_MAX_MASKS)
		return error_set(err, E2BIG, "%zu directories to mask; at most %d", iso->n_masks,
				 SANDBOX_MAX_MASKS);
	for (size_t i = 0; i < iso->n_masks; i++) {
		const struct sandbox_mask *m = &iso->masks[i];
		plan->staged_mask[i] = staged_path(m->path);
		if (!plan->staged_mask[i])
			return error_set(err, ENOMEM, "out of memory");
		plan->n_masks = i + 1;
		plan->mask_holds_workspace[i] = path_is_under(iso->workspace, m->path);
		if (plan->mask_holds_workspace[i])
			plan->workspace_needs_mkdir = true;
		if (strv_push(&plan->enforced_hidden, m->path) < 0)
			return error_set(err, ENOMEM, "out of memory");
		for (size_t j = 0; m->expose && m->expose[j]; j++) {
			const char *e = m->expose[j];
			struct stat st;
			if (!path_is_under(e, m->path) || strcmp(e, m->path) == 0)
				return error_set(err, EINVAL, "'%s' is not below the masked '%s'",
						 e, m->path);
			/* core resolved it: a path gone or turned into a link since
			 * shows nothing */
			if (lstat(e, &st) < 0 || S_ISLNK(st.st_mode))
				continue;
			if (plan->n_expose == SANDBOX_MAX_EXPOSE)
				return error_set(err, E2BIG,
						 "more than %d paths to leave visible in masked directories",
						 SANDBOX_MAX_EXPOSE);
			struct isolate_expose *x = &plan->expose[plan->n_expose];
			*x = (struct isolate_expose){ .host = e,
						      .staged = staged_path(e),
						      .is_dir = S_ISDIR(st.st_mode),
						      .mask = i };
			if (!x->staged)
				return error_set(err, ENOMEM, "out of memory");
			plan->n_expose++;
			if (strv_push(&plan->enforced_exposed, e) < 0)
				return error_set(err, ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* Whether path is in a host directory bound into the view: the workspace
 * or a writable directory. Neither a mask, the private /tmp nor the empty
 * /run hides what lies there. */
static bool isolate_is_bound(const struct sandbox_isolation *iso, const char *path)
{
	if (path_is_under(path, iso->workspace))
		return true;
	for (size_t i = 0; i < iso->n_writable; i++)
		if (path_is_under(path, iso->writable[i].path))
			return true;
	return false;
}

/* Whether path already reads empty inside: below a mask, and neither below
 * what the mask leaves visible nor bound (isolate_is_bound). */
static bool isolate_is_masked(const struct isolate_plan *plan, const struct sandbox_isolation *iso,
			      const char *path)
{
	if (isolate_is_bound(iso, path))
		return false;
	for (size_t i = 0; i < iso->n_masks; i++) {
		if (!path_is_under(path, iso->masks[i].path))
			continue;
		for (size_t j = 0; j < plan->n_expose; j++)
			if (plan->expose[j].mask == i && path_is_under(path, plan->expose[j].host))
				return false;
		return true;
	}
	return false;
}

/* What each hide entry resolves to (NULL: it does not exist), and whether
 * that is a directory. */
struct isolate_hide_target {
	char *resolved;
	bool is_dir;
};

static void isolate_hide_targets_free(struct isolate_hide_target *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i].resolved);
	free(t);
}

/* Whether target i lies in another hidden directory (or is one listed
 * before it): the empty view over that directory already hides it, and a
 * mount on it would find no mount point there. */
static bool isolate_hide_covered(const struct isolate_hide_target *t, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++) {
		if (j == i || !t[j].resolved || !t[j].is_dir ||
		    !path_is_under(t[i].resolved, t[j].resolved))
			continue;
		if (strcmp(t[i].resolved, t[j].resolved) != 0 || j < i)
			return true;
	}
	return false;
}

static int isolate_plan_hide(struct isolate_plan *plan, const struct sandbox_isolation *iso,
			     struct error *err)
{
	size_t n = 0;
	int r = 0;

	while (iso->hide && iso->hide[n])
		n++;
	plan->staged_hide = calloc(n + 1, sizeof(char *));
	plan->hide_is_dir = calloc(n + 1, sizeof(bool));
	struct isolate_hide_target *targets = calloc(n + 1, sizeof(*targets));
	if (!plan->staged_hide || !plan->hide_is_dir || !targets) {
		free(targets);
		return error_set(err, ENOMEM, "out of memory");
	}
	/* The kernel mounts on what a path resolves to: hide that, which hides
	 * the link's path with it; a link to a missing target shows nothing.
	 * Resolved in the parent, the staged path of the target is a real path
	 * of the staged tree, not a link that would lead out of it. */
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		targets[i].resolved = pathcache_realpath(iso->hide[i]);
		/* A resolved path has no symlink left: lstat() is stat() here. */
		if (targets[i].resolved && pathcache_lstat(targets[i].resolved, &st) < 0) {
			free(targets[i].resolved);
			targets[i].resolved = NULL;
		}
		targets[i].is_dir = targets[i].resolved && S_ISDIR(st.st_mode);
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *path = iso->hide[i];
		const char *resolved = targets[i].resolved;
		/* The private /tmp and the empty /run already hide what lies
		 * under the host's. */
		bool under_private_tmp = (path_is_under(path, "/tmp") || path_is_under(path, "/run") ||
					  path_is_under(path, "/var/run")) &&
					 !isolate_is_bound(iso, path);
		if (under_private_tmp) {
			if (strv_push(&plan->enforced_hidden, path) < 0)
				r = error_set(err, ENOMEM, "out of memory");
			continue;
		}
		if (!resolved)
			continue;
		bool already = (path_is_under(resolved, "/tmp") || path_is_under(resolved, "/run")) &&
			       !isolate_is_bound(iso, resolved);
		already = already || isolate_is_masked(plan, iso, resolved) ||
			  isolate_hide_covered(targets, n, i);
		if (strv_push(&plan->enforced_hidden, path) < 0 ||
		    (strcmp(resolved, path) != 0 && !strv_contains(plan->enforced_hidden, resolved) &&
		     strv_push(&plan->enforced_hidden, resolved) < 0)) {
			r = error_set(err, ENOMEM, "out of memory");
			continue;
		}
		if (already)
			continue;
		plan->hide_is_dir[plan->n_hide] = targets[i].is_dir;
		plan->staged_hide[plan->n_hide++] = staged_path(resolved);
		if (!plan->staged_hide[plan->n_hide - 1])
			r = error_set(err, ENOMEM, "out of memory");
	}
	isolate_hide_targets_free(targets, n);
	return r;
}

bool sandbox_can_map_ids(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 }, { 0 } };

	if (geteuid() != 0 || syscall(SYS_capget, &header, data) < 0)
		return false;
	uint32_t need = (1U << CAP_SETUID) | (1U << CAP_SETGID);
	return (data[0].effective & need) == need;
}

/* The child's map of every id that this user namespace maps, each to
 * itself: our own map's first column, as "first first count" lines (in the
 * initial namespace, "0 0 4294967295"). NULL when it cannot be read. */
static char *isolate_identity_map(const char *self_map)
{
	/* The kernel allows 340 lines of at most 3 x 10 digits and 3 blanks. */
	enum { LINE_MAX_BYTES = 34, LINES_MAX = 340 };
	cleanup_fclose FILE *f = fopen(self_map, "re");
	cleanup_free char *out = malloc(LINE_MAX_BYTES * LINES_MAX + 1);
	size_t used = 0;
	unsigned long first, outside, count;

	if (!f || !out)
		return NULL;
	out[0] = '\0';
	for (int n = 0; n < LINES_MAX && fscanf(f, "%lu %lu %lu", &first, &outside, &count) == 3; n++)
		used += (size_t)snprintf(out + used, LINE_MAX_BYTES + 1, "%lu %lu %lu\n", first,
					 first, count);
	return used ? TAKE_PTR(out) : NULL;
}

int isolate_write_child_maps(const struct isolate_plan *plan, pid_t pid)
{
	static const char *const files[] = { "setgroups", "uid_map", "gid_map" };
	const char *texts[] = { "deny", plan->parent_uid_map, plan->parent_gid_map };

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
		cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		size_t n = strlen(texts[i]);
		ssize_t w = write(fd, texts[i], n);
		if (w < 0)
			return -errno;
		if ((size_t)w != n)
			return -EIO;
	}
	return 0;
}

bool isolate_reads_scanned(const struct sandbox_isolation *iso)
{
	return iso->enabled && iso->overlay_upper && iso->trace_outside_writes && iso->workspace;
}

int isolate_plan_prepare(const struct sandbox_config *config, struct isolate_plan *plan,
			 enum sandbox_stage *ret_stage, struct error *err)
{
	const struct sandbox_isolation *iso = &config->isolation;

	*plan = (struct isolate_plan){ .iso = iso,
				       .notify_fd = -1,
				       .status_fd = -1,
				       .go_fd = -1,
				       .scan_fd = -1,
				       .supervisor_fds = { -1, -1, -1, -1 } };
	snprintf(plan->uid_map, sizeof(plan->uid_map), "%u %u 1\n", geteuid(), geteuid());
	snprintf(plan->gid_map, sizeof(plan->gid_map), "%u %u 1\n", getegid(), getegid());
	/* Only a dry run as root maps every id (struct
	 * sandbox_isolation.map_ids_through); any other run, and a caller
	 * without the privilege to write such a map, gets its own ids alone. */
	if (iso->map_ids_through && iso->overlay_upper && sandbox_can_map_ids()) {
		plan->parent_uid_map = isolate_identity_map("/proc/self/uid_map");
		plan->parent_gid_map = isolate_identity_map("/proc/self/gid_map");
		plan->parent_maps = plan->parent_uid_map && plan->parent_gid_map;
	}
	snprintf(plan->tmp_options, sizeof(plan->tmp_options), "size=%llu,mode=1777",
		 (unsigned long long)iso->tmp_bytes);

	plan->workspace = iso->workspace;
	plan->staged_workspace = staged_path(iso->workspace);
	if (!plan->staged_workspace)
		return error_set(err, ENOMEM, "out of memory");
	plan->workspace_needs_mkdir =
		path_is_under(iso->workspace, "/tmp") || path_is_under(iso->workspace, "/run");

	*ret_stage = SANDBOX_STAGE_MOUNTS;
	if (iso->n_writable > SANDBOX_MAX_WRITABLE)
		return error_set(err, E2BIG, "%zu writable directories; at most %d",
				 iso->n_writable, SANDBOX_MAX_WRITABLE);
	for (size_t i = 0; i < iso->n_writable; i++) {
		const char *w = iso->writable[i].path;
		if (w[0] != '/' || path_is_under(w, iso->workspace) || path_is_under(iso->workspace, w))
			return error_set(err, EINVAL,
					 "the writable '%s' is not absolute, or overlaps the workspace",
					 w);
		plan->staged_writable[i] = staged_path(w);
		if (!plan->staged_writable[i])
			return error_set(err, ENOMEM, "out of memory");
	}
	int r = isolate_plan_read_only(plan, iso, err);
	if (r == 0)
		r = isolate_plan_masks(plan, iso, err);
	if (r == 0)
		r = isolate_plan_hide(plan, iso, err);
	if (r < 0)
		return r;

	*ret_stage = SANDBOX_STAGE_LANDLOCK;
	isolate_plan_landlock(plan);
	if (plan->landlock_abi < 1)
		return error_set(err, EOPNOTSUPP,
				 "the kernel offers no Landlock ABI; boot with lsm=...,landlock or run with --sandbox=none on a disposable machine");
	*ret_stage = SANDBOX_STAGE_SECCOMP;
	bool writes = iso->trace_outside_writes, offload_off = iso->overlay_upper != NULL;
	r = syscall_filter_build(&plan->filter,
				 syscall_filter_flags(writes, true, plan->mediate_connect, offload_off),
				 err);
	if (r == 0 && isolate_reads_scanned(iso))
		r = syscall_filter_build(&plan->filter_untraced_reads,
					 syscall_filter_flags(writes, false, plan->mediate_connect,
							      offload_off),
					 err);
	plan->scan_wait_ms = ISOLATE_SCAN_WAIT_MS;
#if AIRLOCK_TEST_HOOKS
	/* A test build's wait for the scan's answer, so that a suite on a busy
	 * machine sees the answer the workspace calls for. */
	const char *wait = getenv("AIRLOCK_TEST_READSCAN_WAIT_MS");
	if (wait)
		plan->scan_wait_ms = strtol(wait, NULL, 10);
#endif
	if (r < 0)
		return r;
	return 0;
}

void isolate_plan_release(struct isolate_plan *plan)
{
	for (size_t i = 0; i < plan->protect.n_mounts; i++)
		free(plan->staged_protect[i]);
	protect_plan_release(&plan->protect);
	for (size_t i = 0; i < plan->n_hide; i++)
		free(plan->staged_hide[i]);
	free(plan->staged_hide);
	free(plan->hide_is_dir);
	free(plan->staged_workspace);
	for (size_t i = 0; i < SANDBOX_MAX_WRITABLE; i++)
		free(plan->staged_writable[i]);
	for (size_t i = 0; i < plan->n_masks; i++)
		free(plan->staged_mask[i]);
	for (size_t i = 0; i < plan->n_expose; i++)
		free(plan->expose[i].staged);
	strv_free(plan->enforced_hidden);
	strv_free(plan->enforced_exposed);
	free(plan->parent_uid_map);
	free(plan->parent_gid_map);
	syscall_filter_release(&plan->filter);
	syscall_filter_release(&plan->filter_untraced_reads);
	*plan = (struct isolate_plan){ .notify_fd = -1,
				       .status_fd = -1,
				       .go_fd = -1,
				       .scan_fd = -1,
				       .supervisor_fds = { -1, -1, -1, -1 } };
}

/* ---- child side: raw syscalls only ------------------------------------ */

static bool ok(long r)
{
	return r >= 0;
}

static bool write_file(const char *path, const char *text)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t n = strlen(text);
	long w = syscall(SYS_write, fd, text, n);
	int saved = errno;
	syscall(SYS_close, fd);
	errno = saved;
	return w == (long)n;
}

bool isolate_user_ns(const struct isolate_plan *plan)
{
	if (plan->parent_maps) {
		/* The supervisor writes the maps (isolate_write_child_maps) and
		 * says how it went; EOF means it is gone. */
		int32_t mapped;
		long n = syscall(SYS_read, plan->go_fd, &mapped, sizeof(mapped));
		if (n != (long)sizeof(mapped)) {
			errno = ESRCH;
			return false;
		}
		errno = (int)mapped;
		return mapped == 0;
	}
	return write_file("/proc/self/setgroups", "deny") &&
	       write_file("/proc/self/uid_map", plan->uid_map) &&
	       write_file("/proc/self/gid_map", plan->gid_map);
}

static bool set_attr(int dfd, const char *path, unsigned flags, uint64_t attr)
{
	struct mount_attr a = { .attr_set = attr };

	return ok(syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a)));
}

/* mkdir -p inside the staged tree; path is at most PATH_MAX. */
static bool mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return false;
	}
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char saved = buf[i];
		buf[i] = '\0';
		if (!ok(syscall(SYS_mkdirat, AT_FDCWD, buf, 0755)) && errno != EEXIST)
			return false;
		buf[i] = saved;
	}
	return true;
}

/* A detached copy of the mount tree at path, with attr on every mount. */
static int clone_tree(const char *path, uint64_t attr)
{
	int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path,
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
					AT_SYMLINK_NOFOLLOW);
	if (tree < 0)
		return -1;
	if (!set_attr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attr)) {
		int saved = errno;
		syscall(SYS_close, tree);
		errno = saved;
		return -1;
	}
	return tree;
}

/* The workspace as an overlay: lower the real tree, upper and work the dry
 * run's directories. userxattr: in a user namespace the overlay's own
 * xattrs are user.overlay.*; volatile: no syncs, the upper is read once
 * and thrown away or applied. redirect_dir and metacopy stay off, so the
 * upper can be read without the kernel (core/snapshot/changeset.c). A mount point
 * inside the workspace makes the kernel refuse (EINVAL). */
static int snapshot_tree(const struct isolate_plan *plan, uint64_t attr)
{
	int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	bool made =
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir+", plan->workspace, 0)) &&
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "upperdir",
			   plan->iso->overlay_upper, 0)) &&
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "workdir",
			   plan->iso->overlay_work, 0)) &&
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0)) &&
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0)) &&
		ok(syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0));
	int tree = made ? (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0) : -1;
	int saved = errno;
	syscall(SYS_close, fs);
	if (tree >= 0 && !set_attr(tree, "", AT_EMPTY_PATH, attr)) {
		saved = errno;
		syscall(SYS_close, tree);
		tree = -1;
	}
	errno = saved;
	return tree;
}

static bool attach_tree(int tree, const char *target)
{
	bool done = ok(syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
	int saved = errno;
	syscall(SYS_close, tree);
	errno = saved;
	return done;
}

static bool isolate_dev(void)
{
	static const char *const nodes[][2] = {
		{ "/dev/null", STAGE "/dev/null" },	  { "/dev/zero", STAGE "/dev/zero" },
		{ "/dev/full", STAGE "/dev/full" },	  { "/dev/random", STAGE "/dev/random" },
		{ "/dev/urandom", STAGE "/dev/urandom" }, { "/dev/tty", STAGE "/dev/tty" },
	};
	static const char *const links[][2] = {
		{ "/proc/self/fd", STAGE "/dev/fd" },
		{ "/proc/self/fd/0", STAGE "/dev/stdin" },
		{ "/proc/self/fd/1", STAGE "/dev/stdout" },
		{ "/proc/self/fd/2", STAGE "/dev/stderr" },
		{ "pts/ptmx", STAGE "/dev/ptmx" },
	};

	if (!ok(syscall(SYS_mount, "tmpfs", STAGE "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
			"size=64k,mode=0755")))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		int fd = (int)syscall(SYS_openat, AT_FDCWD, nodes[i][1],
				      O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return false;
		syscall(SYS_close, fd);
		if (!ok(syscall(SYS_mount, nodes[i][0], nodes[i][1], NULL, MS_BIND, NULL)))
			return false;
	}
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (!ok(syscall(SYS_symlinkat, links[i][0], AT_FDCWD, links[i][1])))
			return false;
	if (!ok(syscall(SYS_mkdirat, AT_FDCWD, STAGE "/dev/shm", 01777)) ||
	    !ok(syscall(SYS_mount, "tmpfs", STAGE "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
			"size=16m,mode=1777")) ||
	    !ok(syscall(SYS_mkdirat, AT_FDCWD, STAGE "/dev/pts", 0755)))
		return false;
	/* A private pty instance: the host's terminals are not in it. Not a
	 * security layer, so a kernel that refuses it only loses ptys. */
	(void)syscall(SYS_mount, "devpts", STAGE "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		      "newinstance,ptmxmode=0666,mode=0620");
	return set_attr(AT_FDCWD, STAGE "/dev", 0, MOUNT_ATTR_RDONLY);
}

static bool isolate_proc(void)
{
	static const char *const read_only[] = { STAGE "/proc/sys", STAGE "/proc/sysrq-trigger",
						 STAGE "/proc/irq", STAGE "/proc/bus" };

	if (!ok(syscall(SYS_mount, "proc", STAGE "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			NULL)))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(read_only); i++) {
		if (!ok(syscall(SYS_mount, read_only[i], read_only[i], NULL, MS_BIND | MS_REC, NULL))) {
			if (errno == ENOENT)
				continue;
			return false;
		}
		if (!set_attr(AT_FDCWD, read_only[i], AT_RECURSIVE, MOUNT_ATTR_RDONLY))
			return false;
	}
	return true;
}

/* Whether nothing is at the staged path (followed, as a mount follows it). */
static bool isolate_absent(const char *staged)
{
	struct stat st;

	return !ok(syscall(SYS_newfstatat, AT_FDCWD, staged, &st, 0)) && errno == ENOENT;
}

static bool isolate_hide(const struct isolate_plan *plan)
{
	for (size_t i = 0; i < plan->n_hide; i++) {
		const char *target = plan->staged_hide[i];
		long r = plan->hide_is_dir[i]
				 ? syscall(SYS_mount, "tmpfs", target, "tmpfs",
					   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
					   "size=4k,mode=0755")
				 : syscall(SYS_mount, STAGE "/dev/null", target, NULL, MS_BIND, NULL);
		/* Removed on the host since the plan found it: nothing is left
		 * to hide, as for a path that was absent when the plan looked
		 * (what appears later shows in either case). Any other failure,
		 * or a path that is there, fails the run. */
		if (!ok(r) && errno == ENOENT && isolate_absent(target))
			continue;
		if (!ok(r) ||
		    (!plan->hide_is_dir[i] && !set_attr(AT_FDCWD, target, 0, MOUNT_ATTR_RDONLY)))
			return false;
	}
	return true;
}

/* An empty directory, or an empty file, to mount a host path on. */
static bool isolate_mount_point(const char *staged, bool is_dir)
{
	char parent[4096];
	size_t n = strlen(staged);

	if (is_dir)
		return mkdir_p(staged);
	if (n >= sizeof(parent)) {
		errno = ENAMETOOLONG;
		return false;
	}
	memcpy(parent, staged, n + 1);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	if (!mkdir_p(parent))
		return false;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, staged, O_CREAT | O_WRONLY | O_CLOEXEC, 0444);
	if (fd < 0)
		return false;
	syscall(SYS_close, fd);
	return true;
}

/* An O_PATH descriptor of path, refusing any symlink on the way; with
 * O_NOFOLLOW in flags a symlink as the last component is the link itself (a
 * pin on a link), with O_DIRECTORY it must be a directory. */
static int open_no_symlinks(const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(O_PATH | O_CLOEXEC | flags),
				.resolve = RESOLVE_NO_SYMLINKS };

	return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

/* A detached recursive copy of the tree fd is, with attr; closes fd. */
static int clone_tree_at(int fd, uint64_t attr)
{
	int tree = (int)syscall(SYS_open_tree, fd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree >= 0 && !set_attr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attr)) {
		int saved = errno;
		syscall(SYS_close, tree);
		errno = saved;
		tree = -1;
	}
	int saved = errno;
	syscall(SYS_close, fd);
	errno = saved;
	return tree;
}

/* A detached copy of the writable directory w, with attr: the directory
 * core checked (its device and inode), reached without a symlink. */
static int clone_writable(const struct sandbox_writable *w, uint64_t attr)
{
	int fd = open_no_symlinks(w->path, O_DIRECTORY);
	if (fd < 0)
		return -1;
	struct stat st;
	int bad = 0;
	if (!ok(syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH)))
		bad = errno;
	else if (st.st_dev != w->dev || st.st_ino != w->ino)
		bad = ESTALE;
	if (bad) {
		syscall(SYS_close, fd);
		errno = bad;
		return -1;
	}
	return clone_tree_at(fd, attr);
}

/* A detached copy of a read-only path or pin in the workspace, with attr.
 * The plan found no symlink in its directories (struct protect_mount), and
 * none is followed here: one planted since by a concurrent writer (another
 * run's command) fails the run instead of cloning another tree. */
static int clone_protected(const struct protect_mount *m, uint64_t attr)
{
	int fd = open_no_symlinks(m->path, O_NOFOLLOW);
	return fd < 0 ? -1 : clone_tree_at(fd, attr);
}

/* Attaches tree (closing it) on staged, reached without a symlink: an
 * absolute one planted on the way, or anything renamed in since the plan,
 * would otherwise carry the mount to the host's path, outside the new root.
 * flags as open_no_symlinks()'s; a directory (O_DIRECTORY) is made first. */
static bool attach_no_symlinks(int tree, const char *staged, int flags)
{
	int target = (flags & O_DIRECTORY) && !mkdir_p(staged) ? -1 : open_no_symlinks(staged, flags);
	bool done = target >= 0 && ok(syscall(SYS_move_mount, tree, "", target, "",
					      MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
	int saved = errno;
	syscall(SYS_close, tree);
	if (target >= 0)
		syscall(SYS_close, target);
	errno = saved;
	return done;
}

/* Each mask: an empty tmpfs, the mount point of the workspace (and of the
 * writable directories) when it lies below, the exposed host paths bound read-only, then the tmpfs made
 * read-only. Host paths outside /tmp still resolve here: only /tmp is
 * staged over. */
static bool isolate_masks(const struct isolate_plan *plan)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

	for (size_t i = 0; i < plan->n_masks; i++) {
		const char *target = plan->staged_mask[i];
		if (!ok(syscall(SYS_mount, "tmpfs", target, "tmpfs",
				MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755")))
			return false;
		int fd = (int)syscall(SYS_openat, AT_FDCWD, target, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return false;
		bool done = !plan->mask_holds_workspace[i] || mkdir_p(plan->staged_workspace);
		for (size_t j = 0; done && j < plan->iso->n_writable; j++)
			if (path_is_under(plan->iso->writable[j].path, plan->iso->masks[i].path))
				done = mkdir_p(plan->staged_writable[j]);
		for (size_t j = 0; done && j < plan->n_expose; j++) {
			const struct isolate_expose *x = &plan->expose[j];
			if (x->mask != i)
				continue;
			int tree = isolate_mount_point(x->staged, x->is_dir) ? clone_tree(x->host, ro)
									     : -1;
			done = tree >= 0 && attach_tree(tree, x->staged);
		}
		done = done && set_attr(fd, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY);
		int saved = errno;
		syscall(SYS_close, fd);
		errno = saved;
		if (!done)
			return false;
	}
	return true;
}

bool isolate_mounts(const struct isolate_plan *plan)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	const uint64_t rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

	/* Nothing done here propagates back to the host. */
	if (!ok(syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)))
		return false;
	/* Copy the workspace and the read-only paths as detached trees while
	 * their host paths still resolve and before anything is mounted on
	 * /tmp: staging there would shadow them, or end up inside the copy. */
	int workspace_tree = plan->iso->overlay_upper ? snapshot_tree(plan, rw)
						      : clone_tree(plan->workspace, rw);
	if (workspace_tree < 0)
		return false;
	int protect_trees[PROTECT_MAX_MOUNTS];
	for (size_t i = 0; i < plan->protect.n_mounts; i++) {
		const struct protect_mount *m = &plan->protect.mounts[i];
		protect_trees[i] = clone_protected(m, m->read_only ? ro : rw);
		if (protect_trees[i] < 0)
			return false;
	}
	int writable_trees[SANDBOX_MAX_WRITABLE];
	for (size_t i = 0; i < plan->iso->n_writable; i++) {
		writable_trees[i] = clone_writable(&plan->iso->writable[i], rw);
		if (writable_trees[i] < 0)
			return false;
	}
	/* The host, read-only, as the new root. */
	if (!ok(syscall(SYS_mount, "/", STAGE, NULL, MS_BIND | MS_REC, NULL)) ||
	    !set_attr(AT_FDCWD, STAGE, AT_RECURSIVE, ro))
		return false;
	if (!ok(syscall(SYS_mount, "tmpfs", STAGE "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
			plan->tmp_options)))
		return false;
	if (!isolate_dev() || !isolate_proc())
		return false;
	/* An empty /run, made read-only once a workspace below it is in place. */
	struct stat st;
	int run_fd = -1;
	if (ok(syscall(SYS_newfstatat, AT_FDCWD, STAGE "/run", &st, 0))) {
		if (!ok(syscall(SYS_mount, "tmpfs", STAGE "/run", "tmpfs",
				MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0755")))
			return false;
		/* Held so the attribute reaches this tmpfs even if the workspace
		 * is later mounted over it. */
		run_fd = (int)syscall(SYS_openat, AT_FDCWD, STAGE "/run",
				      O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (run_fd < 0)
			return false;
	}
	if (!isolate_masks(plan))
		return false;
	/* The workspace, writable, then what must stay read-only inside it. */
	if (plan->workspace_needs_mkdir && !mkdir_p(plan->staged_workspace))
		return false;
	if (!attach_tree(workspace_tree, plan->staged_workspace))
		return false;
	/* Parents first (protect_plan_finish), so no mount hides another. */
	for (size_t i = 0; i < plan->protect.n_mounts; i++)
		if (!attach_no_symlinks(protect_trees[i], plan->staged_protect[i], O_NOFOLLOW))
			return false;
	/* The writable directories (sandbox.writable), neither holding nor
	 * inside the workspace; what is hidden below them is hidden after. */
	for (size_t i = 0; i < plan->iso->n_writable; i++)
		if (!attach_no_symlinks(writable_trees[i], plan->staged_writable[i], O_DIRECTORY))
			return false;
	if (run_fd >= 0) {
		bool done = set_attr(run_fd, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY);
		syscall(SYS_close, run_fd);
		if (!done)
			return false;
	}
	return isolate_hide(plan);
}

bool isolate_pivot(void)
{
	/* pivot_root(".", "."): the old root ends up stacked on the new one and
	 * is then detached, leaving no path back to the host. */
	return ok(syscall(SYS_chdir, STAGE)) && ok(syscall(SYS_pivot_root, ".", ".")) &&
	       ok(syscall(SYS_umount2, ".", MNT_DETACH)) && ok(syscall(SYS_chdir, "/"));
}

/* The allowlist proxy's listening socket in this (private) namespace:
 * [::]:SANDBOX_NET_PROXY_PORT dual-stack, which with only lo is 127.0.0.1
 * and ::1; 127.0.0.1 alone where the kernel has no IPv6. -1 with errno. */
static int isolate_proxy_socket(void)
{
	int fd = (int)syscall(SYS_socket, AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		int off = 0;
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
					   .sin6_port = htons(SANDBOX_NET_PROXY_PORT),
					   .sin6_addr = IN6ADDR_ANY_INIT };
		if (ok(syscall(SYS_setsockopt, fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off))) &&
		    ok(syscall(SYS_bind, fd, &a6, sizeof(a6))) && ok(syscall(SYS_listen, fd, 1024)))
			return fd;
		syscall(SYS_close, fd);
		fd = -1;
	}
	if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL)
		return -1;
	fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = htons(SANDBOX_NET_PROXY_PORT),
				  .sin_addr = { htonl(INADDR_LOOPBACK) } };
	if (ok(syscall(SYS_bind, fd, &a4, sizeof(a4))) && ok(syscall(SYS_listen, fd, 1024)))
		return fd;
	int saved = errno;
	syscall(SYS_close, fd);
	errno = saved;
	return -1;
}

bool isolate_network(const struct isolate_plan *plan, int *ret_proxy_fd)
{
	*ret_proxy_fd = -1;
	if (plan->iso->share_net)
		return true;
	/* A new network namespace has only lo, and it is down. */
	int fd = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct ifreq ifr = { .ifr_name = "lo" };
	bool up = ok(syscall(SYS_ioctl, fd, SIOCGIFFLAGS, &ifr));
	if (up) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		up = ok(syscall(SYS_ioctl, fd, SIOCSIFFLAGS, &ifr));
	}
	int saved = errno;
	syscall(SYS_close, fd);
	errno = saved;
	if (up && plan->iso->net_listener_to > 0) {
		*ret_proxy_fd = isolate_proxy_socket();
		up = *ret_proxy_fd >= 0;
	}
	return up;
}

bool isolate_hostname(const struct isolate_plan *plan)
{
	const char *name = plan->iso->hostname ? plan->iso->hostname : "airlock";

	return ok(syscall(SYS_sethostname, name, strlen(name)));
}

static bool set_caps(uint64_t effective_permitted, uint64_t inheritable)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ (uint32_t)effective_permitted, (uint32_t)effective_permitted, (uint32_t)inheritable },
		{ (uint32_t)(effective_permitted >> 32), (uint32_t)(effective_permitted >> 32),
		  (uint32_t)(inheritable >> 32) },
	};
	return ok(syscall(SYS_capset, &header, data));
}

bool isolate_drop_capabilities(const struct isolate_plan *plan)
{
	/* Lock root out of regaining capabilities across execve(), then empty
	 * every set: bounding, ambient, and effective/permitted/inheritable.
	 * A dry run as root keeps ISOLATE_ROOT_CAPS (capabilities of the
	 * quarantine's user namespace, over the ids it maps): in the bounding
	 * set, and raised ambient, the only way they survive the command's
	 * execve() under SECBIT_NOROOT; no ambient capability can be raised
	 * after that. */
	uint64_t keep = plan->parent_maps ? ISOLATE_ROOT_CAPS : 0;
	unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	for (int cap = 0; cap <= 63; cap++)
		if (!(keep & (1ULL << cap)) &&
		    !ok(syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0)) && errno != EINVAL)
			return false;
	if (!ok(syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)))
		return false;
	if (keep) {
		/* CAP_SETPCAP stays effective until the securebits are set. */
		if (!set_caps(keep | (1ULL << CAP_SETPCAP), keep))
			return false;
		for (int cap = 0; cap <= 63; cap++)
			if ((keep & (1ULL << cap)) &&
			    !ok(syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0)))
				return false;
	}
	if (!ok(syscall(SYS_prctl, PR_SET_SECUREBITS, bits, 0, 0, 0)))
		return false;
	return set_caps(keep, keep);
}

bool isolate_no_new_privs(void)
{
	return ok(syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
}

static bool landlock_allow(int ruleset, const char *path, uint64_t access)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (fd < 0)
		return false;
	struct al_landlock_path_beneath_attr rule = { .allowed_access = access, .parent_fd = fd };
	bool added =
		ok(syscall(__NR_landlock_add_rule, ruleset, AL_LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	int saved = errno;
	syscall(SYS_close, fd);
	errno = saved;
	return added;
}

bool isolate_landlock(const struct isolate_plan *plan)
{
	/* The second wall, under the mount view: everything readable, only the
	 * workspace, the writable directories, /tmp and the device nodes
	 * writable. */
	int ruleset = (int)syscall(__NR_landlock_create_ruleset, &plan->landlock_handled,
				   plan->landlock_attr_size, 0);
	if (ruleset < 0)
		return false;
	bool done = landlock_allow(ruleset, "/", plan->landlock_read) &&
		    landlock_allow(ruleset, plan->iso->workspace, plan->landlock_write) &&
		    landlock_allow(ruleset, "/tmp", plan->landlock_write) &&
		    landlock_allow(ruleset, "/dev", plan->landlock_dev);
	for (size_t i = 0; done && i < plan->iso->n_writable; i++)
		done = landlock_allow(ruleset, plan->iso->writable[i].path,
				      plan->landlock_write & ~(uint64_t)AL_FS_RESOLVE_UNIX);
	done = done && ok(syscall(__NR_landlock_restrict_self, ruleset, 0));
	int saved = errno;
	syscall(SYS_close, ruleset);
	errno = saved;
	return done;
}

bool isolate_seccomp(const struct isolate_plan *plan, int proxy_fd, bool untraced_reads)
{
	const struct syscall_filter *f = untraced_reads && plan->filter_untraced_reads.len
						 ? &plan->filter_untraced_reads
						 : &plan->filter;
	/* The kernel only reads the program. */
	struct sock_fprog prog = { .len = f->len, .filter = (struct sock_filter *)f->insns };
	int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	bool sent = listener >= 0 && fdpass_send(plan->notify_fd, listener);
	/* The proxy's socket next, in the order the supervisor reads them;
	 * init's copy is closed here, before the command exists (a command
	 * holding it could accept() and pose as the proxy). */
	if (sent && proxy_fd >= 0)
		sent = fdpass_send(plan->notify_fd, proxy_fd);
	int saved = errno;
	if (listener >= 0)
		syscall(SYS_close, listener);
	if (proxy_fd >= 0)
		syscall(SYS_close, proxy_fd);
	errno = saved;
	return sent;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

unsigned isolate_count_processes(void)
{
	char buf[4096];
	unsigned count = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			bool numeric = d->d_name[0] >= '1' && d->d_name[0] <= '9';
			if (numeric && !(d->d_name[0] == '1' && d->d_name[1] == '\0'))
				count++;
			off += d->d_reclen;
		}
	}
	syscall(SYS_close, fd);
	return count;
}

const char *sandbox_syscall_name(const struct sandbox_denial *denial)
{
	return syscall_filter_name(denial->syscall_nr, denial->arch);
}
