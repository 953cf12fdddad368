/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "core/hook/install.h"

/* `airlock install` on a host's settings file: read, merged with
 * airlock's hooks (install_merge()), and written back atomically with a
 * backup of the original. The front end prints. */

struct installfile {
	char *path;
	struct json_t *settings; /* the document, merged */
	char *text; /* the file as it was; NULL when it did not exist */
	size_t n;
	bool changed; /* the merge changed it */
};

/* Reads path ({} when it does not exist) and merges the hooks into it. On
 * error (a file that cannot be read, is not a JSON object, or whose "hooks"
 * the host would not read either), the message names path, and the file
 * was not touched. */
int installfile_merge(const struct agent_host *host, const struct install_command *cmd,
		      const char *path, struct installfile *ret, struct error *err);
void installfile_release(struct installfile *f);

/* The hooks alone, as the document {"hooks": ...} indented: what install
 * prints without --write. */
int installfile_hooks_text(const struct agent_host *host, const struct install_command *cmd,
			   char **ret, struct error *err);

/* Replaces the file with the merged document (and a newline), with the
 * original's mode, or 0600; first PATH.airlock-backup: the file as it was
 * before airlock first changed it (an existing backup is that original
 * and is kept). *ret_backup: the backup's path, NULL when there was no
 * file. */
int installfile_write(const struct installfile *f, char **ret_backup, struct error *err);
