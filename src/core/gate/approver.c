/* SPDX-License-Identifier: MIT */
#include "core/gate/approver.h"

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
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

#define SCRYPT_N   32768 /* 32 MiB and about 0.1 s per try */
#define SCRYPT_R   8
#define SCRYPT_P   1
#define SALT_BYTES 16
#define MAX_BYTES  4096

void approver_release(struct approver *a)
{
	free(a->origin);
	json_decref(a->doc);
	*a = (struct approver){ 0 };
}

/* Takes doc (a parsed approver document) into ret when it is one. */
static int approver_adopt(json_t *doc, const char *origin, struct approver *ret, struct error *err)
{
	static const char *const keys[] = { "schema", "kdf",	    "n",	  "r", "p",
					    "salt",   "public_key", "created_at", NULL };
	cleanup_with(json_decrefp) json_t *owned = doc;
	int r = jsonutil_check_keys(doc, "", keys, err);
	if (r < 0)
		return error_prefix(err, "approver %s", origin);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	const char *kdf = json_string_value(json_object_get(doc, "kdf"));
	const char *salt = json_string_value(json_object_get(doc, "salt"));
	const char *key = json_string_value(json_object_get(doc, "public_key"));
	uint8_t buf[ED25519_KEY_BYTES];
	if (!schema || strcmp(schema, APPROVER_SCHEMA) != 0 || !kdf || strcmp(kdf, "scrypt") != 0 ||
	    !salt || !hex_decode(salt, buf, SALT_BYTES) || !key ||
	    !hex_decode(key, buf, ED25519_KEY_BYTES) || !json_is_integer(json_object_get(doc, "n")) ||
	    !json_is_integer(json_object_get(doc, "r")) || !json_is_integer(json_object_get(doc, "p")))
		return error_set(err, EINVAL, "approver %s is not an %s document", origin,
				 APPROVER_SCHEMA);
	ret->origin = strdup(origin);
	if (!ret->origin)
		return error_set(err, ENOMEM, "out of memory");
	ret->doc = TAKE_PTR(owned);
	return 0;
}

static int approver_parse(const char *text, size_t n, const char *origin, struct approver *ret,
			  struct error *err)
{
	json_t *doc = NULL;
	int r = jsonutil_parse_object(text, n, &doc, err);
	if (r < 0)
		return error_prefix(err, "approver %s", origin);
	return approver_adopt(doc, origin, ret, err);
}

/* The system file counts only when nobody but root can have written it. */
int approver_parse_document(const char *text, size_t n, const char *origin, struct approver *ret,
			    struct error *err)
{
	*ret = (struct approver){ 0 };
	return approver_parse(text, n, origin, ret, err);
}

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

/* The state directory's approver.json alone; -ENOENT when there is none. */
static int approver_load_state(struct store *store, struct approver *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;

	*ret = (struct approver){ 0 };
	if (faccessat(store_dir_fd(store), STATEPATH_APPROVER, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	int r = file_read_capped(store_dir_fd(store), STATEPATH_APPROVER, MAX_BYTES, &text, &n, err);
	if (r < 0)
		return r;
	cleanup_free char *origin = NULL;
	if (asprintf(&origin, "%s/" STATEPATH_APPROVER, store_path(store)) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return approver_parse(text, n, origin, ret, err);
}

/* The pin and, in *ret_pinned, the approver it pins; -ENOENT when there is
 * no pin, -EINVAL (with err) when it is not one. */
static int approver_load_pin(struct store *store, json_t **ret_pin, struct approver *ret_pinned,
			     struct error *err)
{
	static const char *const keys[] = { "schema",	"approver",  "previous", "replaced",
					    "handover", "pinned_at", NULL };
	cleanup_free char *text = NULL, *origin = NULL;
	cleanup_with(json_decrefp) json_t *pin = NULL;
	size_t n;

	*ret_pinned = (struct approver){ 0 };
	if (faccessat(store_dir_fd(store), APPROVER_PIN_NAME, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	if (asprintf(&origin, "%s/%s", store_path(store), APPROVER_PIN_NAME) < 0)
		return error_set(err, ENOMEM, "out of memory");
	int r = file_read_capped(store_dir_fd(store), APPROVER_PIN_NAME, 8 * MAX_BYTES, &text, &n, err);
	if (r == 0)
		r = jsonutil_parse_object(text, n, &pin, err);
	if (r == 0)
		r = jsonutil_check_keys(pin, "", keys, err);
	if (r < 0)
		return error_prefix(err, "%s", origin);
	const char *schema = jsonutil_str(pin, "schema");
	json_t *previous = json_object_get(pin, "previous");
	if (!schema || strcmp(schema, APPROVER_PIN_SCHEMA) != 0 ||
	    !json_is_object(json_object_get(pin, "approver")) || !json_is_array(previous))
		return error_set(err, EINVAL, "%s is not an %s document", origin, APPROVER_PIN_SCHEMA);
	r = approver_adopt(json_incref(json_object_get(pin, "approver")), origin, ret_pinned, err);
	if (r < 0)
		return r;
	*ret_pin = TAKE_PTR(pin);
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
	return approver_load_state(store, ret, err);
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

/* The message the old key signs when an approver is replaced honestly. */
static char *approver_handover_message(const char *from, const char *to, const char *at)
{
	char *m = NULL;

	return asprintf(&m, "airlock.approver-handover/1\nfrom=%s\nto=%s\nat=%s\n", from, to, at) < 0
		       ? NULL
		       : m;
}

/* approver.json.new, then renamed over name: a reader sees the old or the new. */
/* The pin after an enrolment of doc: the keys it replaced, and the
 * replaced key's signature over the handover (seed NULL: a first one). */
static int approver_write_pin(struct store *store, json_t *doc, json_t *old_pin,
			      const char *old_key, const uint8_t *old_seed, struct error *err)
{
	char now[64], sig_hex[2 * ED25519_SIGNATURE_BYTES + 1] = "";
	uint8_t sig[ED25519_SIGNATURE_BYTES];
	const char *new_key = jsonutil_str(doc, "public_key");

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *old_previous = json_object_get(old_pin, "previous");
	cleanup_with(json_decrefp) json_t *previous =
		json_is_array(old_previous) ? json_deep_copy(old_previous) : json_array();
	if (!previous)
		return error_set(err, ENOMEM, "out of memory");
	if (old_key && old_seed) {
		cleanup_free char *msg = approver_handover_message(old_key, new_key, now);
		if (!msg)
			return error_set(err, ENOMEM, "out of memory");
		if (ed25519_sign(old_seed, msg, strlen(msg), sig) < 0)
			return error_set(err, EINVAL, "signing the handover failed");
		hex_encode(sig, sizeof(sig), sig_hex);
		if (strcmp(old_key, new_key) != 0)
			json_array_append_new(previous, json_string(old_key));
	}
	cleanup_with(json_decrefp) json_t *pin =
		json_pack("{s:s, s:O, s:O, s:s?, s:s?, s:s}", "schema", APPROVER_PIN_SCHEMA, "approver",
			  doc, "previous", previous, "replaced", sig_hex[0] ? old_key : NULL,
			  "handover", sig_hex[0] ? sig_hex : NULL, "pinned_at", now);
	cleanup_free char *text = pin ? jsonutil_dump_line(pin) : NULL;
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	return store_commit(store, LEDGER_APPROVER_CHANGE, "approver-pin", APPROVER_PIN_NAME, text,
			    strlen(text), true, err);
}

/* approver_enroll(): who may enrol another (*ret_authority, NULL: anyone):
 * with system, the approver in APPROVER_SYSTEM_PATH when there is one (have_system);
 * else the pin, or approver.json. */
static int approver_enroll_authority(struct store *store, bool system, bool have_system,
				     struct approver *current, struct approver *pinned, json_t **pin,
				     const struct approver **ret_authority, struct error *err)
{
	const struct approver *authority = NULL;
	int r = have_system ? 0 : -ENOENT;

	if (system) {
		if (r == 0) {
			r = approver_load(store, current, err);
			if (r < 0)
				return r;
			authority = current;
		}
	} else {
		/* Who may enrol another: the pinned approver, even when
		 * approver.json was removed or replaced behind airlock's back;
		 * without a pin, the approver.json there (enrolled by an airlock
		 * that kept no pin); without either, whoever comes first. */
		r = approver_load_pin(store, pin, pinned, err);
		if (r < 0 && r != -ENOENT)
			return error_prefix(err, "who approves cannot be told");
		struct error ignored = { 0 };
		r = approver_load_state(store, current, *pin ? &ignored : err);
		if (r < 0 && r != -ENOENT && !*pin)
			return r;
		authority = *pin ? pinned : current->doc ? current : NULL;
	}
	*ret_authority = authority;
	return 0;
}

/* approver_enroll(): replacing authority needs its passphrase, old_passphrase;
 * its seed then in old_seed. */
static int approver_enroll_check_old(const struct approver *authority, bool pinned,
				     bool has_current, const char *old_passphrase,
				     uint8_t old_seed[ED25519_KEY_BYTES], struct error *err)
{
	char fp[20];

	/* Replacing needs the current passphrase: otherwise whoever runs
	 * this first, or next, decides who approves. */
	approver_fingerprint(authority, fp);
	if (!old_passphrase)
		return error_set(err, EEXIST,
				 "approver %s is enrolled (%s); enrolling another needs the passphrase of approver %s",
				 fp, authority->origin, fp);
	int r = approver_check_passphrase(authority->doc, old_passphrase, old_seed, err);
	if (r == -EACCES)
		return error_set(err, EACCES,
				 "that is not it: enrolling another approver needs the passphrase of approver %s%s",
				 fp,
				 pinned && !has_current
					 ? " (approver.json was removed outside airlock; approver-pin.json still names it)"
					 : "");
	return r;
}

/* approver_enroll(): a new approver's document for passphrase: its salt,
 * scrypt's parameters, its public key and when it was made. */
static int approver_new_doc(const char *passphrase, json_t **ret_doc, struct error *err)
{
	uint8_t salt[SALT_BYTES], seed[ED25519_KEY_BYTES], public_key[ED25519_KEY_BYTES];
	char salt_hex[2 * SALT_BYTES + 1], key_hex[2 * ED25519_KEY_BYTES + 1], now[64];
	int r;

	if (getrandom(salt, sizeof(salt), 0) != sizeof(salt))
		return error_set_errno(err, errno, "getrandom");
	hex_encode(salt, SALT_BYTES, salt_hex);
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:s, s:s, s:i, s:i, s:i, s:s}", "schema", APPROVER_SCHEMA, "kdf",
			  "scrypt", "n", SCRYPT_N, "r", SCRYPT_R, "p", SCRYPT_P, "salt", salt_hex);
	if (!doc)
		r = error_set(err, ENOMEM, "out of memory");
	else
		r = approver_derive(doc, passphrase, seed, err);
	if (r == 0 && ed25519_public_key(seed, public_key) < 0)
		r = error_set(err, EINVAL, "cannot derive the approver key");
	explicit_bzero(seed, sizeof(seed));
	if (r < 0)
		return r;
	hex_encode(public_key, ED25519_KEY_BYTES, key_hex);
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_object_set_new(doc, "public_key", json_string(key_hex));
	json_object_set_new(doc, "created_at", json_string(now));

	*ret_doc = TAKE_PTR(doc);
	return 0;
}

int approver_enroll(struct store *store, bool system, const char *passphrase,
		    const char *old_passphrase, struct approver *ret, struct error *err)
{
	uint8_t old_seed[ED25519_KEY_BYTES];
	cleanup_with(approver_release) struct approver current = { 0 }, pinned = { 0 };
	cleanup_with(json_decrefp) json_t *pin = NULL;
	const struct approver *authority = NULL;
	bool replacing = false;

	if (strlen(passphrase) < 8)
		return error_set(err, EINVAL, "the passphrase must be at least 8 characters");
	int r = approver_check_system(APPROVER_SYSTEM_PATH, err);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0 && !system)
		return error_set(err, EEXIST,
				 "an approver is already enrolled in %s; replacing it needs its passphrase",
				 APPROVER_SYSTEM_PATH);
	r = approver_enroll_authority(store, system, r == 0, &current, &pinned, &pin, &authority, err);
	if (r < 0)
		return r;
	if (authority) {
		r = approver_enroll_check_old(authority, pin != NULL, current.doc != NULL,
					      old_passphrase, old_seed, err);
		if (r < 0)
			return r;
		replacing = true;
	}
	cleanup_with(json_decrefp) json_t *doc = NULL;
	r = approver_new_doc(passphrase, &doc, err);
	if (r < 0) {
		explicit_bzero(old_seed, sizeof(old_seed));
		return r;
	}
	cleanup_free char *text = jsonutil_dump_line(doc);
	if (!text) {
		explicit_bzero(old_seed, sizeof(old_seed));
		return error_set(err, ENOMEM, "out of memory");
	}
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
			 "approver", system ? APPROVER_SYSTEM_PATH : STATEPATH_APPROVER, text,
			 strlen(text), true, err);
	/* The pin after approver.json: a crash in between leaves approver.json
	 * ahead of its pin, which `gate` reports and a new init repairs with
	 * the passphrase just given. */
	if (r == 0 && !system)
		r = approver_write_pin(store, doc, pin,
				       authority ? jsonutil_str(authority->doc, "public_key") : NULL,
				       authority ? old_seed : NULL, err);
	explicit_bzero(old_seed, sizeof(old_seed));
	if (r < 0)
		return r;
	cleanup_free char *origin = NULL;
	if (asprintf(&origin, "%s/" STATEPATH_APPROVER, store_path(store)) < 0)
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

bool approver_enrolled(struct store *store)
{
	return faccessat(store_dir_fd(store), STATEPATH_APPROVER, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	       faccessat(store_dir_fd(store), APPROVER_PIN_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

const char *approver_state_to_string(enum approver_state s)
{
	static const char *const names[] = {
		[APPROVER_NONE] = "none",	[APPROVER_SYSTEM] = "system",
		[APPROVER_PINNED] = "pinned",	[APPROVER_UNPINNED] = "unpinned",
		[APPROVER_REMOVED] = "removed", [APPROVER_REPLACED] = "replaced",
	};
	return names[s];
}

static void approver_set_fp(const char *key, char buf[static 20])
{
	snprintf(buf, 20, "%.16s", key ? key : "");
}

int approver_check(struct store *store, struct approver_check *ret, struct error *err)
{
	cleanup_with(approver_release) struct approver current = { 0 }, pinned = { 0 };
	cleanup_with(json_decrefp) json_t *pin = NULL;
	struct error pin_err = { 0 }, cur_err = { 0 };

	*ret = (struct approver_check){ 0 };
	int r = approver_check_system(APPROVER_SYSTEM_PATH, err);
	if (r == 0) {
		r = approver_load(store, &current, err);
		if (r < 0)
			return r;
		ret->state = APPROVER_SYSTEM;
		snprintf(ret->trusted, sizeof(ret->trusted), "%s",
			 jsonutil_str(current.doc, "public_key"));
		approver_set_fp(ret->trusted, ret->current);
		return 0;
	}
	if (r != -ENOENT)
		return r;
	int pr = approver_load_pin(store, &pin, &pinned, &pin_err);
	int cr = approver_load_state(store, &current, &cur_err);
	const char *pkey = pr == 0 ? jsonutil_str(pinned.doc, "public_key") : NULL;
	const char *ckey = cr == 0 ? jsonutil_str(current.doc, "public_key") : NULL;
	approver_set_fp(pkey, ret->pinned);
	approver_set_fp(ckey, ret->current);
	if (pkey)
		snprintf(ret->trusted, sizeof(ret->trusted), "%s", pkey);
	if (pr == -ENOENT && cr == -ENOENT) {
		ret->state = APPROVER_NONE;
		return 0;
	}
	ret->changed = true;
	if (pr < 0 && pr != -ENOENT) {
		/* A pin that is not one pins nothing: no key counts. */
		ret->state = APPROVER_REPLACED;
		snprintf(ret->message, sizeof(ret->message),
			 "%s changed outside airlock (%.200s); no approval counts until the approver re-enrols",
			 APPROVER_PIN_NAME, pin_err.msg);
	} else if (pr == -ENOENT) {
		ret->state = APPROVER_UNPINNED;
		snprintf(ret->message, sizeof(ret->message),
			 "approver.json%s%s has no pin: an older airlock enrolled it, or %s was removed outside airlock; its approvals do not count until `airlock approver init` (with its passphrase) pins it",
			 ckey ? " of approver " : "", ckey ? ret->current : "", APPROVER_PIN_NAME);
	} else if (cr == -ENOENT) {
		ret->state = APPROVER_REMOVED;
		snprintf(ret->message, sizeof(ret->message),
			 "approver %s was removed outside airlock: approver.json is gone and %s still names it; enrolling another needs its passphrase",
			 ret->pinned, APPROVER_PIN_NAME);
	} else if (cr < 0 || strcmp(ckey, pkey) != 0) {
		ret->state = APPROVER_REPLACED;
		snprintf(ret->message, sizeof(ret->message),
			 "approver.json changed outside airlock: it %s%s, the pinned approver is %s; approvals by any other key do not count",
			 cr < 0 ? "is damaged" : "holds approver ", cr < 0 ? "" : ret->current,
			 ret->pinned);
	} else {
		ret->state = APPROVER_PINNED;
		ret->changed = false;
	}
	return 0;
}

bool approver_verify_key(const char *key_hex, const char *message, const char *sig_hex)
{
	uint8_t key[ED25519_KEY_BYTES], sig[ED25519_SIGNATURE_BYTES];

	return key_hex && message && sig_hex && hex_decode(key_hex, key, sizeof(key)) &&
	       hex_decode(sig_hex, sig, sizeof(sig)) &&
	       ed25519_verify(key, message, strlen(message), sig);
}

bool approver_trusts(struct store *store, const char *key_hex)
{
	struct approver_check check;
	struct error ignored = { 0 };

	if (!key_hex || approver_check(store, &check, &ignored) < 0)
		return false;
	if (check.trusted[0] && strcmp(check.trusted, key_hex) == 0)
		return true;
	if (check.state == APPROVER_SYSTEM)
		return false;
	/* A key the pin says was replaced honestly still signed honestly. */
	cleanup_with(approver_release) struct approver pinned = { 0 };
	cleanup_with(json_decrefp) json_t *pin = NULL;
	if (approver_load_pin(store, &pin, &pinned, &ignored) < 0)
		return false;
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(pin, "previous"), i, k)
		if (json_is_string(k) && strcmp(json_string_value(k), key_hex) == 0)
			return true;
	return false;
}

int approver_load_in_effect(struct store *store, struct approver *ret, struct error *err)
{
	struct approver_check check;
	int r = approver_check(store, &check, err);
	if (r < 0)
		return r;
	if (check.state != APPROVER_SYSTEM && check.state != APPROVER_PINNED &&
	    check.state != APPROVER_NONE)
		return error_set(err, EACCES, "%s", check.message);
	r = approver_load(store, ret, err);
	if (r == -ENOENT)
		return error_set(err, EACCES,
				 "no approver is enrolled: a human enrols one with `airlock approver init` in their own terminal");
	if (r < 0)
		return r;
	if (strcmp(ret->origin, APPROVER_SYSTEM_PATH) != 0)
		r = ledger_require(store_ledger(store), LEDGER_KIND_MAX, "approver",
				   STATEPATH_APPROVER, EACCES, ret->origin,
				   "replaced outside `airlock approver`", "refusing it", err);
	if (r < 0)
		approver_release(ret);
	return r;
}
