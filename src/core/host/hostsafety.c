/* SPDX-License-Identifier: MIT */
#include "core/host/hostsafety.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/store/statepath.h"

const char *hostsafety_kind_to_string(enum hostsafety_kind kind)
{
	switch (kind) {
	case HOSTSAFETY_GIT_CONFIG:
		return "git_config";
	case HOSTSAFETY_GIT_HOOK:
		return "git_hook";
	case HOSTSAFETY_GIT_INDIRECTION:
		return "git_indirection";
	case HOSTSAFETY_PROTECTED_PATH:
		return "protected_path";
	case HOSTSAFETY_HOST_CONFIG:
		return "host_config";
	}
	return "unknown";
}

void hostsafety_report_release(struct hostsafety_report *report)
{
	for (size_t i = 0; i < report->n_items; i++) {
		free(report->items[i].path);
		free(report->items[i].moved_to);
	}
	free(report->items);
	*report = (struct hostsafety_report){ 0 };
}

bool hostsafety_report_failed(const struct hostsafety_report *report)
{
	return report->n_items > 0 || report->incomplete;
}

/* ---- the config recogniser --------------------------------------------- */

static bool hostsafety_all(const char *v, size_t n, const char *extra)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr(extra, v[i]))
			return false;
	return true;
}

/* Printable: no control character; bytes of UTF-8 sequences pass. */
static bool hostsafety_printable(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return n > 0;
}

/* A URL git fetches from without running anything of the URL's choosing:
 * no remote helper ("ext::cmd", "fd::"), no option-looking value, no space. */
static bool hostsafety_plain_url(const char *v, size_t n)
{
	if (n == 0 || v[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f)
			return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (v[i] == ':' && v[i + 1] == ':')
			return false;
	return true;
}

static bool hostsafety_key_is(const char *key, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(key, want, n) == 0;
}

/* value is NULL for a bare key (boolean true). */
static bool hostsafety_key_allowed(const char *section, bool has_sub, const char *key, size_t kn,
				   const char *v, size_t vn)
{
	static const char *const core_keys[] = {
		"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
		"precomposeunicode",	   "symlinks"
	};

	if (strcmp(section, "core") == 0 && !has_sub) {
		for (size_t i = 0; i < ARRAY_SIZE(core_keys); i++)
			if (hostsafety_key_is(key, kn, core_keys[i]))
				return !v || hostsafety_all(v, vn, "");
		return false;
	}
	if (strcmp(section, "init") == 0 && !has_sub)
		return hostsafety_key_is(key, kn, "defaultbranch") && v &&
		       hostsafety_all(v, vn, "._/-");
	if (strcmp(section, "branch") == 0 && has_sub)
		return (hostsafety_key_is(key, kn, "remote") || hostsafety_key_is(key, kn, "merge")) &&
		       v && hostsafety_all(v, vn, "._/-");
	if (strcmp(section, "remote") == 0 && has_sub) {
		if (hostsafety_key_is(key, kn, "url"))
			return v && hostsafety_plain_url(v, vn);
		return hostsafety_key_is(key, kn, "fetch") && v && hostsafety_all(v, vn, "._/*+:-");
	}
	if (strcmp(section, "user") == 0 && !has_sub)
		return (hostsafety_key_is(key, kn, "name") || hostsafety_key_is(key, kn, "email")) &&
		       v && hostsafety_printable(v, vn);
	return false;
}

static const char *hostsafety_skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static bool hostsafety_rest_is_comment(const char *p, const char *end)
{
	p = hostsafety_skip_blank(p, end);
	return p == end || *p == '#' || *p == ';';
}

/* "[name]" or "[name "sub"]" with nothing after it but a comment; the
 * section name lower-cased into section. */
static bool hostsafety_section(const char *p, const char *end, char section[static 32], bool *ret_has_sub)
{
	size_t n = 0;

	p++; /* '[' */
	while (p < end && (isalnum((unsigned char)*p) || *p == '-')) {
		if (n == 31)
			return false;
		section[n++] = (char)tolower((unsigned char)*p++);
	}
	section[n] = '\0';
	if (n == 0 || p == end)
		return false;
	*ret_has_sub = false;
	if (*p == ' ' || *p == '\t') {
		p = hostsafety_skip_blank(p, end);
		if (p == end || *p != '"')
			return false;
		p++;
		const char *sub = p;
		while (p < end && *p != '"' && *p != '\\')
			p++;
		if (p == end || *p != '"' || !hostsafety_printable(sub, (size_t)(p - sub)))
			return false;
		p++;
		*ret_has_sub = true;
	}
	if (p == end || *p != ']')
		return false;
	return hostsafety_rest_is_comment(p + 1, end);
}

bool hostsafety_config_is_inert(const char *text, size_t n)
{
	char section[32] = "";
	bool in_section = false, has_sub = false;

	if (n > HOSTSAFETY_CONFIG_MAX_BYTES || memchr(text, '\0', n))
		return false;
	const char *end_all = text + n;
	for (const char *line = text; line < end_all;) {
		const char *eol = memchr(line, '\n', (size_t)(end_all - line));
		const char *end = eol ? eol : end_all;
		const char *p = hostsafety_skip_blank(line, end);
		line = eol ? eol + 1 : end_all;
		if (p == end || *p == '#' || *p == ';')
			continue;
		if (*p == '[') {
			if (!hostsafety_section(p, end, section, &has_sub))
				return false;
			in_section = true;
			continue;
		}
		if (!in_section || !isalpha((unsigned char)*p))
			return false;
		const char *key = p;
		while (p < end && (isalnum((unsigned char)*p) || *p == '-'))
			p++;
		size_t kn = (size_t)(p - key);
		p = hostsafety_skip_blank(p, end);
		const char *v = NULL;
		size_t vn = 0;
		if (p < end && *p == '=') {
			p = hostsafety_skip_blank(p + 1, end);
			v = p;
			while (p < end && *p != '#' && *p != ';') {
				/* Quotes and escapes change what git reads: not plain. */
				if (*p == '"' || *p == '\\')
					return false;
				p++;
			}
			vn = (size_t)(p - v);
			while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
				vn--;
		} else if (!hostsafety_rest_is_comment(p, end)) {
			return false;
		}
		if (!hostsafety_key_allowed(section, has_sub, key, kn, v, vn))
			return false;
	}
	return true;
}

/* ---- the walk ---------------------------------------------------------- */

struct hostsafety_walk {
	const struct hostsafety_request *req;
	struct hostsafety_report *report;
	int64_t since;
	bool stop;
};

static void hostsafety_incomplete(struct hostsafety_walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void hostsafety_incomplete(struct hostsafety_walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->report->incomplete)
		return;
	w->report->incomplete = true;
	va_start(ap, fmt);
	vsnprintf(w->report->reason, sizeof(w->report->reason), fmt, ap);
	va_end(ap);
}

/* Whether the run made or changed the entry: the ctime, which only the
 * kernel sets. In a dry run's upper layer everything is the run's. */
static bool hostsafety_changed(const struct hostsafety_walk *w, const struct stat *st)
{
	if (w->req->since_ns == 0)
		return true;
	int64_t ctime = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
	return ctime >= w->since;
}

/* An overlay whiteout: a deletion, never a hazard. */
static bool hostsafety_is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

static char *hostsafety_join(const char *dir, const char *name)
{
	char *out = NULL;

	if (!*dir)
		return strdup(name);
	return asprintf(&out, "%s/%s", dir, name) < 0 ? NULL : out;
}

static int hostsafety_add(struct hostsafety_walk *w, const char *dir, const char *name,
			  enum hostsafety_kind kind)
{
	struct hostsafety_report *r = w->report;
	cleanup_free char *path = hostsafety_join(dir, name);

	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_items; i++)
		if (strcmp(r->items[i].path, path) == 0)
			return 0;
	if (r->n_items == HOSTSAFETY_MAX_ITEMS) {
		hostsafety_incomplete(w, "more than %d files that would run code on the host",
				      HOSTSAFETY_MAX_ITEMS);
		w->stop = true;
		return 0;
	}
	struct hostsafety_item *items = realloc(r->items, (r->n_items + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	r->items = items;
	items[r->n_items++] = (struct hostsafety_item){ .path = TAKE_PTR(path), .kind = kind };
	return 0;
}

/* dir_fd/name without following it; false when it is not there (or is a
 * whiteout). */
static bool hostsafety_lstat(int dir_fd, const char *name, struct stat *st)
{
	return fstatat(dir_fd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && !hostsafety_is_whiteout(st);
}

static int hostsafety_check_config(struct hostsafety_walk *w, int fd, const char *rel,
				   const char *name, bool fresh)
{
	struct stat st;

	if (!hostsafety_lstat(fd, name, &st) || !(fresh || hostsafety_changed(w, &st)))
		return 0;
	if (S_ISREG(st.st_mode)) {
		cleanup_close int cfd =
			openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		cleanup_free char *text = NULL;
		size_t n = 0;
		struct error ignored = { 0 };
		if (cfd >= 0 &&
		    fd_read_capped(cfd, HOSTSAFETY_CONFIG_MAX_BYTES, &text, &n, &ignored) == 0 &&
		    hostsafety_config_is_inert(text, n))
			return 0;
	}
	return hostsafety_add(w, rel, name, HOSTSAFETY_GIT_CONFIG);
}

static bool hostsafety_is_sample(const char *name)
{
	size_t n = strlen(name);

	return n > 7 && strcmp(name + n - 7, ".sample") == 0;
}

static int hostsafety_check_hooks(struct hostsafety_walk *w, int fd, const char *rel, bool fresh)
{
	struct stat st;

	if (!hostsafety_lstat(fd, "hooks", &st))
		return 0;
	if (!S_ISDIR(st.st_mode))
		return fresh || hostsafety_changed(w, &st)
			       ? hostsafety_add(w, rel, "hooks", HOSTSAFETY_GIT_HOOK)
			       : 0;
	/* A hooks directory the run made or changed: its every hook is suspect,
	 * even one renamed in with an old ctime. */
	bool dir_changed = fresh || hostsafety_changed(w, &st);
	int hfd = openat(fd, "hooks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd < 0) {
		hostsafety_incomplete(w, "cannot read %s/hooks: %s", rel, strerror(errno));
		return 0;
	}
	cleanup_closedir DIR *d = fdopendir(hfd);
	if (!d) {
		close(hfd);
		return -ENOMEM;
	}
	cleanup_free char *hooks_rel = hostsafety_join(rel, "hooks");
	if (!hooks_rel)
		return -ENOMEM;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    hostsafety_is_sample(de->d_name))
			continue;
		struct stat hs, target;
		if (!hostsafety_lstat(hfd, de->d_name, &hs))
			continue;
		/* A link whose target the run changed runs the run's code too;
		 * stat() follows it without opening anything. */
		bool changed = dir_changed || hostsafety_changed(w, &hs) ||
			       (S_ISLNK(hs.st_mode) && fstatat(hfd, de->d_name, &target, 0) == 0 &&
				hostsafety_changed(w, &target));
		if (changed) {
			int r = hostsafety_add(w, hooks_rel, de->d_name, HOSTSAFETY_GIT_HOOK);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Whether the run made this git directory one: it, or what makes it one
 * (HEAD, objects, commondir), has a ctime of the run's. A directory staged
 * in an earlier run (config and hooks, no HEAD) and completed or renamed
 * into place now is caught so. The workspace's own repository, whose
 * config and hooks were mounted read-only, is judged file by file. */
static bool hostsafety_gitdir_fresh(const struct hostsafety_walk *w, int fd, const char *rel)
{
	static const char *const markers[] = { "HEAD", "objects", "commondir" };
	struct stat st;

	for (size_t i = 0; w->req->known_gitdirs && w->req->known_gitdirs[i]; i++)
		if (strcmp(w->req->known_gitdirs[i], rel) == 0)
			return false;
	if (fstat(fd, &st) == 0 && hostsafety_changed(w, &st))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(markers); i++)
		if (hostsafety_lstat(fd, markers[i], &st) && hostsafety_changed(w, &st))
			return true;
	return false;
}

/* What makes git run something, in a git directory. */
static int hostsafety_check_gitdir(struct hostsafety_walk *w, int fd, const char *rel)
{
	static const char *const configs[] = { "config", "config.worktree" };
	static const char *const links[] = { "commondir", "gitdir" };
	bool fresh = hostsafety_gitdir_fresh(w, fd, rel);

	for (size_t i = 0; i < ARRAY_SIZE(configs); i++) {
		int r = hostsafety_check_config(w, fd, rel, configs[i], fresh);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		struct stat st;
		if (hostsafety_lstat(fd, links[i], &st) && (fresh || hostsafety_changed(w, &st))) {
			int r = hostsafety_add(w, rel, links[i], HOSTSAFETY_GIT_INDIRECTION);
			if (r < 0)
				return r;
		}
	}
	return hostsafety_check_hooks(w, fd, rel, fresh);
}

/* In a dry run, the workspace's entry under the same path completes what
 * the upper layer shows. */
static bool hostsafety_lower_has(const struct hostsafety_walk *w, const char *rel, const char *name,
				 bool want_dir)
{
	if (w->req->lower_fd < 0)
		return false;
	cleanup_free char *path = hostsafety_join(rel, name);
	/* O_NOFOLLOW: a final symlink is opened as itself, and counts as a
	 * directory (git only asks that objects/ be searchable). */
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	if (!path)
		return false;
	cleanup_close int fd = (int)syscall(SYS_openat2, w->req->lower_fd, path, &how, sizeof(how));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	return want_dir ? S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) : !S_ISDIR(st.st_mode);
}

static bool hostsafety_in(char *const *paths, const char *rel)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		size_t n = strlen(paths[i]);
		if (strncmp(rel, paths[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
			return true;
	}
	return false;
}

/* Whether rel is one of the protected paths (judged by
 * hostsafety_check_protected) or the sealed ones, or lies below one. */
static bool hostsafety_is_protected(const struct hostsafety_walk *w, const char *rel)
{
	return hostsafety_in(w->req->protected_paths, rel) || hostsafety_in(w->req->sealed_paths, rel);
}

/* What a host reads as its configuration (host_config_names): the entry
 * name in the directory rel ("" the root), by its name, or, for a name
 * with a '/' (.github/hooks), by the end of its path. */
static bool hostsafety_is_host_config(const struct hostsafety_walk *w, const char *rel, const char *name)
{
	for (char *const *n = w->req->host_config_names; n && *n; n++) {
		const char *slash = strrchr(*n, '/');
		if (!slash) {
			if (strcmp(*n, name) == 0)
				return true;
			continue;
		}
		size_t lr = strlen(rel), ld = (size_t)(slash - *n);
		if (strcmp(slash + 1, name) == 0 && lr >= ld &&
		    memcmp(rel + lr - ld, *n, ld) == 0 && (lr == ld || rel[lr - ld - 1] == '/'))
			return true;
	}
	return false;
}

/* An entry of fd named name: when it is a host's configuration outside the
 * protected paths (in_host: fd lies in one), returns 1 after adding it if
 * the run made or changed it, or 2 when it is a directory to walk in_host;
 * 0 when it is none. */
static int hostsafety_check_host_config(struct hostsafety_walk *w, int fd, const char *rel,
					const char *name, bool in_host)
{
	struct stat st;

	if (!in_host && !hostsafety_is_host_config(w, rel, name))
		return 0;
	cleanup_free char *path = hostsafety_join(rel, name);
	if (!path)
		return -ENOMEM;
	if (hostsafety_is_protected(w, path) || !hostsafety_lstat(fd, name, &st))
		return 0;
	if (hostsafety_changed(w, &st)) {
		int r = hostsafety_add(w, rel, name, HOSTSAFETY_HOST_CONFIG);
		return r < 0 ? r : 1;
	}
	return S_ISDIR(st.st_mode) ? 2 : 1;
}

struct hostsafety_dir_scan {
	bool head, objects, commondir; /* what makes it a git directory */
	char **subdirs; /* to walk next */
	bool *subdirs_host; /* each: inside a host's config directory */
	size_t n_subdirs;
};

static int hostsafety_walk_dir(struct hostsafety_walk *w, int fd, const char *rel, const char *base,
			       unsigned depth, bool in_host);

/* hostsafety_walk_dir(): the entries of directory fd (rel) checked, and
 * what a walk below it needs noted in sc. */
static int hostsafety_scan_dir(struct hostsafety_walk *w, int fd, const char *rel, bool in_host,
			       struct hostsafety_dir_scan *sc)
{
	int r = 0;

	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -ENOMEM;
	}
	rewinddir(d); /* the duplicate shares fd's offset, which may be anywhere */
	struct dirent *de;
	while (!w->stop && (de = readdir(d))) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (++w->report->entries > HOSTSAFETY_MAX_ENTRIES) {
			hostsafety_incomplete(w, "the workspace has more than %d entries",
					      HOSTSAFETY_MAX_ENTRIES);
			w->stop = true;
			break;
		}
		unsigned char type = de->d_type;
		struct stat st;
		if (type == DT_UNKNOWN) /* a file system without d_type */
			type = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? DT_UNKNOWN
			       : S_ISDIR(st.st_mode)			       ? DT_DIR
			       : S_ISLNK(st.st_mode)			       ? DT_LNK
									       : DT_REG;
		sc->head |= strcmp(name, "HEAD") == 0 && type != DT_DIR;
		/* git asks only that objects/ be searchable (is_git_directory:
		 * access(X_OK)), so a symlink to a directory will do: count any. */
		sc->objects |= strcmp(name, "objects") == 0 && (type == DT_DIR || type == DT_LNK);
		sc->commondir |= strcmp(name, "commondir") == 0 && type != DT_DIR;
		int host = hostsafety_check_host_config(w, fd, rel, name, in_host);
		if (host < 0) {
			r = host;
			break;
		}
		if (host == 1)
			continue; /* moved aside whole, or unchanged and no directory */
		if (type == DT_DIR) {
			char **grown = realloc(sc->subdirs, (sc->n_subdirs + 1) * sizeof(*grown));
			bool *grown_host =
				grown ? realloc(sc->subdirs_host, (sc->n_subdirs + 1) * sizeof(bool))
				      : NULL;
			char *copy = grown_host ? strdup(name) : NULL;
			if (grown)
				sc->subdirs = grown;
			if (grown_host)
				sc->subdirs_host = grown_host;
			if (!copy) {
				r = -ENOMEM;
				break;
			}
			sc->subdirs_host[sc->n_subdirs] = in_host || host == 2;
			sc->subdirs[sc->n_subdirs++] = copy;
		} else if (strcmp(name, ".git") == 0 && type != DT_CHR) {
			/* A gitfile ("gitdir: ...") or a link: git goes wherever it
			 * says. */
			if (hostsafety_lstat(fd, name, &st) && hostsafety_changed(w, &st))
				r = hostsafety_add(w, rel, name, HOSTSAFETY_GIT_INDIRECTION);
			if (r < 0)
				break;
		}
	}
	closedir(d);
	return r;
}

/* hostsafety_walk_dir(): the walk into sc's subdirectories of fd (rel). */
static int hostsafety_walk_subdirs(struct hostsafety_walk *w, int fd, const char *rel, unsigned depth,
				   bool is_gitdir, const struct hostsafety_dir_scan *sc)
{
	int r = 0;

	for (size_t i = 0; i < sc->n_subdirs && r == 0 && !w->stop; i++) {
		/* A git directory's object store holds no code and is often most
		 * of the tree's entries (a loose object per file once committed);
		 * git never looks for a repository in it. */
		if (is_gitdir && strcmp(sc->subdirs[i], "objects") == 0)
			continue;
		cleanup_free char *sub_rel = hostsafety_join(rel, sc->subdirs[i]);
		if (!sub_rel) {
			r = -ENOMEM;
			break;
		}
		if (depth + 1 > HOSTSAFETY_WALK_MAX_DEPTH) {
			hostsafety_incomplete(w, "%.200s... is nested deeper than %d directories",
					      sub_rel, HOSTSAFETY_WALK_MAX_DEPTH);
			w->stop = true;
			break;
		}
		cleanup_close int sfd =
			openat(fd, sc->subdirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0) {
			if (errno != ENOENT)
				hostsafety_incomplete(w, "cannot read %s: %s", sub_rel,
						      strerror(errno));
			continue;
		}
		r = hostsafety_walk_dir(w, sfd, sub_rel, sc->subdirs[i], depth + 1,
					sc->subdirs_host[i]);
	}
	return r;
}

static int hostsafety_walk_dir(struct hostsafety_walk *w, int fd, const char *rel, const char *base,
			       unsigned depth, bool in_host)
{
	struct hostsafety_dir_scan sc = { 0 };
	bool is_gitdir = false;

	int r = hostsafety_scan_dir(w, fd, rel, in_host, &sc);

	if (r == 0 && !w->stop) {
		if (w->req->lower_fd >= 0) {
			sc.head = sc.head || hostsafety_lower_has(w, rel, "HEAD", false);
			sc.objects = sc.objects || hostsafety_lower_has(w, rel, "objects", true);
			sc.commondir =
				sc.commondir || hostsafety_lower_has(w, rel, "commondir", false);
		}
		/* git's own test (setup.c, is_git_directory) is HEAD, objects
		 * (or a commondir) and refs; refs may come from the commondir, so
		 * it is left out: more directories count, none fewer. */
		is_gitdir = strcmp(base, ".git") == 0 || (sc.head && (sc.objects || sc.commondir));
		if (is_gitdir)
			r = hostsafety_check_gitdir(w, fd, rel);
	}
	if (r == 0)
		r = hostsafety_walk_subdirs(w, fd, rel, depth, is_gitdir, &sc);
	for (size_t i = 0; i < sc.n_subdirs; i++)
		free(sc.subdirs[i]);
	free(sc.subdirs);
	free(sc.subdirs_host);
	return r;
}

/* A protected path the command created: whatever it is, it was meant to be
 * read-only, so it goes. Those inside a .git are judged by the git rules (a
 * `git init` makes .git/config and .git/hooks, and they are inert). */
static int hostsafety_check_protected(struct hostsafety_walk *w, const char *rel)
{
	if (strcmp(rel, ".git") == 0 || strncmp(rel, ".git/", 5) == 0 || strstr(rel, "/.git/") ||
	    (strlen(rel) >= 5 && strcmp(rel + strlen(rel) - 5, "/.git") == 0))
		return 0;
	const char *name;
	cleanup_close int pfd = fd_open_parent(w->req->root_fd, rel, O_PATH, &name);
	struct stat st;
	if (pfd < 0 || !*name || !hostsafety_lstat(pfd, name, &st) || !hostsafety_changed(w, &st))
		return 0;
	return hostsafety_add(w, "", rel, HOSTSAFETY_PROTECTED_PATH);
}

int hostsafety_scan(const struct hostsafety_request *req, struct hostsafety_report *ret,
		    struct error *err)
{
	*ret = (struct hostsafety_report){ 0 };
	struct hostsafety_walk w = {
		.req = req,
		.report = ret,
		.since = req->since_ns,
	};
	int r = 0;
	struct stat root;

	/* Whole-second times (ext3, FAT, some network file systems) round a
	 * change during the run's first seconds down to before its start. */
	if (fstat(req->root_fd, &root) < 0)
		return error_set_errno(err, errno, "looking for code left for the host");
	if (root.st_ctim.tv_nsec == 0 && root.st_mtim.tv_nsec == 0)
		w.since -= HOSTSAFETY_CLOCK_MARGIN_NS;

	for (size_t i = 0; req->protected_paths && req->protected_paths[i] && r == 0; i++)
		r = hostsafety_check_protected(&w, req->protected_paths[i]);
	if (r == 0)
		r = hostsafety_walk_dir(&w, req->root_fd, "", "", 0, false);
	if (r < 0) {
		hostsafety_report_release(ret);
		return error_set(err, -r, "looking for code left for the host: %s", strerror(-r));
	}
	return 0;
}

/* ---- before the run ---------------------------------------------------- */

static int hostsafety_protect_if_exists(int git_fd, const char *git_path, const char *rel,
					size_t *n, char ***paths)
{
	struct stat st;

	if (*n >= HOSTSAFETY_MAX_PROTECTED || fstatat(git_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	char *path = NULL;
	if (asprintf(&path, "%s/%s", git_path, rel) < 0)
		return -ENOMEM;
	(*n)++;
	return strv_consume(paths, path);
}

/* Each <dir>/<entry>/<name> that exists, for the subdirectories of <dir>. */
static int hostsafety_protect_each(int git_fd, const char *git_path, const char *dir,
				   const char *const *names, size_t n_names, size_t *n, char ***paths)
{
	int fd = openat(git_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	cleanup_closedir DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *de;
	while (*n < HOSTSAFETY_MAX_PROTECTED && (de = readdir(d))) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		for (size_t i = 0; i < n_names; i++) {
			char rel[PATH_MAX];
			if (snprintf(rel, sizeof(rel), "%s/%s/%s", dir, de->d_name, names[i]) >=
			    (int)sizeof(rel))
				continue;
			int r = hostsafety_protect_if_exists(git_fd, git_path, rel, n, paths);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int hostsafety_protect_existing(const char *workspace, char ***paths)
{
	static const char *const module_names[] = { "config", "hooks" };
	static const char *const worktree_names[] = { "commondir", "gitdir", "config.worktree" };
	static const char *const own[] = { "commondir", "config.worktree" };
	cleanup_free char *git_path = NULL;
	size_t n = 0;

	if (asprintf(&git_path, "%s/.git", workspace) < 0)
		return -ENOMEM;
	cleanup_close int git_fd = open(git_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (git_fd < 0)
		return 0; /* no repository, or a worktree's .git file: the walk covers it */
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		int r = hostsafety_protect_if_exists(git_fd, git_path, own[i], &n, paths);
		if (r < 0)
			return r;
	}
	int r = hostsafety_protect_each(git_fd, git_path, "modules", module_names,
					ARRAY_SIZE(module_names), &n, paths);
	if (r == 0)
		r = hostsafety_protect_each(git_fd, git_path, "worktrees", worktree_names,
					    ARRAY_SIZE(worktree_names), &n, paths);
	return r;
}

static int hostsafety_known_if(int dir_fd, const char *rel, char ***rels)
{
	struct stat st;

	if (fstatat(dir_fd, "config", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	    fstatat(dir_fd, "hooks", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return strv_push(rels, rel);
}

int hostsafety_known_gitdirs(const char *workspace, char ***rels)
{
	static const char *const parents[] = { "modules", "worktrees" };
	cleanup_free char *git_path = NULL;

	if (asprintf(&git_path, "%s/.git", workspace) < 0)
		return -ENOMEM;
	cleanup_close int git_fd = open(git_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (git_fd < 0)
		return 0;
	int r = hostsafety_known_if(git_fd, ".git", rels);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(parents); i++) {
		int fd = openat(git_fd, parents[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		cleanup_closedir DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -ENOMEM;
		}
		struct dirent *de;
		while (r == 0 && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			cleanup_close int sub =
				openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			cleanup_free char *rel = NULL;
			if (sub < 0)
				continue;
			if (asprintf(&rel, ".git/%s/%s", parents[i], de->d_name) < 0)
				return -ENOMEM;
			r = hostsafety_known_if(sub, rel, rels);
		}
	}
	return r;
}

/* ---- moving aside ------------------------------------------------------ */

/* mkdir -p of rel's directories below dir_fd; returns the last one. */
static int hostsafety_make_parents(int dir_fd, const char *rel, const char **ret_name)
{
	cleanup_free char *copy = strdup(rel);
	if (!copy)
		return -ENOMEM;
	int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	char *p = copy;
	for (char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = -errno;
		close(fd);
		if (next < 0)
			return e;
		fd = next;
	}
	if (fd < 0)
		return -errno;
	*ret_name = rel + (p - copy);
	return fd;
}

static int hostsafety_copy_tree(int from_fd, const char *from, int to_fd, const char *to, unsigned depth)
{
	struct stat st;

	if (depth > HOSTSAFETY_MAX_DEPTH)
		return -ELOOP;
	if (fstatat(from_fd, from, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(from_fd, from, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, to_fd, to) < 0 ? -errno : 0;
	}
	if (S_ISREG(st.st_mode)) {
		cleanup_close int in =
			openat(from_fd, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (in < 0)
			return -errno;
		/* Kept, not kept runnable: nothing in the quarantine executes. */
		cleanup_close int out =
			openat(to_fd, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			return -errno;
		char buf[65536];
		for (;;) {
			ssize_t n = read(in, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				return 0;
			int r = fd_write_all(out, buf, (size_t)n);
			if (r < 0)
				return r;
		}
	}
	if (!S_ISDIR(st.st_mode))
		return 0; /* a device, fifo or socket: nothing to keep */
	if (mkdirat(to_fd, to, 0700) < 0)
		return -errno;
	int sfd = openat(from_fd, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	cleanup_closedir DIR *d = fdopendir(sfd);
	if (!d) {
		close(sfd);
		return -ENOMEM;
	}
	cleanup_close int dfd = openat(to_fd, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int r = hostsafety_copy_tree(sfd, de->d_name, dfd, de->d_name, depth + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Renames (or copies and removes) root_fd/rel to qfd/rel. */
static int hostsafety_move_one(int root_fd, int qfd, const char *rel)
{
	const char *name = NULL, *to_name = NULL;
	/* Readable, not O_PATH: a parent the command made read-only is made
	 * writable for the move (we own what it made), then put back. */
	cleanup_close int from = fd_open_parent(root_fd, rel, O_RDONLY, &name);
	if (from < 0)
		return from;
	cleanup_close int to = hostsafety_make_parents(qfd, rel, &to_name);
	if (to < 0)
		return to;
	struct stat pst;
	bool restore = false;
	if (fstat(from, &pst) == 0 && (pst.st_mode & 0200) == 0 &&
	    fchmod(from, (pst.st_mode & 07777) | 0300) == 0)
		restore = true;
	int r = renameat2(from, name, to, to_name, RENAME_NOREPLACE) < 0 ? -errno : 0;
	if (r == -EXDEV) {
		r = hostsafety_copy_tree(from, name, to, to_name, 0);
		if (r == 0)
			r = remove_tree_at(from, name);
	}
	if (restore)
		(void)fchmod(from, pst.st_mode & 07777);
	return r;
}

static int hostsafety_compare_shortest_first(const void *a, const void *b)
{
	size_t x = strlen(((const struct hostsafety_item *)a)->path);
	size_t y = strlen(((const struct hostsafety_item *)b)->path);

	return (x > y) - (x < y);
}

/* Whether an item moved before this one holds it (a created .airlock
 * holding a nested repository): it went along. */
static bool hostsafety_went_along(const struct hostsafety_report *report, size_t i)
{
	const char *path = report->items[i].path;

	for (size_t j = 0; j < i; j++) {
		const struct hostsafety_item *a = &report->items[j];
		size_t n = strlen(a->path);
		if (a->moved_to && strncmp(a->path, path, n) == 0 && path[n] == '/')
			return true;
	}
	return false;
}

int hostsafety_move_aside(struct store *store, uint64_t id, int root_fd,
			  struct hostsafety_report *report, struct error *err)
{
	if (report->n_items == 0)
		return 0;
	cleanup_close int qfd = -1;
	int r = store_open_quarantine(store, id, &qfd, err);
	if (r < 0)
		return r;
	/* A parent before its children, which go along with it. */
	qsort(report->items, report->n_items, sizeof(report->items[0]),
	      hostsafety_compare_shortest_first);
	for (size_t i = 0; i < report->n_items; i++) {
		struct hostsafety_item *it = &report->items[i];
		r = hostsafety_went_along(report, i) ? 0 : hostsafety_move_one(root_fd, qfd, it->path);
		if (r < 0) {
			it->move_errno = -r;
			continue;
		}
		if (asprintf(&it->moved_to, "%s/%s/%s", store_path(store),
			     statepath_quarantine(id).s, it->path) < 0) {
			it->moved_to = NULL;
			return error_set(err, ENOMEM, "out of memory");
		}
	}
	return 0;
}
