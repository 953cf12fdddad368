/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ed25519 signatures and the scrypt key derivation, through OpenSSL's EVP
 * interface, so the rest of airlock does not include OpenSSL headers.
 * libcrypto.so.3 is loaded on first use: -ENOSYS (false for verify) when it
 * cannot be. */
#define ED25519_KEY_BYTES	32
#define ED25519_SIGNATURE_BYTES 64

/* The public key of the private key whose 32-byte seed is given. */
int ed25519_public_key(const uint8_t seed[ED25519_KEY_BYTES], uint8_t ret[ED25519_KEY_BYTES]);
int ed25519_sign(const uint8_t seed[ED25519_KEY_BYTES], const void *msg, size_t n,
		 uint8_t ret[ED25519_SIGNATURE_BYTES]);
bool ed25519_verify(const uint8_t public_key[ED25519_KEY_BYTES], const void *msg, size_t n,
		    const uint8_t signature[ED25519_SIGNATURE_BYTES]);

/* Loads libcrypto and sets up its Ed25519 provider (about 2 ms of a
 * process's first signature) on a thread of its own, for a caller that will
 * sign later and has other work to do meanwhile: the first signature then
 * finds it done, or waits for it (the load's lock, OpenSSL's own once).
 * Started once a process; no key is read or held by it (a fixed all-zero
 * seed warms the provider). The thread runs with every signal blocked (a
 * process-directed signal, a supervisor's SIGCHLD read from a signalfd,
 * must never be taken by it) and makes no fork or exec of its own.
 * ed25519_preload_wait() joins it (in the process that started it; a
 * forked child has no such thread): a caller that started it waits before
 * it lets the process exit, since exit() runs OpenSSL's cleanup, which must
 * not race its set-up. An atexit() handler registered before the thread
 * starts waits too, which covers an exit before OpenSSL has registered its
 * own cleanup (after it, that cleanup runs first: the caller's wait is
 * what keeps the two apart). */
void ed25519_preload(void);
void ed25519_preload_wait(void);

/* scrypt(passphrase, salt, N, r, p) into out; 0 or -EINVAL/-ENOMEM. */
int kdf_scrypt(const char *passphrase, const uint8_t *salt, size_t salt_n, uint64_t n, uint64_t r,
	       uint64_t p, uint8_t *out, size_t out_n);
