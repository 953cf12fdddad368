/* SPDX-License-Identifier: MIT */
/* The ledger's remotes (mirrors, witnesses): what each holds, and pushing
 * the latest checkpoint to it with the entries and a consistency proof. */
#include "basic/strv.h"
#include "ledger/internal.h"

#define LEDGER_REMOTE_NAME_MAX 64

/* [a-z0-9._-]+, not starting with '.': a file name under remotes/. */
static bool ledger_remote_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > LEDGER_REMOTE_NAME_MAX || name[0] == '.')
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int ledger_add_remote(struct ledger *ledger, const struct ledger_remote_ops *ops, void *ctx,
		      struct error *err)
{
	if (!ops || !ops->push || !ops->name || !ledger_remote_name_ok(ops->name))
		return error_set(err, EINVAL, "a remote has a name ([a-z0-9._-]) and a push");
	for (size_t i = 0; i < ledger->n_remotes; i++)
		if (strcmp(ledger->remotes[i].ops->name, ops->name) == 0)
			return error_set(err, EEXIST, "remote '%s' is registered already", ops->name);
	struct ledger_remote *more =
		reallocarray(ledger->remotes, ledger->n_remotes + 1, sizeof(*more));
	if (!more)
		return error_set(err, ENOMEM, "out of memory");
	ledger->remotes = more;
	ledger->remotes[ledger->n_remotes++] = (struct ledger_remote){ ops, ctx };
	return 0;
}

size_t ledger_n_remotes(const struct ledger *ledger)
{
	return ledger->n_remotes;
}

/* What the ledger signed, copied out of the log under the shared lock so
 * that the remotes are called without it. */
struct ledger_signed {
	struct ledger_checkpoint cp;
	merkle_hash *leaves; /* cp.size of them */
	size_t *offsets; /* of each entry's line in text, and one past the last */
	char *text; /* the lines of the first cp.size entries */
};

static void ledger_signed_release(struct ledger_signed *s)
{
	ledger_checkpoint_release(&s->cp);
	free(s->leaves);
	free(s->offsets);
	free(s->text);
	*s = (struct ledger_signed){ 0 };
}

/* -ENOENT when nothing is signed yet. */
static int ledger_signed_load(struct ledger *ledger, struct ledger_signed *ret, struct error *err)
{
	*ret = (struct ledger_signed){ 0 };
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	if (dir_fd < 0)
		return dir_fd;
	cleanup_close int lock_fd = ledger_lock(dir_fd, LOCK_SH, err);
	if (lock_fd < 0)
		return lock_fd;
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	int r = ledger_log_load(ledger->schema, dir_fd, &l, err);
	if (r < 0)
		return r;
	r = ledger_checkpoint_read(dir_fd, NULL, &ret->cp, err);
	if (r < 0)
		return r;
	uint64_t size = ret->cp.size;
	merkle_hash root;
	if (size > l.n ||
	    (merkle_root(l.leaves, size, root), memcmp(root, ret->cp.root, MERKLE_HASH_BYTES) != 0))
		return error_set(err, EBADMSG,
				 "the log does not hold what its checkpoint signed: tampering (see `airlock ledger verify`)");
	size_t end = size < l.n ? l.offsets[size] : l.good_end;
	ret->text = malloc(end ? end : 1);
	ret->offsets = reallocarray(NULL, size + 1, sizeof(*ret->offsets));
	ret->leaves = reallocarray(NULL, size ? size : 1, sizeof(*ret->leaves));
	if (!ret->text || !ret->offsets || !ret->leaves)
		return error_set(err, ENOMEM, "out of memory");
	if (size) {
		memcpy(ret->text, l.map.data, end);
		memcpy(ret->offsets, l.offsets, size * sizeof(*ret->offsets));
		memcpy(ret->leaves, l.leaves, size * sizeof(*ret->leaves));
	}
	ret->offsets[size] = end;
	return 0;
}

/* remotes/<name>: the size the remote acknowledged, then its cosignature
 * line ("" for none). 0 when the remote was never pushed to. */
static uint64_t ledger_remote_size(int dir_fd, const char *name)
{
	cleanup_free char *text = NULL;
	size_t n;
	struct error ignored;
	uint64_t size = 0;

	if (file_read_capped(dir_fd, name, 4096, &text, &n, &ignored) < 0)
		return 0;
	text[strcspn(text, "\n")] = '\0';
	return parse_u64(text, &size) < 0 ? 0 : size;
}

static int ledger_remote_record(int dir_fd, const char *name, uint64_t size,
				const struct ledger_push_reply *reply, struct error *err)
{
	char tmp[LEDGER_REMOTE_NAME_MAX + 8];
	cleanup_free char *text = NULL;

	if (asprintf(&text, "%llu\n%.*s\n", (unsigned long long)size,
		     (int)strcspn(reply->cosignature, "\n"), reply->cosignature) < 0)
		return error_set(err, ENOMEM, "out of memory");
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	(void)unlinkat(dir_fd, tmp, 0);
	int r = file_write_atomic(dir_fd, tmp, text, strlen(text), 0600, true, err);
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
		r = error_set_errno(err, errno, "record what remote %s holds", name);
	return r;
}

/* One push from old entries; the reply's conflict is the caller's. */
static int ledger_remote_send(const struct ledger_remote *remote, const struct ledger_signed *s,
			      uint64_t old, struct ledger_push_reply *reply, struct error *err)
{
	merkle_hash proof[MERKLE_MAX_PROOF];
	size_t n_proof = 0;
	uint64_t size = s->cp.size;

	if (old > 0 && old < size && merkle_consistency_proof(s->leaves, size, old, proof, &n_proof) < 0)
		return error_set(err, EINVAL, "no consistency proof from %llu to %llu",
				 (unsigned long long)old, (unsigned long long)size);
	struct ledger_push p = {
		.origin = s->cp.origin,
		.old_size = old,
		.new_size = size,
		.checkpoint = s->cp.text,
		.checkpoint_n = strlen(s->cp.text),
		.proof = proof,
		.n_proof = n_proof,
		.entries = s->text + s->offsets[old],
		.entries_n = s->offsets[size] - s->offsets[old],
	};
	*reply = (struct ledger_push_reply){ 0 };
	return remote->ops->push(remote->ctx, &p, reply, err);
}

static int ledger_remote_push(const struct ledger_remote *remote, int dir_fd,
			      const struct ledger_signed *s, struct error *err)
{
	const char *name = remote->ops->name;
	uint64_t old = ledger_remote_size(dir_fd, name), size = s->cp.size;
	struct ledger_push_reply reply;

	if (old == size && faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0; /* it holds this checkpoint already */
	if (old > size)
		return error_set(err, EBADMSG,
				 "remote %s holds %llu entries, more than the ledger's checkpoint (%llu): the ledger was cut or rolled back",
				 name, (unsigned long long)old, (unsigned long long)size);
	int r = ledger_remote_send(remote, s, old, &reply, err);
	/* A remote that holds another size than recorded (a lost state file,
	 * another pusher) says which; once more from there, when the log
	 * extends it. */
	if (r == -EEXIST && reply.remote_size <= size && reply.remote_size != old) {
		old = reply.remote_size;
		error_clear(err);
		r = ledger_remote_send(remote, s, old, &reply, err);
	}
	if (r == -EEXIST)
		return error_set(err, EEXIST,
				 "remote %s holds %llu entries and refuses the ledger's checkpoint of %llu: conflict",
				 name, (unsigned long long)reply.remote_size,
				 (unsigned long long)size);
	if (r < 0)
		return error_prefix(err, "remote %s", name);
	return ledger_remote_record(dir_fd, name, size, &reply, err);
}

int ledger_push(struct ledger *ledger, struct error *err)
{
	if (ledger->n_remotes == 0)
		return 0;
	struct ledger_signed s;
	int r = ledger_signed_load(ledger, &s, err);
	if (r == -ENOENT) {
		error_clear(err);
		ledger_signed_release(&s);
		return 0; /* nothing signed yet */
	}
	if (r < 0) {
		ledger_signed_release(&s);
		return error_prefix(err, "ledger push");
	}
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	if (dir_fd >= 0 && mkdirat(dir_fd, "remotes", 0700) < 0 && errno != EEXIST)
		r = error_set_errno(err, errno, "create the ledger's remotes/");
	cleanup_close int rfd =
		dir_fd >= 0 && r == 0
			? openat(dir_fd, "remotes", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
			: -1;
	if (r == 0 && rfd < 0)
		r = dir_fd < 0 ? dir_fd : error_set_errno(err, errno, "open the ledger's remotes/");
	/* One pusher at a time: what a remote holds is read, then recorded. */
	cleanup_close int lock_fd = r == 0 ? ledger_lock(rfd, LOCK_EX, err) : -1;
	if (r == 0 && lock_fd < 0)
		r = lock_fd;
	bool ready = r == 0;
	for (size_t i = 0; ready && i < ledger->n_remotes; i++) {
		struct error one = { 0 };
		int q = ledger_remote_push(&ledger->remotes[i], rfd, &s, &one);
		if (q < 0 && r == 0) {
			r = q;
			*err = one;
		}
	}
	ledger_signed_release(&s);
	return r < 0 ? error_prefix(err, "ledger push") : 0;
}

void ledger_push_quietly(struct ledger *ledger)
{
	struct error ignored = { 0 };

	if (ledger->n_remotes > 0)
		(void)ledger_push(ledger, &ignored);
}

int ledger_remote_cosignatures(struct ledger *ledger, uint64_t size, char ***ret_lines,
			       size_t *ret_n, struct error *err)
{
	char **lines = calloc(1, sizeof(*lines));
	size_t n = 0;

	*ret_lines = NULL;
	*ret_n = 0;
	if (!lines)
		return error_set(err, ENOMEM, "out of memory");
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	cleanup_close int rfd = dir_fd < 0 ? -1
					   : openat(dir_fd, "remotes",
						    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	error_clear(err);
	cleanup_closedir DIR *d = rfd < 0 ? NULL : fdopendir(rfd);
	if (d)
		rfd = -1; /* the DIR's now */
	for (struct dirent *de; d && (de = readdir(d));) {
		cleanup_free char *text = NULL;
		size_t len;
		struct error ignored;
		size_t k = strlen(de->d_name);
		if (de->d_name[0] == '.' || strcmp(de->d_name, "lock") == 0 ||
		    (k > 4 && strcmp(de->d_name + k - 4, ".new") == 0) ||
		    !ledger_remote_name_ok(de->d_name) ||
		    file_read_capped(dirfd(d), de->d_name, 4096, &text, &len, &ignored) < 0)
			continue;
		char *line = strchr(text, '\n');
		uint64_t acked;
		if (!line || line[1] == '\n' || line[1] == '\0')
			continue;
		*line++ = '\0';
		if (parse_u64(text, &acked) < 0 || acked != size)
			continue; /* an older checkpoint's */
		line[strcspn(line, "\n")] = '\0';
		char **more = reallocarray(lines, n + 2, sizeof(*lines));
		if (!more || !(more[n] = strdup(line))) {
			if (more)
				lines = more;
			lines[n] = NULL;
			strv_free(lines);
			return error_set(err, ENOMEM, "out of memory");
		}
		lines = more;
		lines[++n] = NULL;
	}
	*ret_lines = lines;
	*ret_n = n;
	return 0;
}
