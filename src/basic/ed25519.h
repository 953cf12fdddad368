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

/* scrypt(passphrase, salt, N, r, p) into out; 0 or -EINVAL/-ENOMEM. */
int kdf_scrypt(const char *passphrase, const uint8_t *salt, size_t salt_n, uint64_t n, uint64_t r,
	       uint64_t p, uint8_t *out, size_t out_n);
