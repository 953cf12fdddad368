/* SPDX-License-Identifier: MIT */
#include "core/hook/installfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/path.h"

#define INSTALLFILE_MAX_SETTINGS (4 << 20)

void installfile_release(struct installfile *f)
{
	free(f->path);
	json_decref(f->settings);
	free(f->text);
	*f = (struct installfile){ 0 };
}

/* The settings document: {} when the file does not exist. */
static int installfile_read(struct installfile *f, struct error *err)
{
	json_error_t jerr;
	int r = file_read_capped(AT_FDCWD, f->path, INSTALLFILE_MAX_SETTINGS, &f->text, &f->n, err);

	if (r == -ENOENT) {
		f->settings = json_object();
		return f->settings ? 0 : error_set(err, ENOMEM, "out of memory");
	}
	if (r < 0)
		return error_prefix(err, "%s", f->path);
	f->settings = json_loadb(f->text, f->n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(f->settings))
		return error_set(err, EINVAL,
				 "%s is not a JSON object (%s, line %d); it was not touched (comments are not read: remove them, or add the hooks by hand)",
				 f->path, f->settings ? "another type" : jerr.text, jerr.line);
	return 0;
}

int installfile_merge(const struct agent_host *host, const struct install_command *cmd,
		      const char *path, struct installfile *ret, struct error *err)
{
	struct error merr = { 0 };

	*ret = (struct installfile){ .path = strdup(path) };
	if (!ret->path)
		return error_set(err, ENOMEM, "out of memory");
	int r = installfile_read(ret, err);
	if (r == 0 && install_merge(ret->settings, host, cmd, &ret->changed, &merr) < 0)
		r = error_set(err, merr.code ? merr.code : EINVAL, "%s: %s; it was not touched",
			      path, merr.msg);
	if (r < 0)
		installfile_release(ret);
	return r;
}

int installfile_hooks_text(const struct agent_host *host, const struct install_command *cmd,
			   char **ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *hooks = install_hooks(host, cmd);
	cleanup_with(json_decrefp) json_t *doc = hooks ? json_pack("{s:O}", "hooks", hooks) : NULL;

	*ret = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	return *ret ? 0 : error_set(err, ENOMEM, "out of memory");
}

/* Replaces path with data (atomically: a new file renamed over it), with
 * the original's mode, or 0600. */
static int installfile_replace(const char *path, const char *data, size_t n, struct error *err)
{
	cleanup_free char *dir = path_dirname(path);
	const char *base = strrchr(path, '/') + 1;
	struct stat st;
	mode_t mode = stat(path, &st) == 0 ? st.st_mode & 07777 : 0600;

	if (!dir)
		return error_set(err, ENOMEM, "out of memory");
	int r = mkdir_parents(dir, 0700);
	if (r < 0)
		return error_set_errno(err, -r, "create %s", dir);
	cleanup_close int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open %s", dir);
	char tmp[NAME_MAX + 1];
	if (snprintf(tmp, sizeof(tmp), ".%.200s.airlock-%d", base, (int)getpid()) >= (int)sizeof(tmp))
		return error_set(err, ENAMETOOLONG, "name too long");
	(void)unlinkat(dir_fd, tmp, 0);
	r = file_write_atomic(dir_fd, tmp, data, n, mode, true, err);
	if (r < 0)
		return r;
	if (renameat(dir_fd, tmp, dir_fd, base) < 0) {
		int e = errno;
		(void)unlinkat(dir_fd, tmp, 0);
		return error_set_errno(err, e, "rename into %s", path);
	}
	return 0;
}

/* PATH.airlock-backup: the file as it was before airlock first changed
 * it; an existing backup is that original and is kept. */
static int installfile_backup(const char *path, const char *text, size_t n, char **ret,
			      struct error *err)
{
	char *backup = NULL;

	if (asprintf(&backup, "%s.airlock-backup", path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = backup;
	cleanup_close int fd =
		open(backup, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : error_set_errno(err, errno, "create %s", backup);
	if (fd_write_all(fd, text, n) < 0 || fsync(fd) < 0)
		return error_set_errno(err, errno, "write %s", backup);
	return 0;
}

int installfile_write(const struct installfile *f, char **ret_backup, struct error *err)
{
	cleanup_free char *out = json_dumps(f->settings, JSON_INDENT(2));

	*ret_backup = NULL;
	if (!out)
		return error_set(err, ENOMEM, "out of memory");
	size_t len = strlen(out);
	out[len] = '\n';
	if ((f->text && installfile_backup(f->path, f->text, f->n, ret_backup, err) < 0) ||
	    installfile_replace(f->path, out, len + 1, err) < 0)
		return error_prefix(err, "%s", f->path);
	return 0;
}
