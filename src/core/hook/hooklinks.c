/* SPDX-License-Identifier: MIT */
#include "core/hook/hooklinks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "basic/path.h"
#include "basic/strv.h"

const char *const hooklinks_pruned[] = { "node_modules", ".git", "bower_components",
					 ".svn",	 ".hg",	 NULL };

void hooklinks_release(struct hooklinks *w)
{
	free(w->seen);
	w->seen = NULL;
	w->n_seen = w->cap_seen = 0;
}

/* Whether the directory open at fd was a walk's start before (1), by a walk
 * that pruned no more than one with prune does; records it when not (0).
 * -ENOMEM, -errno of fstat(). */
static int hooklinks_seen(struct hooklinks *w, int fd, bool prune)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return -errno;
	for (size_t i = 0; i < w->n_seen; i++) {
		struct hooklinks_seen *e = &w->seen[i];
		if (e->dev != sb.st_dev || e->ino != sb.st_ino)
			continue;
		if (!e->pruned || prune)
			return 1;
		e->pruned = false; /* what it skipped is looked at now */
		return 0;
	}
	if (w->n_seen == w->cap_seen) {
		size_t cap = w->cap_seen ? 2 * w->cap_seen : 16;
		struct hooklinks_seen *grown = realloc(w->seen, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		w->seen = grown;
		w->cap_seen = cap;
	}
	w->seen[w->n_seen++] =
		(struct hooklinks_seen){ .dev = sb.st_dev, .ino = sb.st_ino, .pruned = prune };
	return 0;
}

/* A stack of directories still to list (paths, owned). */
struct hooklinks_stack {
	char **dirs;
	size_t n, cap;
};

static int hooklinks_push(struct hooklinks_stack *s, char *dir)
{
	if (!dir)
		return -ENOMEM;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		char **grown = realloc(s->dirs, cap * sizeof(*grown));
		if (!grown) {
			free(dir);
			return -ENOMEM;
		}
		s->dirs = grown;
		s->cap = cap;
	}
	s->dirs[s->n++] = dir;
	return 0;
}

static bool hooklinks_is_pruned(const struct dirread_entry *de)
{
	for (size_t i = 0; hooklinks_pruned[i]; i++)
		if (hooklinks_pruned[i][0] == de->name[0] && strlen(hooklinks_pruned[i]) == de->len &&
		    memcmp(hooklinks_pruned[i], de->name, de->len) == 0)
			return true;
	return false;
}

/* Lists the directory path: its symlinks to *links, its directories onto
 * s (with prune, those hooklinks_pruned names not, where the directory's
 * names are exact: dirread_exact()). start: the walk's
 * first, recorded in w (and not listed when it was a start before). */
static int hooklinks_list(struct hooklinks *w, const char *path, bool start, bool prune,
			  struct hooklinks_stack *s, char ***links)
{
	cleanup_close int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirread dr;
	struct dirread_entry de;
	char buf[8192];
	int exact = -1; /* dirread_exact(fd), asked once a name to prune is met */

	if (fd < 0 && errno == ELOOP && !start)
		return strv_push(links, path); /* a symlink since it was listed */
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP
			       ? 0
			       : -errno;
	if (start) {
		int r = hooklinks_seen(w, fd, prune);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	dirread_init(&dr, fd, buf, sizeof(buf));
	for (;;) {
		int got = dirread_next(&dr, &de);
		if (got <= 0)
			return got;
		if (++w->entries > w->max)
			return -E2BIG;
		unsigned char type = de.type;
		if (type == DT_UNKNOWN) {
			struct stat sb;
			if (fstatat(fd, de.name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno == ENOENT)
					continue; /* gone since it was listed */
				return -errno;
			}
			type = S_ISLNK(sb.st_mode) ? DT_LNK : S_ISDIR(sb.st_mode) ? DT_DIR : DT_REG;
		}
		if (type != DT_LNK && type != DT_DIR)
			continue;
		/* A lookup in a case-folded directory finds "NODE_MODULES" too,
		 * a path the glob's ignore (case-sensitive in a search) lets by. */
		if (type == DT_DIR && prune && hooklinks_is_pruned(&de)) {
			if (exact < 0)
				exact = dirread_exact(fd);
			if (exact)
				continue;
		}
		cleanup_free char *name = strndup(de.name, de.len);
		char *sub = name ? path_join(path, name) : NULL;
		int r = type == DT_DIR ? hooklinks_push(s, sub) : strv_consume(links, sub);
		if (r < 0)
			return r;
	}
}

int hooklinks_walk(struct hooklinks *w, const char *dir, bool prune, char ***links)
{
	struct hooklinks_stack s = { 0 };
	int r = hooklinks_list(w, dir, true, prune, &s, links);

	while (r == 0 && s.n > 0) {
		cleanup_free char *path = s.dirs[--s.n];
		r = hooklinks_list(w, path, false, prune, &s, links);
	}
	while (s.n > 0)
		free(s.dirs[--s.n]);
	free(s.dirs);
	return r;
}
