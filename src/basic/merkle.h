/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The Merkle tree of RFC 9162 (Certificate Transparency 2.0, section 2.1)
 * with SHA-256: a leaf is SHA-256(0x00 || entry), a node
 * SHA-256(0x01 || left || right), the tree over n > 1 leaves splits at the
 * largest power of two below n, and the empty tree's hash is SHA-256(""). */
#define MERKLE_HASH_BYTES 32
#define MERKLE_MAX_PROOF  64 /* hashes in a proof of a tree of < 2^64 leaves */

typedef uint8_t merkle_hash[MERKLE_HASH_BYTES];

void merkle_leaf_hash(const void *entry, size_t n, merkle_hash ret);
void merkle_node_hash(const merkle_hash left, const merkle_hash right, merkle_hash ret);
void merkle_empty_root(merkle_hash ret);

/* The root of the tree whose leaf hashes are leaves[0..n). */
void merkle_root(merkle_hash *leaves, uint64_t n, merkle_hash ret);
/* The roots of the trees over the first sizes[j] leaves (each at most n),
 * into roots[j], in one pass over the leaves. */
void merkle_roots(const merkle_hash *leaves, uint64_t n, const uint64_t *sizes, size_t k,
		  merkle_hash *roots);

/* A compact range: the roots of the perfect subtrees that make up the tree
 * over the first `size` leaves, largest first; enough to append and to take
 * the root without the leaves. */
struct merkle_range {
	uint64_t size;
	size_t n;
	merkle_hash hashes[MERKLE_MAX_PROOF];
};
void merkle_range_init(struct merkle_range *r);
void merkle_range_append(struct merkle_range *r, const merkle_hash leaf);
void merkle_range_root(const struct merkle_range *r, merkle_hash ret);

/* RFC 9162 2.1.3.1: the inclusion proof of leaf index in the tree over
 * leaves[0..size); *ret_n hashes into ret. -EINVAL when index >= size. */
int merkle_inclusion_proof(merkle_hash *leaves, uint64_t size, uint64_t index,
			   merkle_hash ret[MERKLE_MAX_PROOF], size_t *ret_n);
/* RFC 9162 2.1.4.1: the consistency proof between the trees over the first
 * old and the first size leaves. -EINVAL unless 0 < old <= size. */
int merkle_consistency_proof(merkle_hash *leaves, uint64_t size, uint64_t old,
			     merkle_hash ret[MERKLE_MAX_PROOF], size_t *ret_n);

/* RFC 9162 2.1.3.2 and 2.1.4.2. A consistency proof from an empty tree is
 * refused (there is nothing to prove); equal sizes need an empty proof and
 * equal roots. */
bool merkle_verify_inclusion(uint64_t index, uint64_t size, const merkle_hash leaf,
			     merkle_hash *proof, size_t n, const merkle_hash root);
bool merkle_verify_consistency(uint64_t old, uint64_t size, const merkle_hash old_root,
			       const merkle_hash root, merkle_hash *proof, size_t n);
