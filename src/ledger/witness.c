/* SPDX-License-Identifier: MIT */
/* The witness (docs/witness.md): C2SP tlog-witness add-checkpoint over a
 * state directory, and cosignature/v1 (C2SP tlog-cosignature). HTTP is the
 * front end's; this file sees a request body and returns a status and a
 * body. */
#include <stdarg.h>

#include "basic/macro.h"
#include "ledger/internal.h"
#include "ledger/witness.h"

#define WITNESS_KEY_TYPE 0x04 /* cosignature/v1 over Ed25519 */

struct witness {
	int dir_fd;
	char name[256];
	uint8_t seed[ED25519_KEY_BYTES];
	struct ledger_vkey vkey;
};

static void witness_key_id(const char *name, const uint8_t key[32], uint8_t ret[4])
{
	uint8_t buf[256 + 2 + 32], digest[SHA256_DIGEST_BYTES];
	size_t n = strlen(name);

	memcpy(buf, name, n);
	buf[n] = '\n';
	buf[n + 1] = WITNESS_KEY_TYPE;
	memcpy(buf + n + 2, key, 32);
	sha256_raw(buf, n + 2 + 32, digest);
	memcpy(ret, digest, 4);
}

/* A key name: 1-127 bytes, no '+', no space or control. */
static bool witness_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= 128)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == '+' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* "<prefix><name>+<8 hex>+base64(type || 32 bytes)" into name, id, key. */
static int witness_key_text_parse(const char *text, const char *prefix, char name[256],
				  uint8_t id[4], uint8_t key[32])
{
	char buf[512];
	uint8_t raw[33];
	size_t k = strlen(prefix);

	if (strncmp(text, prefix, k) != 0)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", text + k);
	buf[strcspn(buf, "\n")] = '\0';
	char *plus1 = strchr(buf, '+');
	char *plus2 = plus1 && strlen(plus1) > 10 ? plus1 + 9 : NULL;
	if (!plus2 || *plus2 != '+')
		return -EINVAL;
	*plus1 = *plus2 = '\0';
	if (!witness_name_ok(buf) || strlen(plus1 + 1) != 8 || !hex_decode(plus1 + 1, id, 4) ||
	    !ledger_b64_exact(plus2 + 1, raw, sizeof(raw)) || raw[0] != WITNESS_KEY_TYPE)
		return -EINVAL;
	snprintf(name, 256, "%s", buf);
	memcpy(key, raw + 1, 32);
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

int witness_vkey_parse(const char *text, struct ledger_vkey *ret, struct error *err)
{
	uint8_t id[4];

	if (witness_key_text_parse(text, "", ret->name, id, ret->key) < 0)
		return error_set(err, EINVAL,
				 "not a cosigner key (NAME+ID+base64 of 0x04 and an Ed25519 key)");
	witness_key_id(ret->name, ret->key, ret->id);
	if (memcmp(ret->id, id, 4) != 0)
		return error_set(err, EINVAL, "the cosigner key's id does not match its key");
	return 0;
}

static char *witness_key_format(const char *prefix, const char *name, const uint8_t id[4],
				const uint8_t key[32])
{
	uint8_t raw[33];
	char id_hex[9], *ret = NULL;

	raw[0] = WITNESS_KEY_TYPE;
	memcpy(raw + 1, key, 32);
	hex_encode(id, 4, id_hex);
	cleanup_free char *b64 = base64_encode(raw, sizeof(raw));
	explicit_bzero(raw, sizeof(raw));
	if (!b64 || asprintf(&ret, "%s%s+%s+%s", prefix, name, id_hex, b64) < 0)
		return NULL;
	explicit_bzero(b64, strlen(b64));
	return ret;
}

char *witness_vkey(const struct witness *w)
{
	return witness_key_format("", w->vkey.name, w->vkey.id, w->vkey.key);
}

/* ---- cosignatures ----------------------------------------------------------- */

static char *witness_cosigned_message(const char *body, size_t body_n, uint64_t t, size_t *ret_n)
{
	char *msg = NULL;
	int n = asprintf(&msg, "cosignature/v1\ntime %llu\n%.*s", (unsigned long long)t,
			 (int)body_n, body);
	if (n < 0)
		return NULL;
	*ret_n = (size_t)n;
	return msg;
}

static char *witness_cosign(const struct witness *w, const char *body, size_t body_n, uint64_t t)
{
	uint8_t sig[4 + 8 + ED25519_SIGNATURE_BYTES];
	size_t msg_n;
	cleanup_free char *msg = witness_cosigned_message(body, body_n, t, &msg_n);

	if (!msg)
		return NULL;
	memcpy(sig, w->vkey.id, 4);
	for (int i = 0; i < 8; i++)
		sig[4 + i] = (uint8_t)(t >> (56 - 8 * i));
	if (ed25519_sign(w->seed, msg, msg_n, sig + 12) < 0)
		return NULL;
	cleanup_free char *b64 = base64_encode(sig, sizeof(sig));
	char *line = NULL;
	if (!b64 || asprintf(&line, EM_DASH " %s %s\n", w->name, b64) < 0)
		return NULL;
	return line;
}

int witness_cosignature_verify(const struct ledger_vkey *w, const char *body, size_t body_n,
			       const char *line, uint64_t *ret_time)
{
	size_t k = strlen(w->name), len;
	uint8_t sig[4 + 8 + ED25519_SIGNATURE_BYTES];

	if (strncmp(line, EM_DASH " ", 4) != 0 || strncmp(line + 4, w->name, k) != 0 ||
	    line[4 + k] != ' ')
		return -ENOENT;
	char b64[256];
	snprintf(b64, sizeof(b64), "%s", line + 5 + k);
	b64[strcspn(b64, "\n")] = '\0';
	cleanup_free char *raw = base64_decode(b64, &len);
	if (!raw || len < 4 || memcmp(raw, w->id, 4) != 0)
		return -ENOENT; /* another key of the same name */
	if (!ledger_b64_exact(b64, sig, sizeof(sig)))
		return -EBADMSG;
	uint64_t t = 0;
	for (int i = 0; i < 8; i++)
		t = t << 8 | sig[4 + i];
	if (t > INT64_MAX)
		return -EBADMSG;
	size_t msg_n;
	cleanup_free char *msg = witness_cosigned_message(body, body_n, t, &msg_n);
	if (!msg || !ed25519_verify(w->key, msg, msg_n, sig + 12))
		return -EBADMSG;
	if (ret_time)
		*ret_time = t;
	return 0;
}

/* ---- the request --------------------------------------------------------------- */

/* A decimal without sign or leading zero (but "0"). */
static bool witness_decimal(const char *s, size_t n, uint64_t *ret)
{
	char buf[32];

	if (n == 0 || n >= sizeof(buf) || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return parse_u64(buf, ret) == 0;
}

int witness_request_parse(const char *body, size_t n, struct witness_request *ret, struct error *err)
{
	*ret = (struct witness_request){ 0 };
	if (n > WITNESS_BODY_MAX)
		return error_set(err, EBADMSG, "the body is over %d bytes", WITNESS_BODY_MAX);
	const char *p = body, *end = body + n;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl || nl - p < 5 || memcmp(p, "old ", 4) != 0 ||
	    !witness_decimal(p + 4, (size_t)(nl - p - 4), &ret->old_size))
		return error_set(err, EBADMSG, "the body starts with \"old SIZE\"");
	p = nl + 1;
	for (;;) {
		nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		if (!nl)
			return error_set(err, EBADMSG, "no blank line before the checkpoint");
		if (nl == p)
			break;
		char line[64];
		size_t k = (size_t)(nl - p);
		if (ret->n_proof == WITNESS_PROOF_MAX)
			return error_set(err, EBADMSG, "more than %d proof lines", WITNESS_PROOF_MAX);
		if (k >= sizeof(line) || memchr(p, '\0', k))
			return error_set(err, EBADMSG, "a proof line is not a base64 hash");
		memcpy(line, p, k);
		line[k] = '\0';
		if (!ledger_b64_exact(line, ret->proof[ret->n_proof], MERKLE_HASH_BYTES))
			return error_set(err, EBADMSG, "a proof line is not a base64 hash");
		ret->n_proof++;
		p = nl + 1;
	}
	ret->checkpoint = nl + 1;
	ret->checkpoint_n = (size_t)(end - ret->checkpoint);
	if (ret->checkpoint_n == 0)
		return error_set(err, EBADMSG, "no checkpoint after the blank line");
	if (ret->old_size == 0 && ret->n_proof > 0)
		return error_set(err, EBADMSG, "a proof from size 0");
	return 0;
}

char *witness_request_format(uint64_t old_size, const merkle_hash *proof, size_t n_proof,
			     const char *checkpoint, size_t checkpoint_n, size_t *ret_n)
{
	size_t cap = 32 + n_proof * 48 + 1 + checkpoint_n + 1, n;
	char *body = malloc(cap);
	if (!body)
		return NULL;
	n = (size_t)snprintf(body, cap, "old %llu\n", (unsigned long long)old_size);
	for (size_t i = 0; i < n_proof; i++) {
		cleanup_free char *b64 = base64_encode(proof[i], MERKLE_HASH_BYTES);
		if (!b64) {
			free(body);
			return NULL;
		}
		n += (size_t)snprintf(body + n, cap - n, "%s\n", b64);
	}
	body[n++] = '\n';
	memcpy(body + n, checkpoint, checkpoint_n);
	n += checkpoint_n;
	body[n] = '\0';
	*ret_n = n;
	return body;
}

/* ---- the witness's state ------------------------------------------------------ */

static int witness_key_load(struct witness *w, bool create, const char *name, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	uint8_t id[4];
	struct stat st;

	int r = file_read_capped(w->dir_fd, "key", 1024, &text, &n, err);
	if (r == 0) {
		cleanup_close int fd = openat(w->dir_fd, "key", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0)
			return error_set_errno(err, errno, "stat the witness key");
		if (st.st_mode & 077)
			return error_set(err, EPERM, "the witness key is readable by others (mode %o)",
					 st.st_mode & 0777);
		r = witness_key_text_parse(text, "PRIVATE+KEY+", w->name, id, w->seed);
		explicit_bzero(text, n);
		if (r < 0)
			return error_set(err, EINVAL, "the witness key is not a cosigner key");
	} else if (r == -ENOENT && create) {
		error_clear(err);
		uint8_t nonce[8];
		char hex[17];
		if (name && !witness_name_ok(name))
			return error_set(err, EINVAL,
					 "a witness name has no '+', space or control, 1-127 bytes");
		if (getrandom(nonce, sizeof(nonce), 0) != sizeof(nonce) ||
		    getrandom(w->seed, sizeof(w->seed), 0) != sizeof(w->seed))
			return error_set_errno(err, errno, "getrandom");
		hex_encode(nonce, sizeof(nonce), hex);
		if (name)
			snprintf(w->name, sizeof(w->name), "%s", name);
		else
			snprintf(w->name, sizeof(w->name), "airlock.local/witness/%s", hex);
	} else {
		return r == -ENOENT ? error_set(err, ENOENT,
						"no witness here: `airlock witness init` first")
				    : r;
	}
	snprintf(w->vkey.name, sizeof(w->vkey.name), "%s", w->name);
	if (ed25519_public_key(w->seed, w->vkey.key) < 0)
		return error_set(err, ENOSYS, "Ed25519 is not available (libcrypto.so.3)");
	witness_key_id(w->name, w->vkey.key, w->vkey.id);
	if (r == 0) {
		if (memcmp(w->vkey.id, id, 4) != 0)
			return error_set(err, EINVAL, "the witness key's id does not match its key");
		return 0;
	}
	cleanup_free char *line = witness_key_format("PRIVATE+KEY+", w->name, w->vkey.id, w->seed);
	cleanup_free char *vkey = witness_vkey(w);
	if (!line || !vkey)
		return error_set(err, ENOMEM, "out of memory");
	size_t ln = strlen(line);
	line[ln] = '\n'; /* over the NUL: written by length */
	r = file_write_atomic(w->dir_fd, "key", line, ln + 1, 0600, true, err);
	explicit_bzero(line, ln + 1);
	if (r < 0)
		return r == -EEXIST ? error_set(err, EEXIST, "the witness has a key already") : r;
	size_t vn = strlen(vkey);
	vkey[vn] = '\n';
	(void)unlinkat(w->dir_fd, "key.pub", 0);
	return file_write_atomic(w->dir_fd, "key.pub", vkey, vn + 1, 0644, true, err);
}

int witness_open(int dir_fd, bool create, const char *name, struct witness **ret, struct error *err)
{
	struct witness *w = calloc(1, sizeof(*w));
	if (!w)
		return error_set(err, ENOMEM, "out of memory");
	w->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	int r = w->dir_fd < 0 ? error_set_errno(err, errno, "dup") : 0;
	if (r == 0 && create && mkdirat(w->dir_fd, "logs", 0700) < 0 && errno != EEXIST)
		r = error_set_errno(err, errno, "create logs/");
	if (r == 0)
		r = witness_key_load(w, create, name, err);
	if (r < 0) {
		witness_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void witness_free(struct witness *w)
{
	if (!w)
		return;
	if (w->dir_fd >= 0)
		close(w->dir_fd);
	explicit_bzero(w->seed, sizeof(w->seed));
	free(w);
}

/* logs/<sha256 hex of origin><suffix> */
static void witness_log_path(const char *origin, const char *suffix, char ret[128])
{
	char hex[SHA256_HEX_SIZE];

	sha256_hex(origin, strlen(origin), hex);
	snprintf(ret, 128, "logs/%s%s", hex, suffix);
}

/* Replaces dir_fd/path durably: path.new written and synced, renamed over,
 * the directory synced. */
static int witness_replace(int dir_fd, const char *path, const void *data, size_t n, struct error *err)
{
	char tmp[160];
	const char *slash = strrchr(path, '/');
	cleanup_close int sub = -1;
	int at = dir_fd;

	if (slash) {
		char dir[128];
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		sub = openat(dir_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			return error_set_errno(err, errno, "open %s", dir);
		at = sub;
		path = slash + 1;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	/* Two syncs: the new file's bytes before the rename, the directory
	 * after it (file_write_atomic() would sync the directory once more). */
	cleanup_close int fd =
		openat(at, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "create %s", tmp);
	int r = fd_write_all(fd, data, n);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(at, tmp, 0);
		return error_set_errno(err, -r, "write %s", tmp);
	}
	if (renameat(at, tmp, at, path) < 0)
		return error_set_errno(err, errno, "rename over %s", path);
	if (fsync(at) < 0)
		return error_set_errno(err, errno, "sync the directory of %s", path);
	return 0;
}

int witness_add_log(struct witness *w, const char *origin, const char *vkey, struct error *err)
{
	struct ledger_vkey v;
	char path[128];

	if (ledger_vkey_parse(vkey, &v, err) < 0)
		return error_prefix(err, "the log's key");
	if (strcmp(v.name, origin) != 0)
		return error_set(err, EINVAL,
				 "the log's key is named %s, not %s: a checkpoint's origin is its key's name",
				 v.name, origin);
	cleanup_free char *text = ledger_vkey_format(&v);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	size_t n = strlen(text);
	text[n] = '\n';
	if (mkdirat(w->dir_fd, "logs", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create logs/");
	witness_log_path(origin, ".log", path);
	return witness_replace(w->dir_fd, path, text, n + 1, err);
}

/* ---- add-checkpoint ------------------------------------------------------------ */

/* Returns 0, so that a check can end with `return witness_reply_set(...)`. */
static int witness_reply_set(struct witness_reply *r, int status, const char *type, const char *fmt,
			     ...) _printf_(4, 5);
static int witness_reply_set(struct witness_reply *r, int status, const char *type, const char *fmt, ...)
{
	va_list ap;

	free(r->body);
	r->status = status;
	r->content_type = type;
	va_start(ap, fmt);
	int n = vasprintf(&r->body, fmt, ap);
	va_end(ap);
	if (n < 0) {
		r->body = NULL;
		r->body_n = 0;
	} else {
		r->body_n = (size_t)n;
	}
	return 0;
}

void witness_reply_release(struct witness_reply *r)
{
	free(r->body);
	*r = (struct witness_reply){ 0 };
}

#define TEXT "text/plain; charset=utf-8"

/* The checks, the stored checkpoint replaced and the cosignature, under the
 * witness's lock so that no two requests for one log interleave. */
static int witness_add_locked(struct witness *w, const struct witness_request *q,
			      const struct ledger_vkey *log_key, const struct ledger_checkpoint *cp,
			      uint64_t now, struct witness_reply *ret)
{
	struct error err = { 0 };
	char path[128];
	cleanup_free char *stored_text = NULL;
	size_t stored_n;
	struct ledger_checkpoint stored = { 0 };
	uint64_t held = 0;

	witness_log_path(cp->origin, ".cp", path);
	int r = file_read_capped(w->dir_fd, path, LEDGER_NOTE_MAX, &stored_text, &stored_n, &err);
	if (r == 0) {
		r = ledger_checkpoint_parse(stored_text, stored_n, log_key, &stored, &err);
		if (r < 0)
			return witness_reply_set(ret, 500, TEXT,
						 "the witness's stored checkpoint of %s does not verify: %s\n",
						 cp->origin, err.msg);
		held = stored.size;
	} else if (r != -ENOENT) {
		return witness_reply_set(ret, 500, TEXT, "%s\n", err.msg);
	}
	if (q->old_size != held) {
		ledger_checkpoint_release(&stored);
		return witness_reply_set(ret, 409, "text/x.tlog.size", "%llu\n",
					 (unsigned long long)held);
	}
	bool ok;
	if (held == 0)
		ok = q->n_proof == 0; /* the first checkpoint of a log: trusted as first seen */
	else if (held == cp->size)
		ok = q->n_proof == 0 && memcmp(stored.root, cp->root, MERKLE_HASH_BYTES) == 0;
	else
		ok = merkle_verify_consistency(held, cp->size, stored.root, cp->root,
					       (merkle_hash *)q->proof, q->n_proof);
	ledger_checkpoint_release(&stored);
	if (!ok && held == cp->size)
		return witness_reply_set(ret, 409, "text/x.tlog.size", "%llu\n",
					 (unsigned long long)held);
	if (!ok)
		return witness_reply_set(ret, 422, TEXT,
					 "the consistency proof from %llu to %llu does not verify: not cosigned\n",
					 (unsigned long long)held, (unsigned long long)cp->size);
	if (held != cp->size || r == -ENOENT) {
		error_clear(&err);
		if (witness_replace(w->dir_fd, path, cp->text, strlen(cp->text), &err) < 0)
			return witness_reply_set(ret, 500, TEXT, "store the checkpoint: %s\n", err.msg);
	}
	const char *split = strstr(cp->text, "\n\n");
	cleanup_free char *line =
		split ? witness_cosign(w, cp->text, (size_t)(split - cp->text) + 1, now) : NULL;
	if (!line)
		return witness_reply_set(ret, 500, TEXT, "cannot cosign\n");
	return witness_reply_set(ret, 200, TEXT, "%s", line);
}

static int witness_add(struct witness *w, const char *body, size_t n, uint64_t now,
		       struct witness_reply *ret)
{
	struct witness_request q;
	struct ledger_checkpoint cp = { 0 };
	struct ledger_vkey log_key;
	struct error err = { 0 };
	char path[128];
	cleanup_free char *key_text = NULL;
	size_t key_n;

	*ret = (struct witness_reply){ 0 };
	if (witness_request_parse(body, n, &q, &err) < 0)
		return witness_reply_set(ret, 400, TEXT, "malformed request: %s\n", err.msg);
	if (ledger_checkpoint_parse(q.checkpoint, q.checkpoint_n, NULL, &cp, &err) < 0)
		return witness_reply_set(ret, 400, TEXT, "malformed checkpoint: %s\n", err.msg);
	witness_log_path(cp.origin, ".log", path);
	int r = file_read_capped(w->dir_fd, path, 1024, &key_text, &key_n, &err);
	if (r == 0)
		r = ledger_vkey_parse(key_text, &log_key, &err);
	if (r < 0) {
		witness_reply_set(ret, r == -ENOENT ? 404 : 500, TEXT, "%s%s\n",
				  r == -ENOENT ? "unknown log " : "",
				  r == -ENOENT ? cp.origin : err.msg);
		ledger_checkpoint_release(&cp);
		return 0;
	}
	ledger_checkpoint_release(&cp);
	if (ledger_checkpoint_parse(q.checkpoint, q.checkpoint_n, &log_key, &cp, &err) < 0)
		return witness_reply_set(ret, 403, TEXT,
					 "the checkpoint is not signed by the log's key: %s\n",
					 err.msg);
	if (q.old_size > cp.size) {
		witness_reply_set(ret, 400, TEXT, "old size %llu is above the checkpoint's %llu\n",
				  (unsigned long long)q.old_size, (unsigned long long)cp.size);
		ledger_checkpoint_release(&cp);
		return 0;
	}
	cleanup_close int lock_fd =
		openat(w->dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX) < 0)
		witness_reply_set(ret, 500, TEXT, "lock the witness: %s\n", strerror(errno));
	else
		witness_add_locked(w, &q, &log_key, &cp, now, ret);
	ledger_checkpoint_release(&cp);
	return 0;
}

void witness_add_checkpoint(struct witness *w, const char *body, size_t n, uint64_t now,
			    struct witness_reply *ret)
{
	(void)witness_add(w, body, n, now, ret);
	if (!ret->body) /* out of memory on the way */
		ret->status = 500;
}
