/* SPDX-License-Identifier: MIT */
/* OpenSSL's low-level SHA256_* functions through basic/sha256.c (no EVP
 * provider load per process; the one-shot SHA256() is EVP in OpenSSL 3). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "basic/merkle.h"
#include "basic/sha256.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

void merkle_leaf_hash(const void *entry, size_t n, merkle_hash ret)
{
	static const uint8_t prefix = 0x00;
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, &prefix, 1);
	SHA256_Update(&ctx, entry, n);
	SHA256_Final(ret, &ctx);
}

void merkle_node_hash(const merkle_hash left, const merkle_hash right, merkle_hash ret)
{
	uint8_t buf[1 + 2 * MERKLE_HASH_BYTES];

	buf[0] = 0x01;
	memcpy(buf + 1, left, MERKLE_HASH_BYTES);
	memcpy(buf + 1 + MERKLE_HASH_BYTES, right, MERKLE_HASH_BYTES);
	sha256_raw(buf, sizeof(buf), ret); /* ret may alias left or right */
}

void merkle_empty_root(merkle_hash ret)
{
	sha256_raw("", 0, ret);
}

/* The largest power of two strictly below n (n >= 2). */
static uint64_t merkle_split(uint64_t n)
{
	uint64_t k = 1;

	while (k << 1 < n)
		k <<= 1;
	return k;
}

void merkle_root(merkle_hash *leaves, uint64_t n, merkle_hash ret)
{
	struct merkle_range r;

	merkle_range_init(&r);
	for (uint64_t i = 0; i < n; i++)
		merkle_range_append(&r, leaves[i]);
	merkle_range_root(&r, ret);
}

void merkle_roots(const merkle_hash *leaves, uint64_t n, const uint64_t *sizes, size_t k,
		  merkle_hash *roots)
{
	struct merkle_range r;

	merkle_range_init(&r);
	for (uint64_t i = 0;; i++) {
		for (size_t j = 0; j < k; j++)
			if (sizes[j] == i)
				merkle_range_root(&r, roots[j]);
		if (i == n)
			break;
		merkle_range_append(&r, leaves[i]);
	}
}

void merkle_range_init(struct merkle_range *r)
{
	r->size = 0;
	r->n = 0;
}

void merkle_range_append(struct merkle_range *r, const merkle_hash leaf)
{
	memcpy(r->hashes[r->n++], leaf, MERKLE_HASH_BYTES);
	/* Each trailing 1 bit of the old size is a perfect subtree of the same
	 * height as the new one: merge them. */
	for (uint64_t s = r->size; s & 1; s >>= 1) {
		merkle_node_hash(r->hashes[r->n - 2], r->hashes[r->n - 1], r->hashes[r->n - 2]);
		r->n--;
	}
	r->size++;
}

void merkle_range_root(const struct merkle_range *r, merkle_hash ret)
{
	if (r->n == 0) {
		merkle_empty_root(ret);
		return;
	}
	merkle_hash acc;
	memcpy(acc, r->hashes[r->n - 1], MERKLE_HASH_BYTES);
	for (size_t i = r->n - 1; i > 0; i--)
		merkle_node_hash(r->hashes[i - 1], acc, acc);
	memcpy(ret, acc, MERKLE_HASH_BYTES);
}

/* PATH(m, D[n]) of RFC 9162 2.1.3.1, deepest hash first. */
static void merkle_path(merkle_hash *leaves, uint64_t n, uint64_t m, merkle_hash *ret, size_t *k)
{
	if (n <= 1)
		return;
	uint64_t split = merkle_split(n);
	if (m < split) {
		merkle_path(leaves, split, m, ret, k);
		merkle_root(leaves + split, n - split, ret[(*k)++]);
	} else {
		merkle_path(leaves + split, n - split, m - split, ret, k);
		merkle_root(leaves, split, ret[(*k)++]);
	}
}

int merkle_inclusion_proof(merkle_hash *leaves, uint64_t size, uint64_t index,
			   merkle_hash ret[MERKLE_MAX_PROOF], size_t *ret_n)
{
	if (index >= size)
		return -EINVAL;
	*ret_n = 0;
	merkle_path(leaves, size, index, ret, ret_n);
	return 0;
}

/* SUBPROOF(m, D[n], b) of RFC 9162 2.1.4.1. */
static void merkle_subproof(merkle_hash *leaves, uint64_t n, uint64_t m, bool whole,
			    merkle_hash *ret, size_t *k)
{
	if (m == n) {
		if (!whole)
			merkle_root(leaves, n, ret[(*k)++]);
		return;
	}
	uint64_t split = merkle_split(n);
	if (m <= split) {
		merkle_subproof(leaves, split, m, whole, ret, k);
		merkle_root(leaves + split, n - split, ret[(*k)++]);
	} else {
		merkle_subproof(leaves + split, n - split, m - split, false, ret, k);
		merkle_root(leaves, split, ret[(*k)++]);
	}
}

int merkle_consistency_proof(merkle_hash *leaves, uint64_t size, uint64_t old,
			     merkle_hash ret[MERKLE_MAX_PROOF], size_t *ret_n)
{
	if (old == 0 || old > size)
		return -EINVAL;
	*ret_n = 0;
	merkle_subproof(leaves, size, old, true, ret, ret_n);
	return 0;
}

static bool merkle_equal(const merkle_hash a, const merkle_hash b)
{
	return CRYPTO_memcmp(a, b, MERKLE_HASH_BYTES) == 0;
}

bool merkle_verify_inclusion(uint64_t index, uint64_t size, const merkle_hash leaf,
			     merkle_hash *proof, size_t n, const merkle_hash root)
{
	if (index >= size || n > MERKLE_MAX_PROOF)
		return false;
	uint64_t fn = index, sn = size - 1;
	merkle_hash r;
	memcpy(r, leaf, MERKLE_HASH_BYTES);
	for (size_t i = 0; i < n; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(proof[i], r, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			merkle_node_hash(r, proof[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && merkle_equal(r, root);
}

bool merkle_verify_consistency(uint64_t old, uint64_t size, const merkle_hash old_root,
			       const merkle_hash root, merkle_hash *proof, size_t n)
{
	if (old == 0 || old > size || n > MERKLE_MAX_PROOF)
		return false;
	if (old == size)
		return n == 0 && merkle_equal(old_root, root);
	if (n == 0)
		return false;
	/* When old is a power of two its root is the first hash of the path. */
	merkle_hash path[MERKLE_MAX_PROOF + 1];
	size_t k = 0;
	if ((old & (old - 1)) == 0)
		memcpy(path[k++], old_root, MERKLE_HASH_BYTES);
	memcpy(path + k, proof, n * MERKLE_HASH_BYTES);
	k += n;

	uint64_t fn = old - 1, sn = size - 1;
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	merkle_hash fr, sr;
	memcpy(fr, path[0], MERKLE_HASH_BYTES);
	memcpy(sr, path[0], MERKLE_HASH_BYTES);
	for (size_t i = 1; i < k; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(path[i], fr, fr);
			merkle_node_hash(path[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			merkle_node_hash(sr, path[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && merkle_equal(fr, old_root) && merkle_equal(sr, root);
}
