/* SPDX-License-Identifier: MIT */
/* The ledger's keys and notes (C2SP signed-note): the signing key, verifier keys, checkpoints. */
#include "ledger/internal.h"

/* ---- keys and notes (C2SP signed-note) ------------------------------------------- */

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

/* A signature line's name as Go's x/mod/sumdb/note reads one (isValidName):
 * not empty, no '+', no white space (ASCII or Unicode White_Space; the
 * note is valid UTF-8 without controls already). */
static bool ledger_sig_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == '+' || (p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0)) ||
		    (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) ||
		    (p[0] == 0xe2 && p[1] == 0x80 &&
		     (p[2] <= 0x8a || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf)) ||
		    (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) ||
		    (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80))
			return false;
	return true;
}

/* Decodes base64 that is canonical (re-encodes to the same text) into
 * exactly n bytes. */
bool ledger_b64_exact(const char *text, void *ret, size_t n)
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

char *ledger_vkey_format(const struct ledger_vkey *v)
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
int ledger_key_load(int dir_fd, bool create, struct ledger_key *ret, struct error *err)
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

char *ledger_note_sign(const struct ledger_key *key, uint64_t size, const merkle_hash root)
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
	if (n == 0 || n > LEDGER_NOTE_MAX || !utf8_is_valid(text, n))
		return error_set(err, EBADMSG, "not a note");
	/* No control character but the newline (NUL included), as in Go's note.Open. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
			return error_set(err, EBADMSG, "not a note");
	cleanup_free char *copy = strndup(text, n);
	if (!copy)
		return error_set(err, ENOMEM, "out of memory");
	char *split = strstr(copy, "\n\n");
	/* C2SP signed-note: the text's lines, one blank line, then one or more
	 * signature lines, none empty; a blank line before the text, among or
	 * after the signatures is malformed, as Go's x/mod/sumdb/note has it. */
	if (!split || copy[n - 1] != '\n' || copy[0] == '\n' || split[2] == '\0' ||
	    strstr(split + 1, "\n\n"))
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
	if (parse_u64(lines[1], &size) < 0 || (lines[1][0] == '0' && lines[1][1]) || lines[1][0] == '+')
		return error_set(err, EBADMSG, "bad tree size");
	if (!ledger_b64_exact(lines[2], ret->root, MERKLE_HASH_BYTES))
		return error_set(err, EBADMSG, "bad root hash");
	snprintf(ret->origin, sizeof(ret->origin), "%s", lines[0]);
	ret->size = size;

	/* Every signature line is `— <name> <base64 of a 4-byte key id and a
	 * signature>`, split at the first space, whoever signed it (Go's
	 * note.Open refuses the note otherwise); only the key's is checked, and
	 * the key's own is canonical base64 of exactly the id and an Ed25519
	 * signature. */
	bool good = false;
	for (char *line = strtok_r(split + 2, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, EM_DASH " ", 4) != 0)
			return error_set(err, EBADMSG, "a signature line starts with an em dash");
		char *name = line + 4, *space = strchr(name, ' ');
		if (!space)
			return error_set(err, EBADMSG, "bad signature line");
		*space = '\0';
		const char *b64 = space + 1;
		size_t len;
		cleanup_free char *raw = strchr(b64, ' ') ? NULL : base64_decode(b64, &len);
		if (!ledger_sig_name_ok(name) || !raw || len < 5)
			return error_set(err, EBADMSG, "bad signature line");
		if (!vkey || strcmp(name, vkey->name) != 0 || memcmp(raw, vkey->id, 4) != 0)
			continue; /* another key's (a cosignature) */
		uint8_t sig[4 + ED25519_SIGNATURE_BYTES];
		if (!ledger_b64_exact(b64, sig, sizeof(sig)) ||
		    !ed25519_verify(vkey->key, copy, body_n, sig + 4))
			return error_set(err, EBADMSG, "the signature by %s does not verify",
					 vkey->name);
		good = true;
	}
	if (vkey && !good)
		return error_set(err, EBADMSG, "no signature by %s", vkey->name);
	if (vkey && strcmp(ret->origin, vkey->name) != 0)
		return error_set(err, EBADMSG, "the origin is not the key's name");
	ret->text = strndup(text, n);
	return ret->text ? 0 : error_set(err, ENOMEM, "out of memory");
}

int ledger_checkpoint_read(int dir_fd, const struct ledger_vkey *vkey,
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
