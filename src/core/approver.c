/* SPDX-License-Identifier: MIT */
#include "core/approver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/ed25519.h"
#include "basic/text.h"
#include "basic/fileio.h"
#include "core/jsonutil.h"

#define SCRYPT_N    32768 /* 32 MiB and about 0.1 s per try */
#define SCRYPT_R    8
#define SCRYPT_P    1
#define SALT_BYTES  16
#define MAX_BYTES   4096

void approver_release(struct approver *a)
{
	free(a->origin);
	json_decref(a->doc);
	*a = (struct approver){ 0 };
}

static int approver_parse(const char *text, size_t n, const char *origin, struct approver *ret,
			  struct error *err)
{
	static const char *const keys[] = { "schema", "kdf", "n", "r", "p", "salt", "public_key",
					    "created_at", NULL };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	int r = jsonutil_parse_object(text, n, &doc, err);
	if (r == 0)
		r = jsonutil_check_keys(doc, "", keys, err);
	if (r < 0)
		return error_prefix(err, "approver %s", origin);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	const char *kdf = json_string_value(json_object_get(doc, "kdf"));
	const char *salt = json_string_value(json_object_get(doc, "salt"));
	const char *key = json_string_value(json_object_get(doc, "public_key"));
	uint8_t buf[ED25519_KEY_BYTES];
	if (!schema || strcmp(schema, APPROVER_SCHEMA) != 0 || !kdf || strcmp(kdf, "scrypt") != 0 ||
	    !salt || !hex_decode(salt, buf, SALT_BYTES) || !key ||
	    !hex_decode(key, buf, ED25519_KEY_BYTES) ||
	    !json_is_integer(json_object_get(doc, "n")) || !json_is_integer(json_object_get(doc, "r")) ||
	    !json_is_integer(json_object_get(doc, "p")))
		return error_set(err, EINVAL, "approver %s is not an %s document", origin,
				 APPROVER_SCHEMA);
	ret->origin = strdup(origin);
	if (!ret->origin)
		return error_set(err, ENOMEM, "out of memory");
	ret->doc = TAKE_PTR(doc);
	return 0;
}

/* The system file counts only when nobody but root can have written it. */
static int approver_check_system(const char *path, struct error *err)
{
	struct stat st, dir;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? -ENOENT : error_set_errno(err, errno, "stat %s", path);
	if (stat("/etc/airlock", &dir) < 0)
		return error_set_errno(err, errno, "stat /etc/airlock");
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) || dir.st_uid != 0 ||
	    (dir.st_mode & 022))
		return error_set(err, EPERM,
				 "%s must be a regular file owned by root and writable by nobody else, in a directory like that",
				 path);
	return 0;
}

int approver_load(struct store *store, struct approver *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	*ret = (struct approver){ 0 };

	int r = approver_check_system(APPROVER_SYSTEM_PATH, err);
	if (r == 0) {
		r = file_read_capped(AT_FDCWD, APPROVER_SYSTEM_PATH, MAX_BYTES, &text, &n, err);
		return r < 0 ? r : approver_parse(text, n, APPROVER_SYSTEM_PATH, ret, err);
	}
	if (r != -ENOENT)
		return r;
	if (faccessat(store->dir_fd, "approver.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	r = file_read_capped(store->dir_fd, "approver.json", MAX_BYTES, &text, &n, err);
	if (r < 0)
		return r;
	cleanup_free char *origin = NULL;
	if (asprintf(&origin, "%s/approver.json", store->path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return approver_parse(text, n, origin, ret, err);
}

static int approver_derive(json_t *doc, const char *passphrase, uint8_t seed[ED25519_KEY_BYTES],
			   struct error *err)
{
	uint8_t salt[SALT_BYTES];

	if (!hex_decode(json_string_value(json_object_get(doc, "salt")), salt, SALT_BYTES))
		return error_set(err, EINVAL, "approver salt is damaged");
	json_int_t n = json_integer_value(json_object_get(doc, "n"));
	json_int_t r = json_integer_value(json_object_get(doc, "r"));
	json_int_t p = json_integer_value(json_object_get(doc, "p"));
	if (n < 1024 || n > (1 << 22) || r < 1 || r > 32 || p < 1 || p > 16)
		return error_set(err, EINVAL, "approver scrypt parameters are out of range");
	if (kdf_scrypt(passphrase, salt, SALT_BYTES, (uint64_t)n, (uint64_t)r, (uint64_t)p, seed,
		       ED25519_KEY_BYTES) < 0)
		return error_set(err, ENOMEM, "scrypt failed");
	return 0;
}

/* Whether passphrase is the one doc was enrolled with. */
static int approver_check_passphrase(json_t *doc, const char *passphrase,
				     uint8_t seed[ED25519_KEY_BYTES], struct error *err)
{
	uint8_t public_key[ED25519_KEY_BYTES], enrolled[ED25519_KEY_BYTES];

	int r = approver_derive(doc, passphrase, seed, err);
	if (r < 0)
		return r;
	if (ed25519_public_key(seed, public_key) < 0 ||
	    !hex_decode(json_string_value(json_object_get(doc, "public_key")), enrolled,
			ED25519_KEY_BYTES))
		return error_set(err, EINVAL, "approver key is damaged");
	if (memcmp(public_key, enrolled, ED25519_KEY_BYTES) != 0)
		return error_set(err, EACCES, "that is not the approver's passphrase");
	return 0;
}

int approver_enroll(struct store *store, bool system, const char *passphrase,
		    const char *old_passphrase, struct approver *ret, struct error *err)
{
	uint8_t salt[SALT_BYTES], seed[ED25519_KEY_BYTES], public_key[ED25519_KEY_BYTES];
	char salt_hex[2 * SALT_BYTES + 1], key_hex[2 * ED25519_KEY_BYTES + 1], now[64];
	struct approver current = { 0 };
	bool replacing = false;

	if (strlen(passphrase) < 8)
		return error_set(err, EINVAL, "the passphrase must be at least 8 characters");
	int r = approver_load(store, &current, err);
	if (r == 0) {
		/* Replacing needs the current passphrase: otherwise whoever runs
		 * this first, or next, decides who approves. */
		bool same_place = system == (strcmp(current.origin, APPROVER_SYSTEM_PATH) == 0);
		if (!old_passphrase || !same_place) {
			r = error_set(err, EEXIST, "an approver is already enrolled in %s; replacing it needs its passphrase",
				      current.origin);
			approver_release(&current);
			return r;
		}
		r = approver_check_passphrase(current.doc, old_passphrase, seed, err);
		approver_release(&current);
		if (r < 0)
			return r;
		replacing = true;
	} else if (r != -ENOENT) {
		return r;
	}
	if (getrandom(salt, sizeof(salt), 0) != sizeof(salt))
		return error_set_errno(err, errno, "getrandom");
	hex_encode(salt, SALT_BYTES, salt_hex);
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:s, s:s, s:i, s:i, s:i, s:s}", "schema", APPROVER_SCHEMA, "kdf", "scrypt",
			  "n", SCRYPT_N, "r", SCRYPT_R, "p", SCRYPT_P, "salt", salt_hex);
	if (!doc)
		return error_set(err, ENOMEM, "out of memory");
	r = approver_derive(doc, passphrase, seed, err);
	if (r < 0)
		return r;
	if (ed25519_public_key(seed, public_key) < 0)
		return error_set(err, EINVAL, "cannot derive the approver key");
	explicit_bzero(seed, sizeof(seed));
	hex_encode(public_key, ED25519_KEY_BYTES, key_hex);
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_object_set_new(doc, "public_key", json_string(key_hex));
	json_object_set_new(doc, "created_at", json_string(now));

	cleanup_free char *text = jsonutil_dump_line(doc);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	cleanup_close int dir_fd = -1;
	if (system) {
		if (mkdir("/etc/airlock", 0755) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create /etc/airlock");
		dir_fd = open("/etc/airlock", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0)
			return error_set_errno(err, errno, "open /etc/airlock");
	}
	/* Replaced through a new name, so a reader sees the old or the new, and
	 * committed to the ledger (the one commit path): `ack` trusts only an
	 * approver the ledger backs. */
	r = store_commit(store, replacing ? LEDGER_APPROVER_CHANGE : LEDGER_APPROVER_ENROL,
			 "approver", system ? APPROVER_SYSTEM_PATH : "approver.json", text,
			 strlen(text), true, err);
	if (r < 0)
		return r;
	cleanup_free char *origin = NULL;
	if (asprintf(&origin, "%s/approver.json", store->path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return approver_parse(text, strlen(text), system ? APPROVER_SYSTEM_PATH : origin, ret, err);
}

int approver_sign(const struct approver *a, const char *passphrase, const char *message,
		  json_t **ret_approval, struct error *err)
{
	uint8_t seed[ED25519_KEY_BYTES], sig[ED25519_SIGNATURE_BYTES];
	char sig_hex[2 * ED25519_SIGNATURE_BYTES + 1];

	int r = approver_check_passphrase(a->doc, passphrase, seed, err);
	if (r == 0 && ed25519_sign(seed, message, strlen(message), sig) < 0)
		r = error_set(err, EINVAL, "signing failed");
	explicit_bzero(seed, sizeof(seed));
	if (r < 0)
		return r;
	hex_encode(sig, sizeof(sig), sig_hex);
	*ret_approval = json_pack("{s:s, s:O, s:s, s:s}", "approver", a->origin, "public_key",
				  json_object_get(a->doc, "public_key"), "message", message,
				  "signature", sig_hex);
	return *ret_approval ? 0 : error_set(err, ENOMEM, "out of memory");
}

bool approver_verify(const struct approver *a, json_t *approval)
{
	uint8_t key[ED25519_KEY_BYTES], sig[ED25519_SIGNATURE_BYTES];
	const char *message = json_string_value(json_object_get(approval, "message"));
	const char *key_hex = json_string_value(json_object_get(approval, "public_key"));
	const char *sig_hex = json_string_value(json_object_get(approval, "signature"));
	const char *enrolled = json_string_value(json_object_get(a->doc, "public_key"));

	return message && key_hex && sig_hex && enrolled && strcmp(key_hex, enrolled) == 0 &&
	       hex_decode(key_hex, key, sizeof(key)) && hex_decode(sig_hex, sig, sizeof(sig)) &&
	       ed25519_verify(key, message, strlen(message), sig);
}

const char *approver_fingerprint(const struct approver *a, char buf[static 20])
{
	const char *key = json_string_value(json_object_get(a->doc, "public_key"));

	snprintf(buf, 20, "%.16s", key ? key : "?");
	return buf;
}
