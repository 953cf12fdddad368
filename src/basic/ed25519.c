/* SPDX-License-Identifier: MIT */
/* Ed25519 and scrypt come from OpenSSL's EVP interface, loaded with dlopen()
 * the first time they are needed. Linked statically like SHA-256, EVP and
 * its provider machinery add 17,000 relocations and 100 page faults to every
 * airlock process, about 1.3 ms per `airlock run` on the reference machine,
 * for functions only `ack` and `approver` call. The pointers keep the types
 * of OpenSSL's own declarations. */
#include "basic/ed25519.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	__typeof__(OPENSSL_init_crypto) *init_crypto;
} evp;

/* Before any other call into libcrypto: no exit handler of OpenSSL's. Its
 * cleanup at exit frees every provider structure the first key set up
 * (~0.75 M instructions, at the end of every command that signed), memory
 * the process's exit returns anyway. The configuration is still loaded as
 * OpenSSL's default (libcurl's and libpq's TLS, which load this libcrypto
 * too, read its system policy). */
static int evp_init(struct error *err)
{
	return evp.init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) == 1
		       ? 0
		       : error_set(err, EINVAL, "OPENSSL_init_crypto() failed");
}

static struct dynlib evp_lib = DYNLIB_INIT("libcrypto", evp_init);

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
		{ "OPENSSL_init_crypto", (void **)&evp.init_crypto },
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

/* ed25519_preload()'s thread: started at most once (preload_started),
 * joinable until ed25519_preload_wait() has joined it (preload_running), in
 * the process that started it (preload_pid: a forked child inherits the
 * flag, not the thread). */
static pthread_mutex_t preload_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t preload_thread;
static pid_t preload_pid;
static bool preload_started;
static bool preload_running;

static void *ed25519_preload_main(void *arg)
{
	/* A seed no key of airlock's is: what it warms is the provider. */
	static const uint8_t seed[ED25519_KEY_BYTES];
	uint8_t ignored[ED25519_KEY_BYTES];

	(void)arg;
	(void)ed25519_public_key(seed, ignored);
	return NULL;
}

void ed25519_preload_wait(void)
{
	pthread_mutex_lock(&preload_lock);
	if (preload_running && getpid() == preload_pid) {
		(void)pthread_join(preload_thread, NULL);
		preload_running = false;
	}
	pthread_mutex_unlock(&preload_lock);
}

static void ed25519_preload_wait_at_exit(void)
{
	ed25519_preload_wait();
}

void ed25519_preload(void)
{
	sigset_t all, old;

	pthread_mutex_lock(&preload_lock);
	if (preload_started) {
		pthread_mutex_unlock(&preload_lock);
		return;
	}
	preload_started = true;
	/* Without the handler, no thread: an exit must never leave it behind
	 * in the middle of OpenSSL's set-up. */
	if (atexit(ed25519_preload_wait_at_exit) != 0) {
		pthread_mutex_unlock(&preload_lock);
		return;
	}
	/* The thread inherits the mask it is created with: every signal
	 * blocked from its first instruction. */
	sigfillset(&all);
	preload_pid = getpid();
	pthread_sigmask(SIG_SETMASK, &all, &old);
	preload_running = pthread_create(&preload_thread, NULL, ed25519_preload_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&preload_lock);
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
