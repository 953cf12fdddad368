/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A thin wrapper over OpenSSL's EVP SHA-256, so the rest of airlock does not
 * include OpenSSL headers. */
#define SHA256_DIGEST_BYTES 32
#define SHA256_HEX_SIZE	    (2 * SHA256_DIGEST_BYTES + 1)

struct sha256;

struct sha256 *sha256_new(void);
void sha256_free(struct sha256 *h);
static inline void sha256_freep(struct sha256 **h)
{
	sha256_free(*h);
}
void sha256_update(struct sha256 *h, const void *data, size_t n);
/* Writes the lowercase hex digest and NUL; the context cannot be reused. */
void sha256_final_hex(struct sha256 *h, char hex[SHA256_HEX_SIZE]);

void sha256_hex(const void *data, size_t n, char hex[SHA256_HEX_SIZE]);
/* The raw digest. */
void sha256_raw(const void *data, size_t n, uint8_t ret[SHA256_DIGEST_BYTES]);

/* The hex digest of everything read from fd (to its end); 0 or -errno. */
int sha256_fd_hex(int fd, char hex[SHA256_HEX_SIZE]);
