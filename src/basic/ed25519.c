/* SPDX-License-Identifier: MIT */
/* Ed25519 and scrypt come from OpenSSL's EVP interface, loaded with dlopen()
 * the first time they are needed. Linked statically like SHA-256, EVP and
 * its provider machinery add 17,000 relocations and 100 page faults to every
 * airlock process, about 1.3 ms per `airlock run` on the reference machine,
 * for functions only `ack` and `approver` call. The pointers keep the types
 * of OpenSSL's own declarations. */
#include "basic/ed25519.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <string.h>

#include "basic/dynlib.h"
#include "basic/macro.h"

#define LIBCRYPTO "libcrypto.so.3"

static struct {
	__typeof__(EVP_PKEY_new_raw_private_key) *new_raw_private_key;
	__typeof__(EVP_PKEY_new_raw_public_key) *new_raw_public_key;
	__typeof__(EVP_PKEY_get_raw_public_key) *get_raw_public_key;
	__typeof__(EVP_PKEY_free) *pkey_free;
	__typeof__(EVP_MD_CTX_new) *md_ctx_new;
	__typeof__(EVP_MD_CTX_free) *md_ctx_free;
	__typeof__(EVP_DigestSignInit) *digest_sign_init;
	__typeof__(EVP_DigestSign) *digest_sign;
	__typeof__(EVP_DigestVerifyInit) *digest_verify_init;
	__typeof__(EVP_DigestVerify) *digest_verify;
	__typeof__(EVP_PBE_scrypt) *pbe_scrypt;
} evp;

static struct dynlib evp_lib = DYNLIB_INIT("libcrypto", NULL);

/* Callers turn the absence into their own messages (-ENOSYS, false). */
static bool evp_ready(void)
{
	static const char *const sonames[] = { LIBCRYPTO, NULL };
	static const struct dynlib_symbol symbols[] = {
		{ "EVP_PKEY_new_raw_private_key", (void **)&evp.new_raw_private_key },
		{ "EVP_PKEY_new_raw_public_key", (void **)&evp.new_raw_public_key },
		{ "EVP_PKEY_get_raw_public_key", (void **)&evp.get_raw_public_key },
		{ "EVP_PKEY_free", (void **)&evp.pkey_free },
		{ "EVP_MD_CTX_new", (void **)&evp.md_ctx_new },
		{ "EVP_MD_CTX_free", (void **)&evp.md_ctx_free },
		{ "EVP_DigestSignInit", (void **)&evp.digest_sign_init },
		{ "EVP_DigestSign", (void **)&evp.digest_sign },
		{ "EVP_DigestVerifyInit", (void **)&evp.digest_verify_init },
		{ "EVP_DigestVerify", (void **)&evp.digest_verify },
		{ "EVP_PBE_scrypt", (void **)&evp.pbe_scrypt },
		{ NULL, NULL },
	};

	return dynlib_load(&evp_lib, sonames, symbols, NULL) == 0;
}

int ed25519_public_key(const uint8_t seed[ED25519_KEY_BYTES], uint8_t ret[ED25519_KEY_BYTES])
{
	if (!evp_ready())
		return -ENOSYS;
	EVP_PKEY *key = evp.new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, ED25519_KEY_BYTES);
	size_t n = ED25519_KEY_BYTES;
	int ok = key && evp.get_raw_public_key(key, ret, &n) == 1 && n == ED25519_KEY_BYTES;

	evp.pkey_free(key);
	return ok ? 0 : -EINVAL;
}

int ed25519_sign(const uint8_t seed[ED25519_KEY_BYTES], const void *msg, size_t n,
		 uint8_t ret[ED25519_SIGNATURE_BYTES])
{
	if (!evp_ready())
		return -ENOSYS;
	EVP_PKEY *key = evp.new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, ED25519_KEY_BYTES);
	EVP_MD_CTX *ctx = evp.md_ctx_new();
	size_t sig_n = ED25519_SIGNATURE_BYTES;
	int ok = key && ctx && evp.digest_sign_init(ctx, NULL, NULL, NULL, key) == 1 &&
		 evp.digest_sign(ctx, ret, &sig_n, msg, n) == 1 && sig_n == ED25519_SIGNATURE_BYTES;

	evp.md_ctx_free(ctx);
	evp.pkey_free(key);
	return ok ? 0 : -EINVAL;
}

bool ed25519_verify(const uint8_t public_key[ED25519_KEY_BYTES], const void *msg, size_t n,
		    const uint8_t signature[ED25519_SIGNATURE_BYTES])
{
	if (!evp_ready())
		return false;
	EVP_PKEY *key = evp.new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, ED25519_KEY_BYTES);
	EVP_MD_CTX *ctx = evp.md_ctx_new();
	bool ok = key && ctx && evp.digest_verify_init(ctx, NULL, NULL, NULL, key) == 1 &&
		  evp.digest_verify(ctx, signature, ED25519_SIGNATURE_BYTES, msg, n) == 1;

	evp.md_ctx_free(ctx);
	evp.pkey_free(key);
	return ok;
}

int kdf_scrypt(const char *passphrase, const uint8_t *salt, size_t salt_n, uint64_t n, uint64_t r,
	       uint64_t p, uint8_t *out, size_t out_n)
{
	/* 128 * N * r bytes of memory; allow twice that. */
	uint64_t maxmem = 256 * n * r + (1 << 20);

	if (!evp_ready())
		return -ENOSYS;
	return evp.pbe_scrypt(passphrase, strlen(passphrase), salt, salt_n, n, r, p, maxmem, out,
			      out_n) == 1
		       ? 0
		       : -EINVAL;
}
