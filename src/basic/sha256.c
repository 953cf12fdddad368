/* SPDX-License-Identifier: MIT */
#include "basic/sha256.h"

#include <openssl/evp.h>

struct sha256 {
	EVP_MD_CTX *ctx;
};

struct sha256 *sha256_new(void)
{
	struct sha256 *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		sha256_free(h);
		return NULL;
	}
	return h;
}

void sha256_free(struct sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void sha256_update(struct sha256 *h, const void *data, size_t n)
{
	EVP_DigestUpdate(h->ctx, data, n);
}

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

void sha256_final_hex(struct sha256 *h, char hex[SHA256_HEX_SIZE])
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	EVP_DigestFinal_ex(h->ctx, digest, &len);
	hex_encode(digest, SHA256_DIGEST_BYTES, hex);
}

void sha256_hex(const void *data, size_t n, char hex[SHA256_HEX_SIZE])
{
	unsigned char digest[SHA256_DIGEST_BYTES];

	EVP_Digest(data, n, digest, NULL, EVP_sha256(), NULL);
	hex_encode(digest, SHA256_DIGEST_BYTES, hex);
}
