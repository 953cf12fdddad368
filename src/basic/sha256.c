/* SPDX-License-Identifier: MIT */
/* OpenSSL's SHA256_* functions, not EVP: in OpenSSL 3 the first EVP digest
 * loads the provider machinery and configuration, about 2.5 ms per process,
 * more than airlock's whole per-run budget. The low-level functions are
 * deprecated but kept by OpenSSL 3 and use the same assembly (SHA-NI). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "basic/sha256.h"
#include "basic/text.h"

#include <openssl/sha.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct sha256 {
	SHA256_CTX ctx;
};

struct sha256 *sha256_new(void)
{
	struct sha256 *h = malloc(sizeof(*h));

	if (h && SHA256_Init(&h->ctx) != 1) {
		free(h);
		return NULL;
	}
	return h;
}

void sha256_free(struct sha256 *h)
{
	free(h);
}

void sha256_update(struct sha256 *h, const void *data, size_t n)
{
	SHA256_Update(&h->ctx, data, n);
}

void sha256_final_hex(struct sha256 *h, char hex[SHA256_HEX_SIZE])
{
	unsigned char digest[SHA256_DIGEST_LENGTH];

	SHA256_Final(digest, &h->ctx);
	hex_encode(digest, SHA256_DIGEST_BYTES, hex);
}

void sha256_hex(const void *data, size_t n, char hex[SHA256_HEX_SIZE])
{
	SHA256_CTX ctx;
	unsigned char digest[SHA256_DIGEST_LENGTH];

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, data, n);
	SHA256_Final(digest, &ctx);
	hex_encode(digest, SHA256_DIGEST_BYTES, hex);
}

/* Not the one-shot SHA256(): in OpenSSL 3 it is EVP_Q_digest(), which
 * fetches the digest and so loads the providers (above). */
void sha256_raw(const void *data, size_t n, uint8_t ret[SHA256_DIGEST_BYTES])
{
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, data, n);
	SHA256_Final(ret, &ctx);
}

int sha256_fd_hex(int fd, char hex[SHA256_HEX_SIZE])
{
	SHA256_CTX ctx;
	unsigned char digest[SHA256_DIGEST_LENGTH];
	char buf[65536];

	SHA256_Init(&ctx);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		SHA256_Update(&ctx, buf, (size_t)n);
	}
	SHA256_Final(digest, &ctx);
	hex_encode(digest, SHA256_DIGEST_BYTES, hex);
	return 0;
}
