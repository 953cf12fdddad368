/* SPDX-License-Identifier: MIT */
#include "core/store/ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/ed25519.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/text.h"
#include "core/gate/approver.h"
#include "core/store/store.h"

#define LEDGER_DIR	     "ledger"
#define LEDGER_NOTE_MAX	     (16 << 10)
#define LEDGER_TAIL_WINDOW   (2 * LEDGER_ENTRY_MAX + 2)
#define LEDGER_MAX_FINDINGS  10000
#define LEDGER_RANGE_MAGIC   "airlock-ledger-range/1"
#define EM_DASH		     "\xe2\x80\x94"

static const char *const ledger_kinds[LEDGER_KIND_MAX] = {
	[LEDGER_RECEIPT] = "receipt",
	[LEDGER_GATE_OPEN] = "gate-open",
	[LEDGER_GATE_CLOSE] = "gate-close",
	[LEDGER_DRYRUN] = "dryrun",
	[LEDGER_APPLY] = "apply",
	[LEDGER_ROLLBACK] = "rollback",
	[LEDGER_APPROVER_ENROL] = "approver-enrol",
	[LEDGER_APPROVER_CHANGE] = "approver-change",
	[LEDGER_PERMIT_TRANSITION] = "permit-transition",
	[LEDGER_RECOVERED] = "recovered",
	[LEDGER_DISCARD] = "discard",
	[LEDGER_POLICY_APPROVAL] = "policy-approval",
};

const char *ledger_kind_name(enum ledger_kind kind)
{
	return (unsigned)kind < LEDGER_KIND_MAX ? ledger_kinds[kind] : "?";
}

int ledger_kind_from_name(const char *name)
{
	for (int k = 0; k < LEDGER_KIND_MAX; k++)
		if (strcmp(ledger_kinds[k], name) == 0)
			return k;
	return -EINVAL;
}

/* ---- entries ------------------------------------------------------------------ */

static bool ledger_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* An id: 1-128 printable ASCII bytes, no '/', no space. */
static bool ledger_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > LEDGER_ID_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~' || *s == '/')
			return false;
	return true;
}

/* A clean relative path below the state directory, or the system approver. */
static bool ledger_path_ok(const char *p)
{
	size_t n = strlen(p);

	if (n == 0 || n > LEDGER_PATH_MAX)
		return false;
	if (strcmp(p, APPROVER_SYSTEM_PATH) == 0)
		return true;
	if (*p == '/')
		return false;
	for (const char *c = p;;) {
		size_t len = strcspn(c, "/");
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
		if (!*c)
			return true;
		c++;
	}
}

int ledger_entry_parse(const char *line, size_t n, struct ledger_entry *ret, struct error *err)
{
	*ret = (struct ledger_entry){ 0 };
	if (n == 0 || n > LEDGER_ENTRY_MAX)
		return error_set(err, EBADMSG, "entry of %zu bytes", n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return error_set(err, EBADMSG, "control character at byte %zu", i);
	if (!utf8_is_valid(line, n))
		return error_set(err, EBADMSG, "not UTF-8");
	/* jansson allows white space around the value; an entry has none. */
	if (line[0] != '{' || line[n - 1] != '}')
		return error_set(err, EBADMSG, "not one compact JSON object");
	json_error_t jerr;
	cleanup_with(json_decrefp) json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc))
		return error_set(err, EBADMSG, "not a JSON object: %s", doc ? "" : jerr.text);
	if (json_object_size(doc) != 7)
		return error_set(err, EBADMSG, "%zu fields, version 1 has 7", json_object_size(doc));
	json_t *v = json_object_get(doc, "v"), *seq = json_object_get(doc, "seq");
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const char *id = json_string_value(json_object_get(doc, "id"));
	const char *path = json_string_value(json_object_get(doc, "path"));
	const char *sha = json_string_value(json_object_get(doc, "sha256"));
	const char *time = json_string_value(json_object_get(doc, "time"));
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return error_set(err, EBADMSG, "not version 1");
	if (!json_is_integer(seq) || json_integer_value(seq) < 0)
		return error_set(err, EBADMSG, "bad seq");
	if (!kind || ledger_kind_from_name(kind) < 0)
		return error_set(err, EBADMSG, "unknown kind");
	if (!id || !ledger_id_ok(id))
		return error_set(err, EBADMSG, "bad id");
	if (!path || !ledger_path_ok(path))
		return error_set(err, EBADMSG, "bad path");
	if (!sha || !ledger_hex64(sha))
		return error_set(err, EBADMSG, "bad sha256");
	if (!time || strlen(time) >= sizeof(ret->time))
		return error_set(err, EBADMSG, "bad time");
	ret->seq = (uint64_t)json_integer_value(seq);
	ret->kind = (enum ledger_kind)ledger_kind_from_name(kind);
	snprintf(ret->id, sizeof(ret->id), "%s", id);
	snprintf(ret->path, sizeof(ret->path), "%s", path);
	snprintf(ret->sha256, sizeof(ret->sha256), "%s", sha);
	snprintf(ret->time, sizeof(ret->time), "%s", time);
	return 0;
}

/* The line (with its newline) of a new entry; checked by the parser, so
 * every line written is one the verifier accepts. */
static int ledger_entry_format(uint64_t seq, enum ledger_kind kind, const char *id,
			       const char *path, const char *sha, char **ret, size_t *ret_n,
			       struct error *err)
{
	char now[64];

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:s}", "v", 1, "seq", (json_int_t)seq,
			  "kind", ledger_kind_name(kind), "id", id, "path", path, "sha256", sha,
			  "time", now);
	if (!doc)
		return error_set(err, ENOMEM, "out of memory");
	cleanup_free char *text = json_dumps(doc, JSON_COMPACT);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	size_t n = strlen(text);
	struct ledger_entry check;
	int r = ledger_entry_parse(text, n, &check, err);
	if (r < 0)
		return error_prefix(err, "ledger entry for %s %s", ledger_kind_name(kind), id);
	char *line = realloc(text, n + 2);
	if (!line)
		return error_set(err, ENOMEM, "out of memory");
	text = NULL;
	line[n] = '\n';
	line[n + 1] = '\0';
	*ret = line;
	*ret_n = n + 1;
	return 0;
}

/* ---- the directory, the lock ---------------------------------------------------- */

static int ledger_dir(struct store *store, bool create, struct error *err)
{
	int fd = openat(store->dir_fd, LEDGER_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(store->dir_fd, LEDGER_DIR, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create %s/%s", store->path, LEDGER_DIR);
		fd = openat(store->dir_fd, LEDGER_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : error_set_errno(err, errno, "open %s/%s", store->path,
							 LEDGER_DIR);
	return fd;
}

static int ledger_lock(int dir_fd, int how, struct error *err)
{
	int fd = openat(dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && how == LOCK_SH && errno == EACCES)
		fd = openat(dir_fd, "lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger's lock");
	while (flock(fd, how) < 0)
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return error_set_errno(err, e, "lock the ledger");
		}
	return fd;
}

/* A read-only map of a file (NULL and 0 for an empty one). */
struct ledger_map {
	char *data;
	size_t size;
};
static void ledger_map_release(struct ledger_map *m)
{
	if (m->data)
		munmap(m->data, m->size);
	*m = (struct ledger_map){ 0 };
}

static int ledger_map_fd(int fd, struct ledger_map *ret, struct error *err)
{
	struct stat st;

	*ret = (struct ledger_map){ 0 };
	if (fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "stat the ledger");
	if (st.st_size == 0)
		return 0;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return error_set_errno(err, errno, "map the ledger");
	ret->data = p;
	ret->size = (size_t)st.st_size;
	return 0;
}

/* ---- keys and notes (C2SP signed-note) ------------------------------------------- */

struct ledger_key {
	char name[256];
	uint8_t seed[ED25519_KEY_BYTES];
	struct ledger_vkey vkey;
};

static void ledger_key_id(const char *name, const uint8_t key[32], uint8_t ret[4])
{
	uint8_t buf[256 + 2 + 32], digest[SHA256_DIGEST_BYTES];
	size_t n = strlen(name);

	memcpy(buf, name, n);
	buf[n] = '\n';
	buf[n + 1] = 0x01; /* the Ed25519 signature type */
	memcpy(buf + n + 2, key, 32);
	sha256_raw(buf, n + 2 + 32, digest);
	memcpy(ret, digest, 4);
}

/* A note key name: no '+', no space or control, 1-255 bytes. */
static bool ledger_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= 256)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == '+' || *s == 0x7f)
			return false;
	return true;
}

/* Decodes base64 that is canonical (re-encodes to the same text) into
 * exactly n bytes. */
static bool ledger_b64_exact(const char *text, void *ret, size_t n)
{
	size_t len;
	cleanup_free char *raw = base64_decode(text, &len);
	if (!raw || len != n)
		return false;
	cleanup_free char *again = base64_encode(raw, len);
	if (!again || strcmp(again, text) != 0)
		return false;
	memcpy(ret, raw, n);
	return true;
}

static char *ledger_vkey_format(const struct ledger_vkey *v)
{
	uint8_t raw[33];
	char id_hex[9], *ret = NULL;

	raw[0] = 0x01;
	memcpy(raw + 1, v->key, 32);
	hex_encode(v->id, 4, id_hex);
	cleanup_free char *b64 = base64_encode(raw, sizeof(raw));
	if (!b64 || asprintf(&ret, "%s+%s+%s", v->name, id_hex, b64) < 0)
		return NULL;
	return ret;
}

int ledger_vkey_parse(const char *text, struct ledger_vkey *ret, struct error *err)
{
	char buf[512];
	uint8_t raw[33], id[4];

	snprintf(buf, sizeof(buf), "%s", text);
	buf[strcspn(buf, "\n")] = '\0';
	/* The base64 key may hold '+'; the name may not, the id is 8 digits. */
	char *plus1 = strchr(buf, '+');
	char *plus2 = plus1 && strlen(plus1) > 10 ? plus1 + 9 : NULL;
	if (!plus2 || *plus2 != '+')
		return error_set(err, EINVAL, "not a verifier key (NAME+ID+KEY)");
	*plus1 = *plus2 = '\0';
	if (!ledger_name_ok(buf) || strlen(plus1 + 1) != 8 || !hex_decode(plus1 + 1, id, 4) ||
	    !ledger_b64_exact(plus2 + 1, raw, sizeof(raw)) || raw[0] != 0x01)
		return error_set(err, EINVAL, "not an Ed25519 verifier key");
	snprintf(ret->name, sizeof(ret->name), "%s", buf);
	memcpy(ret->key, raw + 1, 32);
	ledger_key_id(ret->name, ret->key, ret->id);
	if (memcmp(ret->id, id, 4) != 0)
		return error_set(err, EINVAL, "the verifier key's id does not match its key");
	return 0;
}

static int ledger_key_parse(const char *text, struct ledger_key *ret, struct error *err)
{
	static const char prefix[] = "PRIVATE+KEY+";
	char buf[512];
	uint8_t raw[33], id[4];

	if (strncmp(text, prefix, strlen(prefix)) != 0)
		return error_set(err, EINVAL, "not a signer key");
	snprintf(buf, sizeof(buf), "%s", text + strlen(prefix));
	buf[strcspn(buf, "\n")] = '\0';
	char *plus1 = strchr(buf, '+');
	char *plus2 = plus1 && strlen(plus1) > 10 ? plus1 + 9 : NULL;
	if (!plus2 || *plus2 != '+')
		return error_set(err, EINVAL, "not a signer key");
	*plus1 = *plus2 = '\0';
	if (!ledger_name_ok(buf) || !hex_decode(plus1 + 1, id, 4) ||
	    !ledger_b64_exact(plus2 + 1, raw, sizeof(raw)) || raw[0] != 0x01)
		return error_set(err, EINVAL, "not an Ed25519 signer key");
	snprintf(ret->name, sizeof(ret->name), "%s", buf);
	memcpy(ret->seed, raw + 1, 32);
	explicit_bzero(raw, sizeof(raw));
	snprintf(ret->vkey.name, sizeof(ret->vkey.name), "%s", buf);
	if (ed25519_public_key(ret->seed, ret->vkey.key) < 0)
		return error_set(err, ENOSYS, "Ed25519 is not available (libcrypto.so.3)");
	ledger_key_id(ret->name, ret->vkey.key, ret->vkey.id);
	if (memcmp(ret->vkey.id, id, 4) != 0)
		return error_set(err, EINVAL, "the signer key's id does not match its key");
	return 0;
}

/* Loads ledger/key, or (create, under the lock) makes one: an Ed25519 seed
 * from getrandom() named airlock.local/ledger/<random>. */
static int ledger_key_load(int dir_fd, bool create, struct ledger_key *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	struct stat st;

	int r = file_read_capped(dir_fd, "key", 1024, &text, &n, err);
	if (r == 0) {
		cleanup_close int fd = openat(dir_fd, "key", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0)
			return error_set_errno(err, errno, "stat the ledger key");
		if (st.st_mode & 077)
			return error_set(err, EPERM, "the ledger key is readable by others (mode %o)",
					 st.st_mode & 0777);
		r = ledger_key_parse(text, ret, err);
		return r < 0 ? error_prefix(err, "ledger key") : 0;
	}
	if (r != -ENOENT || !create)
		return r == -ENOENT ? error_set(err, ENOENT, "the ledger has no key yet") : r;

	uint8_t nonce[8], raw[33];
	char nonce_hex[17], id_hex[9];
	if (getrandom(nonce, sizeof(nonce), 0) != sizeof(nonce) ||
	    getrandom(ret->seed, sizeof(ret->seed), 0) != sizeof(ret->seed))
		return error_set_errno(err, errno, "getrandom");
	hex_encode(nonce, sizeof(nonce), nonce_hex);
	snprintf(ret->name, sizeof(ret->name), "airlock.local/ledger/%s", nonce_hex);
	snprintf(ret->vkey.name, sizeof(ret->vkey.name), "%s", ret->name);
	if (ed25519_public_key(ret->seed, ret->vkey.key) < 0)
		return error_set(err, ENOSYS, "Ed25519 is not available (libcrypto.so.3)");
	ledger_key_id(ret->name, ret->vkey.key, ret->vkey.id);
	raw[0] = 0x01;
	memcpy(raw + 1, ret->seed, 32);
	hex_encode(ret->vkey.id, 4, id_hex);
	cleanup_free char *b64 = base64_encode(raw, sizeof(raw));
	explicit_bzero(raw, sizeof(raw));
	cleanup_free char *line = NULL;
	if (!b64 || asprintf(&line, "PRIVATE+KEY+%s+%s+%s\n", ret->name, id_hex, b64) < 0)
		return error_set(err, ENOMEM, "out of memory");
	r = file_write_atomic(dir_fd, "key", line, strlen(line), 0600, true, err);
	explicit_bzero(line, strlen(line));
	if (r < 0)
		return error_prefix(err, "ledger key");
	cleanup_free char *vkey = ledger_vkey_format(&ret->vkey);
	if (!vkey)
		return error_set(err, ENOMEM, "out of memory");
	size_t vn = strlen(vkey);
	vkey[vn] = '\n'; /* a convenience copy; verify takes the key from outside */
	(void)unlinkat(dir_fd, "key.pub", 0);
	(void)file_write_atomic(dir_fd, "key.pub", vkey, vn + 1, 0644, true, err);
	error_clear(err);
	return 0;
}

void ledger_checkpoint_release(struct ledger_checkpoint *c)
{
	free(c->text);
	c->text = NULL;
}

static char *ledger_note_body(const char *origin, uint64_t size, const merkle_hash root)
{
	char *body = NULL;
	cleanup_free char *b64 = base64_encode(root, MERKLE_HASH_BYTES);

	if (!b64 || asprintf(&body, "%s\n%llu\n%s\n", origin, (unsigned long long)size, b64) < 0)
		return NULL;
	return body;
}

static char *ledger_note_sign(const struct ledger_key *key, uint64_t size, const merkle_hash root)
{
	uint8_t sig[4 + ED25519_SIGNATURE_BYTES];
	cleanup_free char *body = ledger_note_body(key->name, size, root);

	if (!body)
		return NULL;
	memcpy(sig, key->vkey.id, 4);
	if (ed25519_sign(key->seed, body, strlen(body), sig + 4) < 0)
		return NULL;
	cleanup_free char *b64 = base64_encode(sig, sizeof(sig));
	char *note = NULL;
	if (!b64 || asprintf(&note, "%s\n" EM_DASH " %s %s\n", body, key->name, b64) < 0)
		return NULL;
	return note;
}

int ledger_checkpoint_parse(const char *text, size_t n, const struct ledger_vkey *vkey,
			    struct ledger_checkpoint *ret, struct error *err)
{
	*ret = (struct ledger_checkpoint){ 0 };
	if (n == 0 || n > LEDGER_NOTE_MAX || memchr(text, '\0', n) || !utf8_is_valid(text, n))
		return error_set(err, EBADMSG, "not a note");
	cleanup_free char *copy = strndup(text, n);
	if (!copy)
		return error_set(err, ENOMEM, "out of memory");
	char *split = strstr(copy, "\n\n");
	if (!split || copy[n - 1] != '\n')
		return error_set(err, EBADMSG, "a note is text, a blank line, signatures");
	size_t body_n = (size_t)(split - copy) + 1;
	/* The body: origin, size, root, then extension lines, which are ignored. */
	char *lines[3], *save = NULL;
	cleanup_free char *body = strndup(copy, body_n);
	if (!body)
		return error_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < 3; i++) {
		lines[i] = strtok_r(i ? NULL : body, "\n", &save);
		if (!lines[i])
			return error_set(err, EBADMSG, "a checkpoint has origin, size and root");
	}
	if (strlen(lines[0]) >= sizeof(ret->origin) || !*lines[0])
		return error_set(err, EBADMSG, "bad origin");
	uint64_t size;
	if (parse_u64(lines[1], &size) < 0 || (lines[1][0] == '0' && lines[1][1]) ||
	    lines[1][0] == '+')
		return error_set(err, EBADMSG, "bad tree size");
	if (!ledger_b64_exact(lines[2], ret->root, MERKLE_HASH_BYTES))
		return error_set(err, EBADMSG, "bad root hash");
	snprintf(ret->origin, sizeof(ret->origin), "%s", lines[0]);
	ret->size = size;

	if (vkey) {
		bool good = false;
		char *sigs = split + 2;
		for (char *line = strtok_r(sigs, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			if (strncmp(line, EM_DASH " ", 4) != 0)
				return error_set(err, EBADMSG, "a signature line starts with an em dash");
			char *name = line + 4, *space = strrchr(name, ' ');
			if (!space)
				return error_set(err, EBADMSG, "bad signature line");
			*space = '\0';
			uint8_t sig[4 + ED25519_SIGNATURE_BYTES];
			if (strcmp(name, vkey->name) != 0)
				continue;
			if (!ledger_b64_exact(space + 1, sig, sizeof(sig)))
				continue; /* another key type under the same name */
			if (memcmp(sig, vkey->id, 4) != 0)
				continue;
			if (!ed25519_verify(vkey->key, copy, body_n, sig + 4))
				return error_set(err, EBADMSG, "the signature by %s does not verify",
						 vkey->name);
			good = true;
		}
		if (!good)
			return error_set(err, EBADMSG, "no signature by %s", vkey->name);
		if (strcmp(ret->origin, vkey->name) != 0)
			return error_set(err, EBADMSG, "the origin is not the key's name");
	}
	ret->text = strndup(text, n);
	return ret->text ? 0 : error_set(err, ENOMEM, "out of memory");
}

static int ledger_checkpoint_read(int dir_fd, const struct ledger_vkey *vkey,
				  struct ledger_checkpoint *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(dir_fd, "checkpoint", LEDGER_NOTE_MAX, &text, &n, err);
	if (r < 0)
		return r;
	r = ledger_checkpoint_parse(text, n, vkey, ret, err);
	return r < 0 ? error_prefix(err, "checkpoint") : 0;
}

/* ---- appending ------------------------------------------------------------------ */

struct ledger_tail {
	uint64_t good_end; /* the byte after the last complete line */
	uint64_t size;
	bool has_last;
	struct ledger_entry last;
};

/* Finds the last complete line of the log and parses it. */
/* Reads the last want bytes (or the whole file) at the log's end. */
static int ledger_tail_window(int fd, uint64_t size, size_t want, char **ret, size_t *ret_n,
			      struct error *err)
{
	size_t window = size < want ? (size_t)size : want;
	cleanup_free char *buf = malloc(window);
	if (!buf)
		return error_set(err, ENOMEM, "out of memory");
	off_t base = (off_t)(size - window);
	for (size_t got = 0; got < window;) {
		ssize_t k = pread(fd, buf + got, window - got, base + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return error_set_errno(err, k < 0 ? errno : EIO, "read the ledger");
		got += (size_t)k;
	}
	*ret = TAKE_PTR(buf);
	*ret_n = window;
	return 0;
}

static int ledger_tail_read(int fd, struct ledger_tail *ret, struct error *err)
{
	struct stat st;

	*ret = (struct ledger_tail){ 0 };
	if (fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "stat the ledger");
	ret->size = (uint64_t)st.st_size;
	if (ret->size == 0)
		return 0;
	/* A small read finds the last line almost always; the full window
	 * (two of the largest entries) only after a long entry or a torn tail. */
	static const size_t windows[] = { 8192, LEDGER_TAIL_WINDOW };
	for (size_t w = 0; w < 2; w++) {
		cleanup_free char *buf = NULL;
		size_t window = 0;
		int r = ledger_tail_window(fd, ret->size, windows[w], &buf, &window, err);
		if (r < 0)
			return r;
		bool whole = (uint64_t)window == ret->size;
		uint64_t base = ret->size - window;
		char *nl = memrchr(buf, '\n', window);
		if (!nl) {
			if (!whole && w == 0)
				continue;
			if (!whole)
				return error_set(err, EBADMSG,
						 "the ledger's last %zu bytes hold no line end", window);
			ret->good_end = 0; /* all of it is a torn first line */
			return 0;
		}
		char *prev = memrchr(buf, '\n', (size_t)(nl - buf));
		if (!prev && !whole && w == 0)
			continue;
		if (!prev && !whole)
			return error_set(err, EBADMSG, "the ledger's last line is too long");
		ret->good_end = base + (uint64_t)(nl - buf) + 1;
		char *start = prev ? prev + 1 : buf;
		r = ledger_entry_parse(start, (size_t)(nl - start), &ret->last, err);
		if (r < 0)
			return error_prefix(err, "the ledger's last entry");
		ret->has_last = true;
		return 0;
	}
	return error_set(err, EBADMSG, "the ledger's end is unreadable");
}

struct ledger_writer {
	struct store *store;
	int dir_fd;
	int log_fd;
};

static int ledger_poison(struct ledger_writer *w, int e)
{
	char text[128];
	int n = snprintf(text, sizeof(text), "fdatasync of the log failed: %s\n", strerror(e));
	int fd = openat(w->dir_fd, "poisoned", O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd >= 0) {
		(void)fd_write_all(fd, text, (size_t)n);
		close(fd);
	}
	return -EIO;
}

static int ledger_checkpoint_locked(struct ledger_writer *w, struct error *err);
static void ledger_index_update(struct ledger_writer *w);

static int ledger_write_line(struct ledger_writer *w, uint64_t good_end, uint64_t seq,
			     enum ledger_kind kind, const char *id, const char *path,
			     const char *sha, struct error *err)
{
	cleanup_free char *line = NULL;
	size_t n;
	int r = ledger_entry_format(seq, kind, id, path, sha, &line, &n, err);
	if (r < 0)
		return r;
	r = fd_write_all(w->log_fd, line, n);
	if (r < 0) {
		/* A short write or ENOSPC: take the part back. */
		int e = -r;
		if (ftruncate(w->log_fd, (off_t)good_end) < 0 || fdatasync(w->log_fd) < 0)
			(void)ledger_poison(w, errno);
		return error_set_errno(err, e, "append to the ledger");
	}
	/* Never retried: after a failed fsync the kernel may have dropped the
	 * pages and a second fsync would report success (fsyncgate). Skipped
	 * only when the policy turned receipts.fsync off: records are then not
	 * synced either, and a crash is a torn or lost tail. */
	if (w->store->durable && fdatasync(w->log_fd) < 0) {
		int e = errno;
		ledger_poison(w, e);
		return error_set_errno(err, EIO, "the ledger could not be synced (%s); it is poisoned until `airlock ledger recover`",
				       strerror(e));
	}
	return 0;
}

/* A torn tail (bytes after the last line end, from a crash mid-append) is
 * moved to torn/<offset>-<sha256>.bin, cut off, and recorded. */
static int ledger_quarantine_tail(struct ledger_writer *w, const struct ledger_tail *t,
				  struct error *err)
{
	size_t n = (size_t)(t->size - t->good_end);
	cleanup_free char *bytes = malloc(n ? n : 1);
	if (!bytes)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(w->log_fd, bytes + got, n - got, (off_t)(t->good_end + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return error_set_errno(err, k < 0 ? errno : EIO, "read the torn tail");
		got += (size_t)k;
	}
	char hex[SHA256_HEX_SIZE], name[128], path[192], id[32];
	sha256_hex(bytes, n, hex);
	snprintf(name, sizeof(name), "%llu-%.16s.bin", (unsigned long long)t->good_end, hex);
	snprintf(path, sizeof(path), LEDGER_DIR "/torn/%s", name);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)t->good_end);
	if (mkdirat(w->dir_fd, "torn", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the ledger's torn/");
	cleanup_close int torn_fd = openat(w->dir_fd, "torn", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (torn_fd < 0)
		return error_set_errno(err, errno, "open the ledger's torn/");
	int r = file_write_atomic(torn_fd, name, bytes, n, 0600, true, err);
	if (r < 0 && r != -EEXIST)
		return error_prefix(err, "quarantine the ledger's torn tail");
	error_clear(err);
	if (ftruncate(w->log_fd, (off_t)t->good_end) < 0)
		return error_set_errno(err, errno, "cut the ledger's torn tail");
	if (fdatasync(w->log_fd) < 0)
		return ledger_poison(w, errno), error_set(err, EIO, "the ledger could not be synced");
	uint64_t seq = t->has_last ? t->last.seq + 1 : 0;
	return ledger_write_line(w, t->good_end, seq, LEDGER_RECOVERED, id, path, hex, err);
}

/* How many entries the last checkpoint signed (0 without one). */
static uint64_t ledger_signed_size(int dir_fd)
{
	struct ledger_checkpoint cp;
	struct error ignored;

	if (ledger_checkpoint_read(dir_fd, NULL, &cp, &ignored) < 0)
		return 0;
	ledger_checkpoint_release(&cp);
	return cp.size;
}

static int ledger_append_locked(struct ledger_writer *w, enum ledger_kind kind, const char *id,
				const char *path, const char *sha, uint64_t *ret_seq,
				struct error *err)
{
	struct ledger_tail t;
	int r = ledger_tail_read(w->log_fd, &t, err);
	if (r < 0)
		return r;
	if (t.good_end != t.size) {
		uint64_t complete = t.has_last ? t.last.seq + 1 : 0;
		if (complete < ledger_signed_size(w->dir_fd))
			return error_set(err, EBADMSG, "the ledger ends inside its signed prefix: tampering (see `airlock ledger verify`)");
		r = ledger_quarantine_tail(w, &t, err);
		if (r < 0)
			return r;
		r = ledger_tail_read(w->log_fd, &t, err);
		if (r < 0)
			return r;
	}
	uint64_t seq = t.has_last ? t.last.seq + 1 : 0;
	r = ledger_write_line(w, t.good_end, seq, kind, id, path, sha, err);
	if (r < 0)
		return r;
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

static int ledger_writer_open(struct store *store, struct ledger_writer *w, int *ret_lock,
			      struct error *err)
{
	*w = (struct ledger_writer){ .store = store, .dir_fd = -1, .log_fd = -1 };
	int r = ledger_dir(store, true, err);
	if (r < 0)
		return r;
	w->dir_fd = r;
	r = ledger_lock(w->dir_fd, LOCK_EX, err);
	if (r < 0)
		return r;
	*ret_lock = r;
	w->log_fd = openat(w->dir_fd, "log", O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			   0600);
	if (w->log_fd < 0)
		return error_set_errno(err, errno, "open the ledger");
	return 0;
}

static void ledger_writer_close(struct ledger_writer *w)
{
	if (w->log_fd >= 0)
		close(w->log_fd);
	if (w->dir_fd >= 0)
		close(w->dir_fd);
}

int ledger_append(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		  const char sha256[SHA256_HEX_SIZE], bool checkpoint, uint64_t *ret_seq,
		  struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;
	uint64_t seq = 0;

	int r = ledger_writer_open(store, &w, &lock_fd, err);
	if (r == 0 && faccessat(w.dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = error_set(err, EIO, "the ledger is poisoned after an fsync error; run `airlock ledger recover`");
	if (r == 0)
		r = ledger_append_locked(&w, kind, id, path, sha256, &seq, err);
	/* The index follows the checkpoints: an append that signs none leaves
	 * it alone (its pages dirtied on every append made each fdatasync of
	 * the log slower), and a reader reads the few entries since. */
	if (r == 0 && (checkpoint || seq == 0 || (seq + 1) % LEDGER_CHECKPOINT_EVERY == 0)) {
		r = ledger_checkpoint_locked(&w, err);
		ledger_index_update(&w);
	}
	ledger_writer_close(&w);
	if (r < 0)
		return error_prefix(err, "ledger");
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

/* ---- checkpoints ------------------------------------------------------------- */

/* The leaf hashes of the complete lines of map[from..), appended to range;
 * *ret_end is the byte after the last complete line. */
static void ledger_hash_lines(const struct ledger_map *m, size_t from, struct merkle_range *range,
			      uint64_t stop_at, merkle_hash ret_root_at, size_t *ret_end)
{
	size_t pos = from;

	while (pos < m->size) {
		const char *nl = memchr(m->data + pos, '\n', m->size - pos);
		if (!nl)
			break;
		merkle_hash leaf;
		merkle_leaf_hash(m->data + pos, (size_t)(nl - (m->data + pos)), leaf);
		merkle_range_append(range, leaf);
		if (ret_root_at && range->size == stop_at)
			merkle_range_root(range, ret_root_at);
		pos = (size_t)(nl - m->data) + 1;
	}
	*ret_end = pos;
}

/* ledger/range caches the compact range at the last checkpoint, so the next
 * one hashes only what was appended since. Untrusted: it is used only when
 * its root is the signed root at its size. */
struct ledger_range_cache {
	char magic[24];
	uint64_t offset;
	struct merkle_range range;
};

/* Every checkpoint signed is also kept as checkpoints/<size>, so proofs
 * and checks go between any two. One already kept at that size stays: it
 * signs the same root (the log extends it, or signing was refused). */
static int ledger_checkpoint_keep(int dir_fd, uint64_t size, const char *note, struct error *err)
{
	char name[32];

	if (mkdirat(dir_fd, "checkpoints", 0755) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the ledger's checkpoints/");
	cleanup_close int fd = openat(dir_fd, "checkpoints", O_RDONLY | O_DIRECTORY | O_CLOEXEC |
								  O_NOFOLLOW);
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger's checkpoints/");
	snprintf(name, sizeof(name), "%llu", (unsigned long long)size);
	int r = file_write_atomic(fd, name, note, strlen(note), 0644, true, err);
	if (r == -EEXIST) {
		error_clear(err);
		return 0;
	}
	return r < 0 ? error_prefix(err, "keep the checkpoint") : 0;
}

static int ledger_checkpoint_locked(struct ledger_writer *w, struct error *err)
{
	struct ledger_key key;
	int r = ledger_key_load(w->dir_fd, true, &key, err);
	if (r < 0)
		return r;
	struct ledger_checkpoint old = { 0 };
	bool have_old = ledger_checkpoint_read(w->dir_fd, &key.vkey, &old, err) == 0;
	if (!have_old && faccessat(w->dir_fd, "checkpoint", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		explicit_bzero(&key, sizeof(key));
		return error_prefix(err, "refusing to sign");
	}
	error_clear(err);
	ledger_checkpoint_release(&old);

	cleanup_with(ledger_map_release) struct ledger_map m = { 0 };
	r = ledger_map_fd(w->log_fd, &m, err);
	if (r < 0)
		return r;
	struct ledger_range_cache cache;
	merkle_hash root, old_root;
	size_t end = 0;
	cleanup_close int cfd = openat(w->dir_fd, "range", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool cached = false;
	if (have_old && cfd >= 0 && read(cfd, &cache, sizeof(cache)) == (ssize_t)sizeof(cache) &&
	    memcmp(cache.magic, LEDGER_RANGE_MAGIC, sizeof(LEDGER_RANGE_MAGIC)) == 0 &&
	    cache.range.n <= MERKLE_MAX_PROOF && cache.range.size == old.size &&
	    cache.offset <= m.size) {
		merkle_range_root(&cache.range, root);
		cached = memcmp(root, old.root, MERKLE_HASH_BYTES) == 0;
	}
	if (!cached) {
		memset(&cache, 0, sizeof(cache));
		merkle_range_init(&cache.range);
		cache.offset = 0;
		if (have_old && old.size == 0)
			merkle_empty_root(old_root);
	}
	ledger_hash_lines(&m, (size_t)cache.offset, &cache.range,
			  have_old && !cached ? old.size : 0, have_old && !cached ? old_root : NULL,
			  &end);
	if (have_old && cache.range.size < old.size) {
		explicit_bzero(&key, sizeof(key));
		return error_set(err, EBADMSG, "the log holds %llu entries, fewer than the %llu its last checkpoint signed: tampering; refusing to sign",
				 (unsigned long long)cache.range.size, (unsigned long long)old.size);
	}
	if (have_old && !cached && memcmp(old_root, old.root, MERKLE_HASH_BYTES) != 0) {
		explicit_bzero(&key, sizeof(key));
		return error_set(err, EBADMSG, "the log's first %llu entries are not those its last checkpoint signed: tampering; refusing to sign",
				 (unsigned long long)old.size);
	}
	merkle_range_root(&cache.range, root);
	cleanup_free char *note = ledger_note_sign(&key, cache.range.size, root);
	explicit_bzero(&key, sizeof(key));
	if (!note)
		return error_set(err, EINVAL, "cannot sign the checkpoint");
	(void)unlinkat(w->dir_fd, "checkpoint.new", 0);
	r = file_write_atomic(w->dir_fd, "checkpoint.new", note, strlen(note), 0644, true, err);
	if (r == 0 && renameat(w->dir_fd, "checkpoint.new", w->dir_fd, "checkpoint") < 0)
		r = error_set_errno(err, errno, "install the checkpoint");
	if (r == 0 && fsync(w->dir_fd) < 0)
		r = error_set_errno(err, errno, "sync the ledger directory");
	if (r == 0)
		r = ledger_checkpoint_keep(w->dir_fd, cache.range.size, note, err);
	if (r < 0)
		return r;
	/* The cache needs no fsync: it is checked before use. */
	memcpy(cache.magic, LEDGER_RANGE_MAGIC, sizeof(LEDGER_RANGE_MAGIC));
	cache.offset = end;
	(void)unlinkat(w->dir_fd, "range.new", 0);
	struct error ignored;
	if (file_write_atomic(w->dir_fd, "range.new", &cache, sizeof(cache), 0600, false,
			      &ignored) == 0)
		(void)renameat(w->dir_fd, "range.new", w->dir_fd, "range");
	return 0;
}

int ledger_checkpoint(struct store *store, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;

	int r = ledger_writer_open(store, &w, &lock_fd, err);
	if (r == 0)
		r = ledger_checkpoint_locked(&w, err);
	if (r == 0)
		ledger_index_update(&w);
	ledger_writer_close(&w);
	return r < 0 ? error_prefix(err, "ledger checkpoint") : 0;
}

int ledger_public_key(struct store *store, bool create, char **ret_vkey, struct error *err)
{
	cleanup_close int dir_fd = ledger_dir(store, create, err);
	if (dir_fd == -ENOENT)
		return error_set(err, ENOENT, "the ledger has no key yet");
	if (dir_fd < 0)
		return dir_fd;
	cleanup_close int lock_fd = create ? ledger_lock(dir_fd, LOCK_EX, err) : -1;
	if (create && lock_fd < 0)
		return lock_fd;
	struct ledger_key key;
	int r = ledger_key_load(dir_fd, create, &key, err);
	explicit_bzero(key.seed, sizeof(key.seed));
	if (r < 0)
		return r;
	*ret_vkey = ledger_vkey_format(&key.vkey);
	return *ret_vkey ? 0 : error_set(err, ENOMEM, "out of memory");
}

/* ---- the index ------------------------------------------------------------------ */

/* ledger/index (docs/ledger.md, "The index"): derived from the log, owned
 * here, never trusted on its own. A head page, then an open-addressing hash
 * table from a path to the offset of the log line of its last entry:
 *	head	magic, the boot it was written in, how much of the log it
 *		covers (up to the end of the line at last_off, whose leaf hash
 *		it keeps), the table's size, the gate-open entries no gate-close
 *		has closed yet (offset and id), and a SHA-256 of the head
 *	slots	nslots x { 8 bytes of SHA-256(path), offset + 1 (0: empty) }
 * An appender updates it under the exclusive lock whenever it signs a
 * checkpoint, and never syncs it: a head written in another boot is not trusted (a power
 * loss may have kept some of its pages and not others), nor one whose
 * covered line is not in the log; either is rebuilt from the log by the next
 * append. A reader confirms every hit by parsing the line at the offset, and
 * reads the log after what the index covers itself. */
#define LEDGER_INDEX_MAGIC    "airlock-ledger-index/1"
#define LEDGER_INDEX_HEAD     8192
#define LEDGER_INDEX_OPEN_MAX 480
#define LEDGER_INDEX_SLOTS_MIN 1024

struct ledger_index_open {
	uint64_t off;
	uint64_t id;
};
struct ledger_index_head {
	char magic[24];
	char boot_id[40];
	uint64_t covered; /* the byte after the last line indexed */
	uint64_t last_off; /* where that line starts */
	uint64_t nslots; /* a power of two */
	uint64_t used;
	uint32_t n_open;
	uint32_t open_overflow; /* more open failures than the head holds */
	merkle_hash last_leaf;
	uint8_t sum[SHA256_DIGEST_BYTES]; /* of the head with sum zeroed */
	struct ledger_index_open open[LEDGER_INDEX_OPEN_MAX];
};
_Static_assert(sizeof(struct ledger_index_head) <= LEDGER_INDEX_HEAD, "index head too big");
struct ledger_index_slot {
	uint64_t hash;
	uint64_t off1;
};

static void ledger_boot_id(char ret[40])
{
	cleanup_close int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	memset(ret, 0, 40);
	if (fd < 0 || read(fd, ret, 39) < 0)
		memset(ret, 0, 40);
}

static uint64_t ledger_path_hash(const char *path)
{
	uint8_t d[SHA256_DIGEST_BYTES];
	uint64_t h;

	sha256_raw(path, strlen(path), d);
	memcpy(&h, d, sizeof(h));
	return h;
}

static void ledger_index_sum(const struct ledger_index_head *h, uint8_t ret[SHA256_DIGEST_BYTES])
{
	struct ledger_index_head copy = *h;

	memset(copy.sum, 0, sizeof(copy.sum));
	sha256_raw(&copy, sizeof(copy), ret);
}

/* The end of the log's complete lines. */
static uint64_t ledger_good_end(const struct ledger_map *m)
{
	const char *nl = m->size ? memrchr(m->data, '\n', m->size) : NULL;

	return nl ? (uint64_t)(nl - m->data) + 1 : 0;
}

/* The entry whose line starts at off in m, off being a line start below
 * end: 0, or -EBADMSG when it is not one (or not a valid entry). The byte
 * after its line goes to *ret_next. */
static int ledger_line_at(const struct ledger_map *m, uint64_t off, uint64_t end,
			  struct ledger_entry *ret, uint64_t *ret_next)
{
	struct error ignored;

	if (off >= end || end > m->size || (off > 0 && m->data[off - 1] != '\n'))
		return -EBADMSG;
	const char *line = m->data + off;
	const char *nl = memchr(line, '\n', (size_t)(end - off));
	if (!nl)
		return -EBADMSG;
	if (ret_next)
		*ret_next = (uint64_t)(nl - m->data) + 1;
	return ledger_entry_parse(line, (size_t)(nl - line), ret, &ignored) < 0 ? -EBADMSG : 0;
}

/* Whether head h, of an index file of file_size bytes, may be used with the
 * log m: written in this boot, intact, and what it covers still in the log. */
static bool ledger_index_usable(const struct ledger_index_head *h, uint64_t file_size,
				const struct ledger_map *m, uint64_t good_end)
{
	uint8_t sum[SHA256_DIGEST_BYTES];
	char boot[40];

	if (memcmp(h->magic, LEDGER_INDEX_MAGIC, sizeof(LEDGER_INDEX_MAGIC)) != 0)
		return false;
	ledger_index_sum(h, sum);
	if (memcmp(sum, h->sum, sizeof(sum)) != 0)
		return false;
	ledger_boot_id(boot);
	if (!boot[0] || memcmp(boot, h->boot_id, sizeof(boot)) != 0)
		return false;
	if (h->nslots < LEDGER_INDEX_SLOTS_MIN || (h->nslots & (h->nslots - 1)) ||
	    h->nslots > (UINT64_MAX - LEDGER_INDEX_HEAD) / sizeof(struct ledger_index_slot) ||
	    file_size < LEDGER_INDEX_HEAD + h->nslots * sizeof(struct ledger_index_slot) ||
	    h->used >= h->nslots || h->n_open > LEDGER_INDEX_OPEN_MAX || h->covered > good_end)
		return false;
	if (h->covered == 0)
		return true;
	if (h->last_off >= h->covered || m->data[h->covered - 1] != '\n' ||
	    (h->last_off > 0 && m->data[h->last_off - 1] != '\n') ||
	    memchr(m->data + h->last_off, '\n', (size_t)(h->covered - 1 - h->last_off)))
		return false;
	merkle_hash leaf;
	merkle_leaf_hash(m->data + h->last_off, (size_t)(h->covered - 1 - h->last_off), leaf);
	return memcmp(leaf, h->last_leaf, MERKLE_HASH_BYTES) == 0;
}

/* The index mapped: read-only for a reader, shared and writable for the
 * appender. */
struct ledger_index {
	int fd;
	char *data;
	size_t size;
	struct ledger_index_head *head;
	struct ledger_index_slot *slots;
	bool is_new; /* index.new, to be renamed over index */
};

static void ledger_index_release(struct ledger_index *x)
{
	if (x->data)
		munmap(x->data, x->size);
	if (x->fd >= 0)
		close(x->fd);
	*x = (struct ledger_index){ .fd = -1 };
}

static int ledger_index_map(int fd, bool writable, struct ledger_index *ret)
{
	struct stat st;

	*ret = (struct ledger_index){ .fd = fd };
	if (fstat(fd, &st) < 0 || st.st_size < LEDGER_INDEX_HEAD)
		return -EBADMSG;
	void *p = mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		       writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ret->data = p;
	ret->size = (size_t)st.st_size;
	ret->head = p;
	ret->slots = (struct ledger_index_slot *)(ret->data + LEDGER_INDEX_HEAD);
	return 0;
}

/* Opens the index for reading, when it may be used with the log m. */
static bool ledger_index_open_usable(int dir_fd, const struct ledger_map *m, uint64_t good_end,
				     struct ledger_index *ret)
{
	*ret = (struct ledger_index){ .fd = -1 };
	int fd = openat(dir_fd, "index", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (ledger_index_map(fd, false, ret) < 0 ||
	    !ledger_index_usable(ret->head, ret->size, m, good_end)) {
		ledger_index_release(ret);
		return false;
	}
	return true;
}

/* The slot of hash h: its own, or the empty one where it goes. */
static struct ledger_index_slot *ledger_index_probe(const struct ledger_index *x, uint64_t h)
{
	uint64_t mask = x->head->nslots - 1;

	for (uint64_t i = h & mask, k = 0; k < x->head->nslots; i = (i + 1) & mask, k++)
		if (x->slots[i].off1 == 0 || x->slots[i].hash == h)
			return &x->slots[i];
	return NULL;
}

/* ---- the index: the appender's side ---- */

/* A new empty index in index.new with nslots slots, mapped. */
static int ledger_index_create(int dir_fd, uint64_t nslots, struct ledger_index *ret)
{
	*ret = (struct ledger_index){ .fd = -1 };
	(void)unlinkat(dir_fd, "index.new", 0);
	int fd = openat(dir_fd, "index.new", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(LEDGER_INDEX_HEAD + nslots * sizeof(struct ledger_index_slot))) <
	    0) {
		int e = errno;
		close(fd);
		return -e;
	}
	int r = ledger_index_map(fd, true, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	memcpy(ret->head->magic, LEDGER_INDEX_MAGIC, sizeof(LEDGER_INDEX_MAGIC));
	ledger_boot_id(ret->head->boot_id);
	ret->head->nslots = nslots;
	ret->is_new = true;
	return 0;
}

/* Doubles the table into index.new; *x becomes the new one. */
static int ledger_index_grow(int dir_fd, struct ledger_index *x)
{
	struct ledger_index bigger;
	int r = ledger_index_create(dir_fd, 2 * x->head->nslots, &bigger);
	if (r < 0)
		return r;
	uint64_t nslots = bigger.head->nslots;
	memcpy(bigger.head, x->head, sizeof(*x->head));
	bigger.head->nslots = nslots;
	for (uint64_t i = 0; i < x->head->nslots; i++)
		if (x->slots[i].off1)
			*ledger_index_probe(&bigger, x->slots[i].hash) = x->slots[i];
	ledger_index_release(x);
	*x = bigger;
	return 0;
}

/* Adds the entries of the lines of m in [x->head->covered, good_end). */
static int ledger_index_add_lines(int dir_fd, struct ledger_index *x, const struct ledger_map *m,
				  uint64_t good_end)
{
	struct ledger_index_head *h;

	for (uint64_t off = x->head->covered, next; off < good_end; off = next) {
		struct ledger_entry e;
		const char *nl = memchr(m->data + off, '\n', (size_t)(good_end - off));
		next = (uint64_t)(nl - m->data) + 1;
		if (2 * (x->head->used + 1) > x->head->nslots) {
			int r = ledger_index_grow(dir_fd, x);
			if (r < 0)
				return r;
		}
		h = x->head;
		/* A line that is not an entry backs nothing; verify reports it. */
		if (ledger_line_at(m, off, good_end, &e, NULL) == 0) {
			struct ledger_index_slot *s = ledger_index_probe(x, ledger_path_hash(e.path));
			if (!s)
				return -EBADMSG; /* full: a head that lies about its slots */
			if (s->off1 == 0)
				h->used++;
			*s = (struct ledger_index_slot){ ledger_path_hash(e.path), off + 1 };
			uint64_t id;
			if ((e.kind == LEDGER_GATE_OPEN || e.kind == LEDGER_GATE_CLOSE) &&
			    parse_u64(e.id, &id) == 0) {
				for (uint32_t i = 0; e.kind == LEDGER_GATE_CLOSE && i < h->n_open; i++)
					if (h->open[i].id == id)
						h->open[i--] = h->open[--h->n_open];
				if (e.kind == LEDGER_GATE_OPEN && h->n_open < LEDGER_INDEX_OPEN_MAX)
					h->open[h->n_open++] = (struct ledger_index_open){ off, id };
				else if (e.kind == LEDGER_GATE_OPEN)
					h->open_overflow = 1;
			}
		}
		h->last_off = off;
		merkle_leaf_hash(m->data + off, (size_t)(next - 1 - off), h->last_leaf);
		h->covered = next;
	}
	return 0;
}

/* Under the exclusive lock, when a checkpoint is signed: brings the index
 * up to the log's end, rebuilding it when it is missing, from another boot, damaged
 * or not about this log. Best effort: the index is derived, and a reader
 * that cannot use it scans the log. */
static void ledger_index_update(struct ledger_writer *w)
{
	cleanup_with(ledger_map_release) struct ledger_map m = { 0 };
	struct error ignored;
	struct ledger_index x = { .fd = -1 };

	if (ledger_map_fd(w->log_fd, &m, &ignored) < 0)
		return;
	uint64_t good_end = ledger_good_end(&m);
	int fd = openat(w->dir_fd, "index", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && (ledger_index_map(fd, true, &x) < 0 ||
			!ledger_index_usable(x.head, x.size, &m, good_end))) {
		ledger_index_release(&x);
		fd = -1;
	}
	if (fd < 0 && ledger_index_create(w->dir_fd, LEDGER_INDEX_SLOTS_MIN, &x) < 0)
		return;
	if (ledger_index_add_lines(w->dir_fd, &x, &m, good_end) == 0) {
		/* The head last, after the slots it vouches for. */
		ledger_index_sum(x.head, x.head->sum);
		if (x.is_new)
			(void)renameat(w->dir_fd, "index.new", w->dir_fd, "index");
	} else if (!x.is_new) {
		/* Not to be used, and rebuilt by the next update. */
		memset(x.head->magic, 0, sizeof(x.head->magic));
	}
	ledger_index_release(&x);
}

/* ---- backing ------------------------------------------------------------------ */

/* The whole log mapped under the shared lock, with the ledger's directory:
 * a reader's view. -ENOENT when there is no ledger or no log. */
struct ledger_reader {
	int dir_fd;
	int lock_fd;
	struct ledger_map map;
	uint64_t good_end;
};

static void ledger_reader_close(struct ledger_reader *r)
{
	ledger_map_release(&r->map);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	*r = (struct ledger_reader){ .dir_fd = -1, .lock_fd = -1 };
}

static int ledger_reader_open(struct store *store, struct ledger_reader *ret, struct error *err)
{
	*ret = (struct ledger_reader){ .dir_fd = -1, .lock_fd = -1 };
	int r = ledger_dir(store, false, err);
	if (r < 0)
		return r;
	ret->dir_fd = r;
	r = ledger_lock(ret->dir_fd, LOCK_SH, err);
	if (r < 0)
		return r;
	ret->lock_fd = r;
	cleanup_close int fd = openat(ret->dir_fd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : error_set_errno(err, errno, "open the ledger");
	r = ledger_map_fd(fd, &ret->map, err);
	if (r < 0)
		return r;
	ret->good_end = ledger_good_end(&ret->map);
	return 0;
}

/* The last entry for path among the lines of the log in [from, end). */
static bool ledger_scan_path(const struct ledger_map *m, uint64_t from, uint64_t end,
			     const char *path, struct ledger_entry *ret)
{
	/* The path is JSON-escaped as jansson writes it; a clean path has no
	 * character that needs escaping but '/', which jansson leaves alone. */
	char needle[LEDGER_PATH_MAX + 16];
	snprintf(needle, sizeof(needle), "\"path\":\"%s\"", path);
	size_t nn = strlen(needle);
	bool have = false;
	for (const char *p = m->data + from, *stop = m->data + end; p < stop;) {
		const char *hit = memmem(p, (size_t)(stop - p), needle, nn);
		if (!hit)
			break;
		const char *start = hit;
		while (start > m->data + from && start[-1] != '\n')
			start--;
		const char *nl = memchr(hit, '\n', (size_t)(stop - hit));
		if (!nl)
			break;
		struct ledger_entry e;
		struct error ignored;
		if (ledger_entry_parse(start, (size_t)(nl - start), &e, &ignored) == 0 &&
		    strcmp(e.path, path) == 0) {
			*ret = e;
			have = true;
		}
		p = nl + 1;
	}
	return have;
}

/* The log's last entry for path: from the index (each hit confirmed in the
 * log) and the lines after what it covers, or from a scan of the whole log
 * when the index cannot be used. */
static bool ledger_last_for_path(const struct ledger_reader *rd, const char *path,
				 struct ledger_entry *ret)
{
	struct ledger_index x;
	uint64_t from = 0;
	bool have = false;

	if (ledger_index_open_usable(rd->dir_fd, &rd->map, rd->good_end, &x)) {
		uint64_t h = ledger_path_hash(path), mask = x.head->nslots - 1;
		for (uint64_t i = h & mask, k = 0; k < x.head->nslots && x.slots[i].off1;
		     i = (i + 1) & mask, k++) {
			struct ledger_entry e;
			if (x.slots[i].hash == h &&
			    ledger_line_at(&rd->map, x.slots[i].off1 - 1, x.head->covered, &e, NULL) == 0 &&
			    strcmp(e.path, path) == 0) {
				*ret = e;
				have = true;
				break;
			}
		}
		from = x.head->covered;
		ledger_index_release(&x);
	}
	return ledger_scan_path(&rd->map, from, rd->good_end, path, ret) || have;
}

int ledger_backs(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		 const char sha256[SHA256_HEX_SIZE], struct error *err)
{
	struct ledger_reader rd;
	struct ledger_entry found;

	int r = ledger_reader_open(store, &rd, err);
	bool have = r == 0 && ledger_last_for_path(&rd, path, &found);
	ledger_reader_close(&rd);
	if (r < 0)
		return r;
	if (!have)
		return -ENOENT;
	if ((kind != LEDGER_KIND_MAX && found.kind != kind) || (id && strcmp(found.id, id) != 0) ||
	    strcmp(found.sha256, sha256) != 0)
		return -EBADMSG;
	return 0;
}

/* Applies the gate entries of the lines in [from, end) to the open ids. */
static int ledger_scan_open(const struct ledger_map *m, uint64_t from, uint64_t end,
			    const char *dir_prefix, uint64_t **ids, size_t *n, size_t *cap,
			    struct error *err)
{
	static const char needle[] = "\"kind\":\"gate-";
	for (const char *p = m->data + from, *stop = m->data + end; p < stop;) {
		const char *hit = memmem(p, (size_t)(stop - p), needle, sizeof(needle) - 1);
		if (!hit)
			break;
		const char *start = hit;
		while (start > m->data + from && start[-1] != '\n')
			start--;
		const char *nl = memchr(hit, '\n', (size_t)(stop - hit));
		if (!nl)
			break;
		p = nl + 1;
		struct ledger_entry e;
		struct error ignored;
		uint64_t id;
		if (ledger_entry_parse(start, (size_t)(nl - start), &e, &ignored) < 0 ||
		    parse_u64(e.id, &id) < 0)
			continue;
		if (e.kind == LEDGER_GATE_CLOSE) {
			for (size_t i = 0; i < *n; i++)
				if ((*ids)[i] == id)
					(*ids)[i--] = (*ids)[--*n];
		} else if (e.kind == LEDGER_GATE_OPEN &&
			   strncmp(e.path, dir_prefix, strlen(dir_prefix)) == 0) {
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : 16;
				uint64_t *more = reallocarray(*ids, *cap, sizeof(*more));
				if (!more)
					return error_set(err, ENOMEM, "out of memory");
				*ids = more;
			}
			(*ids)[(*n)++] = id;
		}
	}
	return 0;
}

int ledger_open_failures(struct store *store, const char *dir_prefix, uint64_t **ret_ids,
			 size_t *ret_n, struct error *err)
{
	*ret_ids = NULL;
	*ret_n = 0;
	struct ledger_reader rd;
	int r = ledger_reader_open(store, &rd, err);
	if (r < 0) {
		ledger_reader_close(&rd);
		return r;
	}
	cleanup_free uint64_t *ids = NULL;
	size_t n = 0, cap = 0;
	uint64_t from = 0;
	struct ledger_index x;
	if (ledger_index_open_usable(rd.dir_fd, &rd.map, rd.good_end, &x)) {
		/* Each open entry the index names is confirmed in the log. */
		for (uint32_t i = 0; !x.head->open_overflow && i < x.head->n_open; i++) {
			struct ledger_entry e;
			uint64_t id;
			if (ledger_line_at(&rd.map, x.head->open[i].off, x.head->covered, &e, NULL) < 0 ||
			    e.kind != LEDGER_GATE_OPEN || parse_u64(e.id, &id) < 0 ||
			    id != x.head->open[i].id ||
			    strncmp(e.path, dir_prefix, strlen(dir_prefix)) != 0)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				uint64_t *more = reallocarray(ids, cap, sizeof(*more));
				if (!more) {
					ledger_index_release(&x);
					ledger_reader_close(&rd);
					return error_set(err, ENOMEM, "out of memory");
				}
				ids = more;
			}
			ids[n++] = id;
		}
		if (!x.head->open_overflow)
			from = x.head->covered;
		ledger_index_release(&x);
	}
	r = ledger_scan_open(&rd.map, from, rd.good_end, dir_prefix, &ids, &n, &cap, err);
	ledger_reader_close(&rd);
	if (r < 0)
		return r;
	*ret_ids = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

static int ledger_file_digest(struct store *store, const char *path, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
					      : fd_open_beneath(store->dir_fd, path, O_RDONLY);
	if (fd < 0)
		return path[0] == '/' ? -errno : fd;
	return sha256_fd_hex(fd, hex);
}

int ledger_backs_file(struct store *store, enum ledger_kind kind, const char *id,
		      const char *path, struct error *err)
{
	char hex[SHA256_HEX_SIZE];
	int r = ledger_file_digest(store, path, hex);

	if (r < 0)
		return error_set_errno(err, -r, "read %s", path);
	return ledger_backs(store, kind, id, path, hex, err);
}

int ledger_require(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		   int errnum, const char *what, const char *why, const char *refusal,
		   struct error *err)
{
	int r = ledger_backs_file(store, kind, id, path, err);
	if (r == 0)
		return 0;
	return error_set(err, errnum,
			 "the ledger does not back %s (%s): %s; `airlock ledger verify` says more",
			 what, why ? why : r == -EBADMSG ? "rewritten" : "never committed", refusal);
}

/* ---- loading and verifying --------------------------------------------------- */

struct ledger_log {
	struct ledger_map map;
	size_t n; /* complete, valid entries */
	size_t *offsets; /* of each entry's line */
	merkle_hash *leaves;
	size_t good_end; /* the byte after the last complete line */
	bool corrupt; /* a complete line that is not a valid entry */
	char why[300];
};

static void ledger_log_release(struct ledger_log *l)
{
	ledger_map_release(&l->map);
	free(l->offsets);
	free(l->leaves);
	*l = (struct ledger_log){ 0 };
}

/* Reads every complete line; stops at the first that is not a valid entry
 * with the next seq (l->corrupt). */
static int ledger_log_load(int dir_fd, struct ledger_log *l, struct error *err)
{
	*l = (struct ledger_log){ 0 };
	cleanup_close int fd = openat(dir_fd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger");
	int r = ledger_map_fd(fd, &l->map, err);
	if (r < 0)
		return r;
	size_t cap = 0;
	for (size_t pos = 0; pos < l->map.size;) {
		const char *line = l->map.data + pos;
		const char *nl = memchr(line, '\n', l->map.size - pos);
		if (!nl)
			break;
		struct ledger_entry e;
		struct error why = { 0 };
		if (ledger_entry_parse(line, (size_t)(nl - line), &e, &why) < 0) {
			l->corrupt = true;
			snprintf(l->why, sizeof(l->why), "entry %zu is not valid: %.250s", l->n,
				 why.msg);
			break;
		}
		if (e.seq != l->n) {
			l->corrupt = true;
			snprintf(l->why, sizeof(l->why),
				 "entry %zu has seq %llu: entries were deleted, reordered or replayed",
				 l->n, (unsigned long long)e.seq);
			break;
		}
		if (l->n == cap) {
			cap = cap ? 2 * cap : 1024;
			size_t *o = reallocarray(l->offsets, cap, sizeof(*o));
			if (o)
				l->offsets = o;
			merkle_hash *h = reallocarray(l->leaves, cap, sizeof(*h));
			if (h)
				l->leaves = h;
			if (!o || !h)
				return error_set(err, ENOMEM, "out of memory");
		}
		l->offsets[l->n] = pos;
		merkle_leaf_hash(line, (size_t)(nl - line), l->leaves[l->n]);
		l->n++;
		pos = (size_t)(nl - l->map.data) + 1;
		l->good_end = pos;
	}
	return 0;
}

static void ledger_log_entry(const struct ledger_log *l, size_t i, struct ledger_entry *ret)
{
	const char *line = l->map.data + l->offsets[i];
	const char *nl = memchr(line, '\n', l->map.size - l->offsets[i]);
	struct error ignored;

	(void)ledger_entry_parse(line, (size_t)(nl - line), ret, &ignored);
}

void ledger_report_release(struct ledger_report *r)
{
	free(r->findings);
	*r = (struct ledger_report){ 0 };
}

static void ledger_report_add(struct ledger_report *r, enum ledger_finding_type type,
			      const char *fmt, ...) _printf_(3, 4);
static void ledger_report_add(struct ledger_report *r, enum ledger_finding_type type,
			      const char *fmt, ...)
{
	va_list ap;

	if (r->n_findings >= LEDGER_MAX_FINDINGS)
		return;
	if ((r->n_findings & (r->n_findings + 1)) == 0 || r->n_findings == 0) {
		struct ledger_finding *f =
			reallocarray(r->findings, 2 * r->n_findings + 2, sizeof(*f));
		if (!f)
			return;
		r->findings = f;
	}
	struct ledger_finding *f = &r->findings[r->n_findings++];
	f->type = type;
	va_start(ap, fmt);
	vsnprintf(f->what, sizeof(f->what), fmt, ap);
	va_end(ap);
}

static void ledger_report_unbacked(struct ledger_report *rep, const char *path)
{
	ledger_report_add(rep, LEDGER_FINDING_UNBACKED, "%s: not committed by the ledger", path);
	if (rep->n_findings > 0 && rep->findings[rep->n_findings - 1].type == LEDGER_FINDING_UNBACKED)
		snprintf(rep->findings[rep->n_findings - 1].path,
			 sizeof(rep->findings[0].path), "%s", path);
}

/* Records whose paths the ledger does not name. */
static void ledger_find_unbacked_in(struct store *store, json_t *paths, const char *dir,
				    const char *suffix, struct ledger_report *rep)
{
	cleanup_close int fd = fd_open_beneath(store->dir_fd, dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d)
		return;
	fd = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), s = strlen(suffix);
		if (de->d_name[0] == '.' || n <= s || strcmp(de->d_name + n - s, suffix) != 0)
			continue;
		char path[LEDGER_PATH_MAX + 1];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!json_object_get(paths, path))
			ledger_report_unbacked(rep, path);
	}
	closedir(d);
}

static void ledger_find_unbacked(struct store *store, json_t *paths, struct ledger_report *rep)
{
	ledger_find_unbacked_in(store, paths, "receipts", ".json", rep);
	ledger_find_unbacked_in(store, paths, "gate/closed", ".json", rep);
	/* Permit records, when they are kept as permits/<id>.json. */
	ledger_find_unbacked_in(store, paths, "permits", ".json", rep);
	/* Policy approvals (core/gate/policyapproval.h): a forged one is reported. */
	ledger_find_unbacked_in(store, paths, "policies", ".json", rep);
	if (!json_object_get(paths, "approver.json") &&
	    faccessat(store->dir_fd, "approver.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		ledger_report_unbacked(rep, "approver.json");
	const char *subdirs[] = { "gate/open", "dryruns" };
	for (size_t k = 0; k < 2; k++) {
		cleanup_close int fd = fd_open_beneath(store->dir_fd, subdirs[k], O_RDONLY | O_DIRECTORY);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d)
			continue;
		fd = -1;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char sub[LEDGER_PATH_MAX + 1];
			snprintf(sub, sizeof(sub), "%s/%s", subdirs[k], de->d_name);
			if (k == 0) {
				ledger_find_unbacked_in(store, paths, sub, ".json", rep);
				continue;
			}
			char path[LEDGER_PATH_MAX + 32];
			snprintf(path, sizeof(path), "%s/changeset.json", sub);
			if (!json_object_get(paths, path) &&
			    faccessat(store->dir_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
				ledger_report_unbacked(rep, path);
			snprintf(path, sizeof(path), "%s/state", sub);
			if (!json_object_get(paths, path) &&
			    faccessat(store->dir_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
				ledger_report_unbacked(rep, path);
		}
		closedir(d);
	}
}

/* The state directory against the ledger: each path's last entry must
 * match the file's bytes, but for an open failure since closed, and a dry
 * run since discarded. */
static int ledger_reconcile(struct store *store, const struct ledger_log *l,
			    struct ledger_report *rep, struct error *err)
{
	cleanup_with(json_decrefp) json_t *paths = json_object();
	cleanup_with(json_decrefp) json_t *closed = json_object();
	cleanup_with(json_decrefp) json_t *discarded = json_object();
	if (!paths || !closed || !discarded)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++) {
		struct ledger_entry e;
		ledger_log_entry(l, i, &e);
		if (json_object_set_new(paths, e.path, json_integer((json_int_t)i)) < 0)
			return error_set(err, ENOMEM, "out of memory");
		if (e.kind == LEDGER_GATE_CLOSE)
			json_object_set_new(closed, e.id, json_true());
		if (e.kind == LEDGER_DISCARD)
			json_object_set_new(discarded, e.path, json_true());
	}
	const char *path;
	json_t *v;
	json_object_foreach(paths, path, v) {
		struct ledger_entry e;
		size_t i = (size_t)json_integer_value(v);
		ledger_log_entry(l, i, &e);
		if (e.kind == LEDGER_DISCARD || e.kind == LEDGER_RECOVERED)
			continue;
		if (strncmp(path, "dryruns/", 8) == 0) {
			char dir[LEDGER_PATH_MAX + 1];
			snprintf(dir, sizeof(dir), "%s", path);
			char *slash = strchr(dir + 8, '/');
			if (slash)
				*slash = '\0';
			if (json_object_get(discarded, dir))
				continue;
		}
		char hex[SHA256_HEX_SIZE];
		int r = ledger_file_digest(store, path, hex);
		if (r == -ENOENT) {
			if (e.kind == LEDGER_GATE_OPEN && json_object_get(closed, e.id))
				continue;
			ledger_report_add(rep, LEDGER_FINDING_MISSING,
					  "%s: %s %s committed by entry %zu is missing", path,
					  ledger_kind_name(e.kind), e.id, i);
		} else if (r < 0) {
			ledger_report_add(rep, LEDGER_FINDING_MISSING, "%s: cannot read: %s", path,
					  strerror(-r));
		} else if (strcmp(hex, e.sha256) != 0) {
			ledger_report_add(rep, LEDGER_FINDING_DIFFERS,
					  "%s: %s %s differs from what entry %zu committed", path,
					  ledger_kind_name(e.kind), e.id, i);
		}
	}
	ledger_find_unbacked(store, paths, rep);
	return 0;
}

int ledger_verify(struct store *store, const struct ledger_vkey *vkey, const char *old_checkpoint,
		  size_t old_n, struct ledger_report *ret, struct error *err)
{
	*ret = (struct ledger_report){ 0 };
	cleanup_close int dir_fd = ledger_dir(store, false, err);
	if (dir_fd < 0 && dir_fd != -ENOENT)
		return dir_fd;
	cleanup_close int lock_fd = dir_fd >= 0 ? ledger_lock(dir_fd, LOCK_SH, err) : -1;
	if (dir_fd >= 0 && lock_fd < 0)
		return lock_fd;
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	int r = dir_fd >= 0 ? ledger_log_load(dir_fd, &l, err) : 0;
	if (r < 0)
		return r;
	ret->size = l.n;
	merkle_root(l.leaves, l.n, ret->root);
	if (l.corrupt)
		ledger_report_add(ret, LEDGER_FINDING_TAMPERED, "%s", l.why);

	struct ledger_checkpoint cp = { 0 };
	struct error cerr = { 0 };
	r = dir_fd >= 0 ? ledger_checkpoint_read(dir_fd, vkey, &cp, &cerr) : -ENOENT;
	if (r == -ENOENT) {
		if (l.n > 0 || (l.map.size > 0))
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the ledger has entries but no checkpoint");
	} else if (r < 0) {
		ledger_report_add(ret, LEDGER_FINDING_TAMPERED, "%s", cerr.msg);
	} else {
		ret->checkpoint_size = cp.size;
		merkle_hash at;
		if (cp.size > l.n) {
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the checkpoint signs %llu entries, the log holds %zu valid ones: truncated or rewritten",
					  (unsigned long long)cp.size, l.n);
		} else {
			merkle_root(l.leaves, cp.size, at);
			if (memcmp(at, cp.root, MERKLE_HASH_BYTES) != 0)
				ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
						  "the first %llu entries are not those the checkpoint signed: rewritten",
						  (unsigned long long)cp.size);
			ret->unsigned_entries = l.n - cp.size;
		}
	}
	if (old_checkpoint) {
		struct ledger_checkpoint old;
		struct error oerr = { 0 };
		if (ledger_checkpoint_parse(old_checkpoint, old_n, vkey, &old, &oerr) < 0) {
			ledger_checkpoint_release(&cp);
			return error_prefix(&oerr, "the checkpoint given"), *err = oerr, -EINVAL;
		}
		merkle_hash at;
		if (old.size > l.n) {
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the checkpoint given signs %llu entries, the log holds %zu: truncated",
					  (unsigned long long)old.size, l.n);
		} else {
			merkle_root(l.leaves, old.size, at);
			if (memcmp(at, old.root, MERKLE_HASH_BYTES) != 0)
				ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
						  "the log does not extend the checkpoint given (size %llu): rewritten",
						  (unsigned long long)old.size);
		}
		if (r == 0 && old.size > cp.size)
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the ledger's checkpoint (size %llu) is older than the one given (size %llu): rolled back",
					  (unsigned long long)cp.size, (unsigned long long)old.size);
		ledger_checkpoint_release(&old);
	}
	if (!l.corrupt && l.good_end < l.map.size) {
		if (l.n >= cp.size)
			ledger_report_add(ret, LEDGER_FINDING_TORN,
					  "%zu bytes after entry %zu are a torn tail (a crash mid-append): `airlock ledger recover` moves them aside",
					  l.map.size - l.good_end, l.n);
	}
	ledger_checkpoint_release(&cp);
	return ledger_reconcile(store, &l, ret, err);
}

/* Under the writer's lock: what no entry backs is adopted (an open
 * failure) or moved aside, each with its entry. */
static int ledger_recover_unbacked(struct ledger_writer *w, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	struct ledger_report rep = { 0 };
	int r = ledger_log_load(w->dir_fd, &l, err);
	if (r == 0)
		r = ledger_reconcile(w->store, &l, &rep, err);
	for (size_t i = 0; r == 0 && i < rep.n_findings; i++) {
		const char *path = rep.findings[i].path;
		char hex[SHA256_HEX_SIZE], id[LEDGER_ID_MAX + 1];
		if (rep.findings[i].type != LEDGER_FINDING_UNBACKED || !path[0])
			continue;
		if (ledger_file_digest(w->store, path, hex) < 0)
			continue; /* gone meanwhile */
		const char *base = strrchr(path, '/');
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(base ? base + 1 : path, "."),
			 base ? base + 1 : path);
		if (strncmp(path, "gate/open/", 10) == 0) {
			r = ledger_append_locked(w, LEDGER_GATE_OPEN, id, path, hex, NULL, err);
			continue;
		}
		char aside[LEDGER_PATH_MAX + 64];
		snprintf(aside, sizeof(aside), LEDGER_DIR "/uncommitted/%s", path);
		for (char *slash = strchr(aside, '/'); slash; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			(void)mkdirat(w->store->dir_fd, aside, 0700);
			*slash = '/';
		}
		if (renameat(w->store->dir_fd, path, w->store->dir_fd, aside) < 0) {
			r = error_set_errno(err, errno, "move %s aside", path);
			break;
		}
		if (!ledger_id_ok(id))
			snprintf(id, sizeof(id), "uncommitted");
		r = ledger_append_locked(w, LEDGER_RECOVERED, id, aside, hex, NULL, err);
	}
	ledger_report_release(&rep);
	return r;
}

int ledger_recover(struct store *store, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;

	int r = ledger_writer_open(store, &w, &lock_fd, err);
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	if (r == 0)
		r = ledger_log_load(w.dir_fd, &l, err);
	if (r == 0 && l.corrupt)
		r = error_set(err, EBADMSG, "%s: not repaired automatically (see `airlock ledger verify`)",
			      l.why);
	if (r == 0 && faccessat(w.dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		char hex[SHA256_HEX_SIZE];
		cleanup_free char *text = NULL;
		size_t n = 0;
		struct error ignored;
		(void)file_read_capped(w.dir_fd, "poisoned", 4096, &text, &n, &ignored);
		sha256_hex(text ? text : "", n, hex);
		/* The file stays, renamed, as the evidence the entry names. */
		char name[96];
		snprintf(name, sizeof(name), "poisoned.%llu", (unsigned long long)l.n);
		if (renameat(w.dir_fd, "poisoned", w.dir_fd, name) < 0)
			r = error_set_errno(err, errno, "clear the poisoned mark");
		char path[128];
		snprintf(path, sizeof(path), LEDGER_DIR "/%s", name);
		if (r == 0)
			r = ledger_append_locked(&w, LEDGER_RECOVERED, "poisoned", path, hex, NULL,
						 err);
	} else if (r == 0 && l.good_end < l.map.size) {
		/* ledger_append_locked() moves a torn tail aside before it appends;
		 * here there is nothing else to append. */
		struct ledger_tail t;
		r = ledger_tail_read(w.log_fd, &t, err);
		if (r == 0)
			r = ledger_quarantine_tail(&w, &t, err);
	}
	if (r == 0)
		r = ledger_recover_unbacked(&w, err);
	if (r == 0)
		r = ledger_checkpoint_locked(&w, err);
	ledger_index_update(&w);
	ledger_writer_close(&w);
	return r < 0 ? error_prefix(err, "ledger recover") : 0;
}

/* ---- proofs -------------------------------------------------------------------- */

static int ledger_load_signed(struct store *store, struct ledger_log *l,
			      struct ledger_checkpoint *cp, struct error *err)
{
	cleanup_close int dir_fd = ledger_dir(store, false, err);
	if (dir_fd == -ENOENT)
		return error_set(err, ENOENT, "there is no ledger");
	if (dir_fd < 0)
		return dir_fd;
	cleanup_close int lock_fd = ledger_lock(dir_fd, LOCK_SH, err);
	if (lock_fd < 0)
		return lock_fd;
	int r = ledger_log_load(dir_fd, l, err);
	if (r < 0)
		return r;
	r = ledger_checkpoint_read(dir_fd, NULL, cp, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "the ledger has no checkpoint yet");
	if (r < 0)
		return r;
	if (cp->size > l->n)
		return error_set(err, EBADMSG, "the checkpoint signs more entries than the log holds");
	return 0;
}

static char *ledger_hashes_text(merkle_hash *h, size_t n)
{
	size_t cap = n * 46 + 1, len = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *b64 = base64_encode(h[i], MERKLE_HASH_BYTES);
		if (!b64) {
			free(out);
			return NULL;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s\n", b64);
	}
	return out;
}

int ledger_prove(struct store *store, const char *what, char **ret_text, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	struct ledger_checkpoint cp = { 0 };
	int r = ledger_load_signed(store, &l, &cp, err);
	if (r < 0) {
		ledger_checkpoint_release(&cp);
		return r;
	}
	uint64_t index = UINT64_MAX;
	if (parse_u64(what, &index) < 0) {
		const char *colon = strchr(what, ':');
		char kind[32];
		snprintf(kind, sizeof(kind), "%.*s", colon ? (int)(colon - what) : 0, what);
		int k = colon ? ledger_kind_from_name(kind) : -EINVAL;
		if (k < 0) {
			ledger_checkpoint_release(&cp);
			return error_set(err, EINVAL, "'%s' is neither an index nor KIND:ID", what);
		}
		for (size_t i = l.n; i > 0; i--) {
			struct ledger_entry e;
			ledger_log_entry(&l, i - 1, &e);
			if ((int)e.kind == k && strcmp(e.id, colon + 1) == 0) {
				index = i - 1;
				break;
			}
		}
	}
	if (index >= l.n) {
		ledger_checkpoint_release(&cp);
		return error_set(err, ENOENT, "no ledger entry %s", what);
	}
	if (index >= cp.size) {
		ledger_checkpoint_release(&cp);
		return error_set(err, EAGAIN, "entry %llu is after the latest checkpoint (size %llu): run `airlock ledger checkpoint` first",
				 (unsigned long long)index, (unsigned long long)cp.size);
	}
	merkle_hash proof[MERKLE_MAX_PROOF];
	size_t n;
	(void)merkle_inclusion_proof(l.leaves, cp.size, index, proof, &n);
	const char *line = l.map.data + l.offsets[index];
	const char *nl = memchr(line, '\n', l.map.size - l.offsets[index]);
	cleanup_free char *extra = base64_encode(line, (size_t)(nl - line));
	cleanup_free char *hashes = ledger_hashes_text(proof, n);
	r = !extra || !hashes ||
		    asprintf(ret_text, "c2sp.org/tlog-proof@v1\nextra %s\nindex %llu\n%s\n%s", extra,
			     (unsigned long long)index, hashes, cp.text) < 0
		    ? error_set(err, ENOMEM, "out of memory")
		    : 0;
	ledger_checkpoint_release(&cp);
	return r;
}

/* The kept checkpoint of this size, which the log l must extend. */
static int ledger_checkpoint_kept(struct store *store, const struct ledger_log *l, uint64_t size,
				  struct ledger_checkpoint *ret, struct error *err)
{
	char name[64];
	cleanup_free char *text = NULL;
	size_t n;

	snprintf(name, sizeof(name), LEDGER_DIR "/checkpoints/%llu", (unsigned long long)size);
	int r = file_read_capped(store->dir_fd, name, LEDGER_NOTE_MAX, &text, &n, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no checkpoint of size %llu is kept",
				 (unsigned long long)size);
	if (r < 0)
		return r;
	r = ledger_checkpoint_parse(text, n, NULL, ret, err);
	if (r < 0)
		return error_prefix(err, "%s", name);
	merkle_hash root;
	if (ret->size != size || size > l->n ||
	    (merkle_root(l->leaves, size, root), memcmp(root, ret->root, MERKLE_HASH_BYTES) != 0))
		return error_set(err, EBADMSG, "the log does not extend its kept checkpoint of size %llu: tampering (see `airlock ledger verify`)",
				 (unsigned long long)size);
	return 0;
}

int ledger_prove_consistency(struct store *store, uint64_t old, uint64_t new_size,
			     char **ret_text, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	struct ledger_checkpoint cp = { 0 };
	int r = ledger_load_signed(store, &l, &cp, err);
	if (r == 0 && new_size && new_size != cp.size) {
		ledger_checkpoint_release(&cp);
		r = ledger_checkpoint_kept(store, &l, new_size, &cp, err);
	}
	if (r == 0 && (old == 0 || old > cp.size))
		r = error_set(err, EINVAL, "the old size must be 1..%llu (the new checkpoint)",
			      (unsigned long long)cp.size);
	merkle_hash proof[MERKLE_MAX_PROOF];
	size_t n = 0;
	if (r == 0)
		(void)merkle_consistency_proof(l.leaves, cp.size, old, proof, &n);
	cleanup_free char *hashes = r == 0 ? ledger_hashes_text(proof, n) : NULL;
	if (r == 0 && (!hashes || asprintf(ret_text, "airlock.ledger/consistency@v1\nold %llu\n%s\n%s",
					   (unsigned long long)old, hashes, cp.text) < 0))
		r = error_set(err, ENOMEM, "out of memory");
	ledger_checkpoint_release(&cp);
	return r;
}

int ledger_verify_proof(const char *proof, size_t n, const struct ledger_vkey *vkey,
			const char *old_checkpoint, size_t old_n,
			const char record_sha256[SHA256_HEX_SIZE], struct ledger_entry *ret_entry,
			struct error *err)
{
	if (n > LEDGER_NOTE_MAX + 4 * LEDGER_ENTRY_MAX || memchr(proof, '\0', n))
		return error_set(err, EBADMSG, "not a proof");
	cleanup_free char *text = strndup(proof, n);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	char *sep = strstr(text, "\n\n");
	if (!sep)
		return error_set(err, EBADMSG, "a proof ends with a blank line and a checkpoint");
	*sep = '\0';
	const char *note = sep + 2;
	struct ledger_checkpoint cp;
	int r = ledger_checkpoint_parse(note, strlen(note), vkey, &cp, err);
	if (r < 0)
		return error_prefix(err, "the proof's checkpoint");
	ledger_checkpoint_release(&cp);

	char *save = NULL, *line = strtok_r(text, "\n", &save);
	bool inclusion = line && strcmp(line, "c2sp.org/tlog-proof@v1") == 0;
	bool consistency = line && strcmp(line, "airlock.ledger/consistency@v1") == 0;
	if (!inclusion && !consistency)
		return error_set(err, EBADMSG, "unknown proof type");
	cleanup_free char *entry = NULL;
	size_t entry_n = 0;
	uint64_t number = 0;
	line = strtok_r(NULL, "\n", &save);
	if (inclusion && line && strncmp(line, "extra ", 6) == 0) {
		entry = base64_decode(line + 6, &entry_n);
		line = strtok_r(NULL, "\n", &save);
	}
	const char *key = inclusion ? "index " : "old ";
	if (!line || strncmp(line, key, strlen(key)) != 0 ||
	    parse_u64(line + strlen(key), &number) < 0)
		return error_set(err, EBADMSG, "the proof has no %sline", key);
	merkle_hash hashes[MERKLE_MAX_PROOF];
	size_t k = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (k == MERKLE_MAX_PROOF || !ledger_b64_exact(line, hashes[k], MERKLE_HASH_BYTES))
			return error_set(err, EBADMSG, "bad hash in the proof");
		k++;
	}
	if (inclusion) {
		if (!entry)
			return error_set(err, EBADMSG, "the proof carries no entry (extra line)");
		struct ledger_entry e;
		r = ledger_entry_parse(entry, entry_n, &e, err);
		if (r < 0)
			return error_prefix(err, "the proof's entry");
		if (e.seq != number)
			return error_set(err, EBADMSG, "the entry's seq is not the proof's index");
		merkle_hash leaf;
		merkle_leaf_hash(entry, entry_n, leaf);
		if (!merkle_verify_inclusion(number, cp.size, leaf, hashes, k, cp.root))
			return error_set(err, EBADMSG, "the inclusion proof does not verify");
		if (record_sha256 && strcmp(record_sha256, e.sha256) != 0)
			return error_set(err, EBADMSG, "the record is not the one the entry commits");
		if (ret_entry)
			*ret_entry = e;
		return 0;
	}
	if (!old_checkpoint)
		return error_set(err, EINVAL, "a consistency proof is checked against an old checkpoint (--old FILE)");
	struct ledger_checkpoint old;
	r = ledger_checkpoint_parse(old_checkpoint, old_n, vkey, &old, err);
	if (r < 0)
		return error_prefix(err, "the old checkpoint");
	ledger_checkpoint_release(&old);
	if (old.size != number)
		return error_set(err, EBADMSG, "the proof is from size %llu, the old checkpoint has %llu",
				 (unsigned long long)number, (unsigned long long)old.size);
	if (!merkle_verify_consistency(old.size, cp.size, old.root, cp.root, hashes, k))
		return error_set(err, EBADMSG, "the consistency proof does not verify: the new tree does not extend the old one");
	return 0;
}
