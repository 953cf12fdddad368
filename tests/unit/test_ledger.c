/* SPDX-License-Identifier: MIT */
/* The Merkle tree (RFC 9162 known answers, proofs for every index and size
 * up to 72, mutated proofs), the ledger's entry and checkpoint parsers, and
 * appends, checkpoints and verification on a scratch state directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/merkle.h"
#include "basic/text.h"
#include "core/store/ledger.h"
#include "core/store/store.h"
#include "harness.h"
#include "ledger/entryscan.h"

/* The certificate-transparency test leaves (RFC 6962 test data,
 * transparency-dev/merkle testonly/constants.go) and their roots. */
static const struct {
	const char *data;
	size_t n;
} kat_leaves[] = {
	{ "", 0 },
	{ "\x00", 1 },
	{ "\x10", 1 },
	{ "\x20\x21", 2 },
	{ "\x30\x31", 2 },
	{ "\x40\x41\x42\x43", 4 },
	{ "\x50\x51\x52\x53\x54\x55\x56\x57", 8 },
	{ "\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f", 16 },
};
static const char *const kat_roots[] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static void test_merkle_known_roots(void)
{
	merkle_hash leaves[8], root;
	char hex[65];

	for (size_t i = 0; i < 8; i++)
		merkle_leaf_hash(kat_leaves[i].data, kat_leaves[i].n, leaves[i]);
	for (size_t n = 0; n <= 8; n++) {
		merkle_root(leaves, n, root);
		hex_encode(root, 32, hex);
		ASSERT_EQ_STR(hex, kat_roots[n]);
	}
	/* The compact range gives the same roots, one leaf at a time. */
	struct merkle_range r;
	merkle_range_init(&r);
	for (size_t n = 1; n <= 8; n++) {
		merkle_range_append(&r, leaves[n - 1]);
		merkle_range_root(&r, root);
		hex_encode(root, 32, hex);
		ASSERT_EQ_STR(hex, kat_roots[n]);
	}
}

/* RFC 9162 example: the inclusion proof of leaf 0 in the tree of 8 is
 * [leaf 1, node(2,3), node(4..7)]; of leaf 5 in the tree of 7 (d(5)'s
 * sibling d(4), then d(6), then node(0..3)). */
static void test_merkle_proof_shapes(void)
{
	merkle_hash leaves[8], proof[MERKLE_MAX_PROOF], want;
	size_t n;

	for (size_t i = 0; i < 8; i++)
		merkle_leaf_hash(kat_leaves[i].data, kat_leaves[i].n, leaves[i]);
	ASSERT_EQ_INT(merkle_inclusion_proof(leaves, 8, 0, proof, &n), 0);
	ASSERT_EQ_INT(n, 3);
	ASSERT_TRUE(memcmp(proof[0], leaves[1], 32) == 0);
	merkle_root(leaves + 4, 4, want);
	ASSERT_TRUE(memcmp(proof[2], want, 32) == 0);
	ASSERT_EQ_INT(merkle_inclusion_proof(leaves, 7, 5, proof, &n), 0);
	ASSERT_EQ_INT(n, 3);
	ASSERT_TRUE(memcmp(proof[0], leaves[4], 32) == 0);
	ASSERT_TRUE(memcmp(proof[1], leaves[6], 32) == 0);
	merkle_root(leaves, 4, want);
	ASSERT_TRUE(memcmp(proof[2], want, 32) == 0);
	/* The consistency proof from 3 to 7 is [c, d, g, l] in RFC 9162's
	 * figure: d(2), d(3), node(0,1), node(node(4,5), d(6)). */
	ASSERT_EQ_INT(merkle_consistency_proof(leaves, 7, 3, proof, &n), 0);
	ASSERT_EQ_INT(n, 4);
	ASSERT_TRUE(memcmp(proof[0], leaves[2], 32) == 0);
	ASSERT_TRUE(memcmp(proof[1], leaves[3], 32) == 0);
	merkle_root(leaves, 2, want);
	ASSERT_TRUE(memcmp(proof[2], want, 32) == 0);
	merkle_root(leaves + 4, 3, want);
	ASSERT_TRUE(memcmp(proof[3], want, 32) == 0);
	ASSERT_EQ_INT(merkle_inclusion_proof(leaves, 7, 7, proof, &n), -EINVAL);
	ASSERT_EQ_INT(merkle_consistency_proof(leaves, 7, 0, proof, &n), -EINVAL);
}

#define PROOF_MAX_SIZE 72

static void test_merkle_inclusion_every_index(void)
{
	merkle_hash leaves[PROOF_MAX_SIZE + 1], root, proof[MERKLE_MAX_PROOF], wrong_root, bigger;
	size_t n;

	for (size_t i = 0; i <= PROOF_MAX_SIZE; i++) {
		char b = (char)i;
		merkle_leaf_hash(&b, 1, leaves[i]);
	}
	for (uint64_t size = 1; size <= PROOF_MAX_SIZE; size++) {
		merkle_root(leaves, size, root);
		merkle_root(leaves, size + 1, bigger);
		memcpy(wrong_root, root, 32);
		wrong_root[5] ^= 1;
		for (uint64_t i = 0; i < size; i++) {
			ASSERT_EQ_INT(merkle_inclusion_proof(leaves, size, i, proof, &n), 0);
			ASSERT_TRUE(merkle_verify_inclusion(i, size, leaves[i], proof, n, root));
			ASSERT_TRUE(!merkle_verify_inclusion(i, size, leaves[i], proof, n, wrong_root));
			ASSERT_TRUE(!merkle_verify_inclusion(i, size + 1, leaves[i], proof, n, bigger));
			ASSERT_TRUE(!merkle_verify_inclusion(i, size, leaves[(i + 1) % PROOF_MAX_SIZE],
							     proof, n, root));
			if (size > 1)
				ASSERT_TRUE(!merkle_verify_inclusion((i + 1) % size, size,
								     leaves[i], proof, n, root));
			ASSERT_TRUE(!merkle_verify_inclusion(size, size, leaves[i], proof, n, root));
			if (n > 0) {
				ASSERT_TRUE(!merkle_verify_inclusion(i, size, leaves[i], proof,
								     n - 1, root));
				proof[n - 1][0] ^= 0x80;
				ASSERT_TRUE(!merkle_verify_inclusion(i, size, leaves[i], proof, n,
								     root));
				proof[n - 1][0] ^= 0x80;
			}
			memcpy(proof[n], root, 32);
			ASSERT_TRUE(!merkle_verify_inclusion(i, size, leaves[i], proof, n + 1, root));
		}
	}
}

static void test_merkle_consistency_every_pair(void)
{
	merkle_hash leaves[PROOF_MAX_SIZE], proof[MERKLE_MAX_PROOF];
	merkle_hash roots[PROOF_MAX_SIZE + 1];
	size_t n;

	for (size_t i = 0; i < PROOF_MAX_SIZE; i++) {
		char b[2] = { 'x', (char)i };
		merkle_leaf_hash(b, 2, leaves[i]);
	}
	for (uint64_t s = 0; s <= PROOF_MAX_SIZE; s++)
		merkle_root(leaves, s, roots[s]);
	for (uint64_t size = 1; size <= PROOF_MAX_SIZE; size++)
		for (uint64_t old = 1; old <= size; old++) {
			ASSERT_EQ_INT(merkle_consistency_proof(leaves, size, old, proof, &n), 0);
			ASSERT_TRUE(merkle_verify_consistency(old, size, roots[old], roots[size],
							      proof, n));
			if (old < size) {
				ASSERT_TRUE(!merkle_verify_consistency(old, size, roots[old - 1],
								       roots[size], proof, n));
				ASSERT_TRUE(!merkle_verify_consistency(old, size, roots[old],
								       roots[size - 1], proof, n));
				proof[0][3] ^= 4;
				ASSERT_TRUE(!merkle_verify_consistency(old, size, roots[old],
								       roots[size], proof, n));
				proof[0][3] ^= 4;
				ASSERT_TRUE(!merkle_verify_consistency(old, size, roots[old],
								       roots[size], proof, n - 1));
			}
			ASSERT_TRUE(!merkle_verify_consistency(0, size, roots[0], roots[size],
							       proof, n));
		}
}

static void test_ledger_entry_parser(void)
{
	struct ledger_entry e;
	struct error err;
	const char *good =
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"receipts/42.json\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"2026-01-01T00:00:00Z\"}";

	ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, good, strlen(good), &e, &err), 0);
	ASSERT_EQ_INT(e.seq, 3);
	ASSERT_EQ_INT(e.kind, LEDGER_RECEIPT);
	ASSERT_EQ_STR(e.path, "receipts/42.json");
	static const char *const bad[] = {
		/* a duplicate key */
		"{\"v\":1,\"seq\":3,\"seq\":4,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"receipts/42.json\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* a path that climbs out */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"../x\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* an absolute path that is not the system approver */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"/etc/passwd\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* upper-case hex */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"E3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* version 2 */
		"{\"v\":2,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* an extra field */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\",\"x\":1}",
		/* an unknown kind */
		"{\"v\":1,\"seq\":3,\"kind\":\"nope\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		/* trailing bytes */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"} ",
		"{\"v\":1,\"seq\":-1,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"a/b\",\"path\":\"r\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"time\":\"t\"}",
		"\t{}",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, bad[i], strlen(bad[i]), &e, &err),
			      -EBADMSG);
}

/* Format version 2: an entry may carry its record's bytes, last. */
static void test_ledger_entry_record(void)
{
	struct ledger_entry e;
	struct error err;
	char *bytes = NULL;
	size_t n = 0;
	/* SHA-256("hi\n") */
	const char *good =
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"receipts/42.json\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"record\":\"hi\\n\"}";
	ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, good, strlen(good), &e, &err), 0);
	ASSERT_TRUE(e.has_record);
	ASSERT_EQ_INT(ledger_entry_record(&ledger_state_schema, good, strlen(good), &bytes, &n, &err),
		      0);
	ASSERT_EQ_INT(n, 3);
	ASSERT_EQ_STR(bytes, "hi\n");
	free(bytes);
	/* Bytes that are not the ones its sha256 names are never handed out. */
	const char *other =
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"receipts/42.json\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"record\":\"ho\\n\"}";
	ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, other, strlen(other), &e, &err), 0);
	ASSERT_EQ_INT(ledger_entry_record(&ledger_state_schema, other, strlen(other), &bytes, &n, &err),
		      -EBADMSG);
	const char *none =
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\"}";
	ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, none, strlen(none), &e, &err), 0);
	ASSERT_TRUE(!e.has_record);
	ASSERT_EQ_INT(ledger_entry_record(&ledger_state_schema, none, strlen(none), &bytes, &n, &err),
		      -ENODATA);
	static const char *const bad[] = {
		/* not a string */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"record\":{}}",
		/* a NUL inside */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"record\":\"a\\u0000b\"}",
		/* a ninth field */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"record\":\"x\",\"x\":1}",
		/* an eighth field that is not the record */
		"{\"v\":1,\"seq\":3,\"kind\":\"receipt\",\"id\":\"42\",\"path\":\"r\",\"sha256\":\"98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4\",\"time\":\"t\",\"records\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, bad[i], strlen(bad[i]), &e, &err),
			      -EBADMSG);
	ASSERT_TRUE(ledger_record_embeddable("hi\n", 3));
	ASSERT_TRUE(!ledger_record_embeddable("a\0b", 3));
	ASSERT_TRUE(!ledger_record_embeddable("\xff", 1));
}

static char scratch[64];

static struct store *scratch_store(void)
{
	struct store *store = NULL;
	struct error err;

	snprintf(scratch, sizeof(scratch), "/tmp/airlock-test-ledger.XXXXXX");
	if (!mkdtemp(scratch) || store_open(scratch, true, &store, &err) < 0)
		return NULL;
	return store;
}

static void scratch_remove(struct store *store)
{
	store_free(store);
	(void)remove_tree_at(AT_FDCWD, scratch);
}

static int read_text(struct store *store, const char *path, char **ret, size_t *n)
{
	struct error err;

	return file_read_capped(store_dir_fd(store), path, 1 << 24, ret, n, &err);
}

static void test_ledger_commit_checkpoint_verify(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	struct ledger_report rep;
	ASSERT_TRUE(store);

	char id[16], text[64];
	for (int i = 1; i <= 70; i++) {
		snprintf(id, sizeof(id), "%d", i);
		snprintf(text, sizeof(text), "receipt %d\n", i);
		ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, id, NULL, text, strlen(text),
					   false, &err),
			      0);
	}
	char *vkey_text = NULL;
	ASSERT_EQ_INT(ledger_public_key(store_ledger(store), false, &vkey_text, &err), 0);
	struct ledger_vkey vkey;
	ASSERT_EQ_INT(ledger_vkey_parse(vkey_text, &vkey, &err), 0);
	free(vkey_text);
	/* Checkpoints at 1 and 64; 6 entries after it. */
	ASSERT_EQ_INT(ledger_verify(store_ledger(store), &vkey, NULL, 0, &rep, &err), 0);
	ASSERT_EQ_INT(rep.n_findings, 0);
	ASSERT_EQ_INT(rep.size, 70);
	ASSERT_EQ_INT(rep.checkpoint_size, 64);
	ledger_report_release(&rep);

	/* A receipt rewritten is named. */
	struct error ignored;
	(void)unlinkat(store_receipts_fd(store), "7.json", 0);
	ASSERT_EQ_INT(file_write_atomic(store_receipts_fd(store), "7.json", "forged\n", 7, 0600,
					false, &ignored),
		      0);
	ASSERT_EQ_INT(ledger_backs_file(store_ledger(store), LEDGER_RECEIPT, "7", "receipts/7.json",
					&err),
		      -EBADMSG);
	ASSERT_EQ_INT(ledger_backs_file(store_ledger(store), LEDGER_RECEIPT, "8", "receipts/8.json",
					&err),
		      0);
	ASSERT_EQ_INT(ledger_verify(store_ledger(store), &vkey, NULL, 0, &rep, &err), 0);
	ASSERT_EQ_INT(rep.n_findings, 1);
	ASSERT_EQ_INT(rep.findings[0].type, LEDGER_FINDING_DIFFERS);
	ASSERT_TRUE(strstr(rep.findings[0].what, "receipts/7.json") != NULL);
	ledger_report_release(&rep);

	/* An inclusion proof verifies offline, and binds the record. */
	char *proof = NULL;
	ASSERT_EQ_INT(ledger_prove(store_ledger(store), "receipt:8", &proof, &err), 0);
	char hex[SHA256_HEX_SIZE];
	sha256_hex("receipt 8\n", 10, hex);
	struct ledger_entry e;
	ASSERT_EQ_INT(ledger_verify_proof(&ledger_state_schema, proof, strlen(proof), &vkey, NULL,
					  0, hex, &e, &err),
		      0);
	ASSERT_EQ_STR(e.id, "8");
	sha256_hex("receipt 9\n", 10, hex);
	ASSERT_EQ_INT(ledger_verify_proof(&ledger_state_schema, proof, strlen(proof), &vkey, NULL,
					  0, hex, &e, &err),
		      -EBADMSG);
	free(proof);
	ASSERT_EQ_INT(ledger_prove(store_ledger(store), "receipt:70", &proof, &err), -EAGAIN);

	/* A consistency proof from an old checkpoint kept elsewhere. */
	char *old = NULL;
	size_t old_n;
	ASSERT_EQ_INT(read_text(store, "ledger/checkpoint", &old, &old_n), 0);
	ASSERT_EQ_INT(ledger_checkpoint(store_ledger(store), &err), 0);
	ASSERT_EQ_INT(ledger_prove_consistency(store_ledger(store), 64, 0, &proof, &err), 0);
	ASSERT_EQ_INT(ledger_verify_proof(&ledger_state_schema, proof, strlen(proof), &vkey, old,
					  old_n, NULL, NULL, &err),
		      0);
	free(proof);
	ASSERT_EQ_INT(ledger_verify(store_ledger(store), &vkey, old, old_n, &rep, &err), 0);
	ASSERT_EQ_INT(rep.checkpoint_size, 70);
	ledger_report_release(&rep);
	free(old);
	scratch_remove(store);
}

static void test_ledger_checkpoint_signatures(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	ASSERT_TRUE(store);
	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "1", NULL, "x", 1, false, &err), 0);
	char *vkey_text = NULL, *note = NULL;
	size_t n;
	ASSERT_EQ_INT(ledger_public_key(store_ledger(store), false, &vkey_text, &err), 0);
	struct ledger_vkey vkey, other;
	ASSERT_EQ_INT(ledger_vkey_parse(vkey_text, &vkey, &err), 0);
	ASSERT_EQ_INT(read_text(store, "ledger/checkpoint", &note, &n), 0);
	struct ledger_checkpoint cp;
	ASSERT_EQ_INT(ledger_checkpoint_parse(note, n, &vkey, &cp, &err), 0);
	ASSERT_EQ_INT(cp.size, 1);
	ledger_checkpoint_release(&cp);
	/* One character of the body changed. */
	note[0] ^= 1;
	ASSERT_EQ_INT(ledger_checkpoint_parse(note, n, &vkey, &cp, &err), -EBADMSG);
	note[0] ^= 1;
	/* A bit of the signature flipped. */
	char *sig = strrchr(note, ' ') + 10, sig_was = *sig;
	*sig = *sig == 'A' ? 'B' : 'A';
	ASSERT_EQ_INT(ledger_checkpoint_parse(note, n, &vkey, &cp, &err), -EBADMSG);
	*sig = sig_was;
	ASSERT_EQ_INT(ledger_checkpoint_parse(note, n, &vkey, &cp, &err), 0);
	ledger_checkpoint_release(&cp);
	/* C2SP signed-note: the signature lines follow the one blank line, each
	 * non-empty, and the note starts with its text: a blank line before,
	 * among or after them, or before the text, is malformed (as Go's
	 * x/mod/sumdb/note has it) though the signature covers the same body. */
	char *split = strstr(note, "\n\n");
	ASSERT_TRUE(split);
	int body_n = (int)(split - note) + 1;
	const char *sigs = split + 2;
	char *bad[7] = { NULL };
	ASSERT_TRUE(asprintf(&bad[0], "%.*s\n%s\n", body_n, note, sigs) > 0);
	ASSERT_TRUE(asprintf(&bad[1], "%.*s\n\n%s", body_n, note, sigs) > 0);
	ASSERT_TRUE(asprintf(&bad[2], "\n%.*s\n%s", body_n, note, sigs) > 0);
	ASSERT_TRUE(asprintf(&bad[3], "%.*s\n", body_n, note) > 0);
	/* Another signer's line that is not `— <name> <base64 of 5+ bytes>`,
	 * or a control character, is malformed too. */
	ASSERT_TRUE(asprintf(&bad[4], "%s\u2014 w.example not*base64!\n", note) > 0);
	ASSERT_TRUE(asprintf(&bad[5], "%s\u2014 w.example AAAA\n", note) > 0);
	ASSERT_TRUE(asprintf(&bad[6], "%s\u2014 w.example\tAAAAAAAA\n", note) > 0);
	for (size_t i = 0; i < 7; i++) {
		ASSERT_EQ_INT(ledger_checkpoint_parse(bad[i], strlen(bad[i]), &vkey, &cp, &err),
			      -EBADMSG);
		ASSERT_EQ_INT(ledger_checkpoint_parse(bad[i], strlen(bad[i]), NULL, &cp, &err),
			      -EBADMSG);
		free(bad[i]);
	}
	/* Another key (another state directory's) does not verify it. */
	struct store *second = store;
	char first_dir[64];
	snprintf(first_dir, sizeof(first_dir), "%s", scratch);
	second = scratch_store();
	ASSERT_TRUE(second);
	ASSERT_EQ_INT(store_commit(second, LEDGER_RECEIPT, "1", NULL, "x", 1, false, &err), 0);
	free(vkey_text);
	ASSERT_EQ_INT(ledger_public_key(store_ledger(second), false, &vkey_text, &err), 0);
	if (ledger_vkey_parse(vkey_text, &other, &err) < 0)
		printf("# %s: %s\n", vkey_text, err.msg);
	ASSERT_EQ_INT(ledger_vkey_parse(vkey_text, &other, &err), 0);
	free(note);
	ASSERT_EQ_INT(read_text(store, "ledger/checkpoint", &note, &n), 0);
	ASSERT_EQ_INT(ledger_checkpoint_parse(note, n, &other, &cp, &err), -EBADMSG);
	/* A vkey with a wrong id is refused. */
	vkey_text[strlen(vkey.name) + 1] ^= 1;
	ASSERT_TRUE(ledger_vkey_parse(vkey_text, &other, &err) < 0);
	free(vkey_text);
	free(note);
	scratch_remove(second);
	(void)remove_tree_at(AT_FDCWD, first_dir);
	store_free(store);
}

/* A receipt is committed by its entry, which carries its bytes: the file is
 * a cache the store rebuilds; bytes an entry cannot carry (a NUL, too many)
 * are committed the other way, file first, and are not rebuilt. */
static void test_ledger_record_cache(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	struct ledger_report rep;
	char *text = NULL, *vkey_text = NULL;
	size_t n;
	struct ledger_vkey vkey;
	ASSERT_TRUE(store);

	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "1", NULL, "one\n", 4, false, &err), 0);
	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "2", NULL, "t\0o\n", 4, false, &err), 0);
	size_t big_n = 70 << 10;
	char *big = malloc(big_n);
	ASSERT_TRUE(big);
	memset(big, 'b', big_n);
	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "3", NULL, big, big_n, false, &err), 0);
	/* An existing file is never replaced, nothing is appended. */
	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "1", NULL, "uno\n", 4, false, &err), -EEXIST);
	ASSERT_EQ_INT(ledger_record(store_ledger(store), LEDGER_RECEIPT, "1", "receipts/1.json",
				    &text, &n, &err),
		      0);
	ASSERT_EQ_STR(text, "one\n");
	free(text);
	ASSERT_EQ_INT(ledger_record(store_ledger(store), LEDGER_RECEIPT, "2", "receipts/2.json",
				    &text, &n, &err),
		      -ENODATA);
	ASSERT_EQ_INT(ledger_record(store_ledger(store), LEDGER_RECEIPT, "3", "receipts/3.json",
				    &text, &n, &err),
		      -ENODATA);
	ASSERT_EQ_INT(ledger_record(store_ledger(store), LEDGER_RECEIPT, "9", "receipts/1.json",
				    &text, &n, &err),
		      -EBADMSG);
	ASSERT_EQ_INT(ledger_record(store_ledger(store), LEDGER_RECEIPT, "4", "receipts/4.json",
				    &text, &n, &err),
		      -ENOENT);

	ASSERT_EQ_INT(ledger_public_key(store_ledger(store), false, &vkey_text, &err), 0);
	ASSERT_EQ_INT(ledger_vkey_parse(vkey_text, &vkey, &err), 0);
	free(vkey_text);
	/* The caches gone: receipt 1 is no finding and is rebuilt; receipts 2
	 * and 3 were written first, and are missing. */
	ASSERT_EQ_INT(unlinkat(store_receipts_fd(store), "1.json", 0), 0);
	ASSERT_EQ_INT(unlinkat(store_receipts_fd(store), "2.json", 0), 0);
	ASSERT_EQ_INT(ledger_verify(store_ledger(store), &vkey, NULL, 0, &rep, &err), 0);
	ASSERT_EQ_INT(rep.n_findings, 1);
	ASSERT_EQ_INT(rep.findings[0].type, LEDGER_FINDING_MISSING);
	ASSERT_TRUE(strstr(rep.findings[0].what, "receipts/2.json") != NULL);
	ledger_report_release(&rep);
	ASSERT_EQ_INT(store_read_receipt(store, 1, &text, &err), 0);
	ASSERT_EQ_STR(text, "one\n");
	free(text);
	ASSERT_EQ_INT(read_text(store, "receipts/1.json", &text, &n), 0);
	ASSERT_EQ_INT(n, 4);
	free(text);
	ASSERT_TRUE(store_read_receipt(store, 2, &text, &err) < 0);
	ASSERT_EQ_INT(store_read_record(store, LEDGER_RECEIPT, "3", "receipts/3.json", big_n, &text,
					&n, &err),
		      0);
	ASSERT_EQ_INT(n, big_n);
	free(text);
	free(big);
	scratch_remove(store);
}

/* How far ledger/sync says the log is durable (its last field, after the
 * magic, the boot id, the device and the inode), and the log's size. */
static void sync_state(struct store *store, uint64_t *ret_synced, uint64_t *ret_size)
{
	struct stat st;
	int fd = openat(store_dir_fd(store), "ledger/sync", O_RDONLY | O_CLOEXEC);
	*ret_synced = 0;
	if (fd >= 0) {
		if (pread(fd, ret_synced, sizeof(*ret_synced), 24 + 40 + 16) !=
		    (ssize_t)sizeof(*ret_synced))
			*ret_synced = 0;
		close(fd);
	}
	*ret_size = fstatat(store_dir_fd(store), "ledger/log", &st, 0) == 0 ? (uint64_t)st.st_size : 0;
}

/* store_sync_defer(): a record written before its entry appends without
 * the sync, which the next synced append (a receipt even while deferred;
 * any after store_sync_resume()) or store_sync_flush() makes. */
static void test_store_sync_defer(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	uint64_t synced, size;
	ASSERT_TRUE(store);

	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "1", NULL, "one\n", 4, false, &err), 0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(size > 0 && synced == size);
	store_sync_defer(store);
	ASSERT_EQ_INT(store_commit(store, LEDGER_DRYRUN, "5", "dryruns/5/changeset.json", "{}\n", 3,
				   false, &err),
		      0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(synced < size);
	/* A receipt syncs while deferred: its cache follows its entry. */
	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "2", NULL, "two\n", 4, false, &err), 0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(synced == size);
	ASSERT_EQ_INT(store_commit(store, LEDGER_DRYRUN, "6", "dryruns/6/changeset.json", "{}\n", 3,
				   false, &err),
		      0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(synced < size);
	ASSERT_EQ_INT(store_sync_flush(store, &err), 0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(synced == size);
	/* Resumed: the next commit syncs, covering the deferred line. */
	store_sync_defer(store);
	ASSERT_EQ_INT(store_commit(store, LEDGER_DRYRUN, "7", "dryruns/7/changeset.json", "{}\n", 3,
				   false, &err),
		      0);
	store_sync_resume(store);
	ASSERT_EQ_INT(store_commit(store, LEDGER_DRYRUN, "8", "dryruns/8/changeset.json", "{}\n", 3,
				   false, &err),
		      0);
	sync_state(store, &synced, &size);
	ASSERT_TRUE(synced == size);
	scratch_remove(store);
}

/* A permit's record moves on, each version carried by its entry: a file
 * holding an earlier version's bytes is a stale cache (1, the last bytes);
 * the last version's bytes are backed (0); bytes no entry carried, or an
 * earlier version of another path, are not (-EBADMSG). */
static void test_ledger_record_since(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	const char *v[] = { "{\"v\":1}\n", "{\"v\":2}\n", "{\"v\":3}\n" };
	char hex[SHA256_HEX_SIZE];
	char *text = NULL;
	size_t n = 0;
	ASSERT_TRUE(store);

	for (size_t i = 0; i < 3; i++)
		ASSERT_EQ_INT(store_commit(store, LEDGER_PERMIT_TRANSITION, "1", "permits/1.json",
					   v[i], strlen(v[i]), true, &err),
			      0);
	ASSERT_EQ_INT(store_commit(store, LEDGER_PERMIT_TRANSITION, "2", "permits/2.json",
				   "{\"w\":1}\n", 8, true, &err),
		      0);
	struct ledger *l = store_ledger(store);
	for (size_t i = 0; i < 2; i++) {
		sha256_hex(v[i], strlen(v[i]), hex);
		ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "1",
						  "permits/1.json", hex, &text, &n, &err),
			      1);
		ASSERT_EQ_STR(text, v[2]);
		ASSERT_EQ_INT(n, strlen(v[2]));
		free(text);
		/* Another permit's record never carried these bytes. */
		ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "2",
						  "permits/2.json", hex, &text, &n, &err),
			      -EBADMSG);
		ASSERT_TRUE(text == NULL);
	}
	sha256_hex(v[2], strlen(v[2]), hex);
	ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "1", "permits/1.json", hex,
					  &text, &n, &err),
		      0);
	ASSERT_TRUE(text == NULL);
	sha256_hex("{\"v\":0}\n", 8, hex);
	ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "1", "permits/1.json", hex,
					  &text, &n, &err),
		      -EBADMSG);
	ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "3", "permits/3.json", hex,
					  &text, &n, &err),
		      -ENOENT);
	/* The last entry of another id for the path: not this record. */
	sha256_hex(v[0], strlen(v[0]), hex);
	ASSERT_EQ_INT(ledger_record_since(l, LEDGER_PERMIT_TRANSITION, "9", "permits/1.json", hex,
					  &text, &n, &err),
		      -EBADMSG);
	scratch_remove(store);
}

/* ledger_open_ids() passes over lines laid out as the writer lays them
 * whose kind is neither open nor close, and reads every other line in full:
 * an open entry in another key order, or with its kind escaped, still
 * counts; a line with a second "kind" is refused by the parser. */
static void test_ledger_open_ids_lines(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	uint64_t *ids = NULL;
	size_t n = 0;
	ASSERT_TRUE(store);

	ASSERT_EQ_INT(store_commit(store, LEDGER_RECEIPT, "1", NULL, "{\"kind\":\"gate-open\"}\n",
				   21, false, &err),
		      0);
#define SHA  "0000000000000000000000000000000000000000000000000000000000000000"
#define TIME "\"time\":\"2026-12-05T00:00:00.000Z\""
	static const char lines[] =
		"{\"v\":1,\"seq\":1,\"kind\":\"gate-open\",\"id\":\"1\",\"path\":\"gate/open/s/1.json\","
		"\"sha256\":\"" SHA "\"," TIME "}\n"
		"{\"seq\":2,\"v\":1,\"id\":\"2\",\"path\":\"gate/open/s/2.json\",\"sha256\":\"" SHA
		"\"," TIME ",\"kind\":\"gate-open\"}\n"
		"{\"v\":1,\"seq\":3,\"kind\":\"gate-op\\u0065n\",\"id\":\"3\","
		"\"path\":\"gate/open/s/3.json\",\"sha256\":\"" SHA "\"," TIME "}\n"
		"{\"v\":1,\"seq\":4,\"kind\":\"receipt\",\"id\":\"4\",\"path\":\"gate/open/s/4.json\","
		"\"sha256\":\"" SHA "\"," TIME ",\"kind\":\"gate-open\"}\n"
		"{\"v\":1,\"seq\":5,\"kind\":\"gate-open\",\"id\":\"5\",\"path\":\"gate/open/t/5.json\","
		"\"sha256\":\"" SHA "\"," TIME "}\n"
		"{\"v\":1,\"seq\":6,\"kind\":\"gate-close\",\"id\":\"1\",\"path\":\"gate/closed/1.json\","
		"\"sha256\":\"" SHA "\"," TIME "}\n";
#undef SHA
#undef TIME
	int fd = openat(store_dir_fd(store), "ledger/log", O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(fd_write_all(fd, lines, sizeof(lines) - 1), 0);
	close(fd);
	ASSERT_EQ_INT(ledger_open_ids(store_ledger(store), "gate/open/s/", &ids, &n, &err), 0);
	ASSERT_EQ_INT(n, 2);
	ASSERT_TRUE((ids[0] == 2 && ids[1] == 3) || (ids[0] == 3 && ids[1] == 2));
	free(ids);
	scratch_remove(store);
}

/* N processes append at once: every entry lands once, in seq order. */
static void test_ledger_concurrent_appenders(void)
{
	struct store *store = scratch_store();
	struct error err = { 0 };
	ASSERT_TRUE(store);
	enum { PROCS = 6, EACH = 40 };
	for (int p = 0; p < PROCS; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct store *s = NULL;
			struct error e;
			if (store_open(scratch, false, &s, &e) < 0)
				_exit(1);
			for (int i = 0; i < EACH; i++) {
				char id[32];
				snprintf(id, sizeof(id), "%d", p * 1000 + i + 1);
				if (store_commit(s, LEDGER_RECEIPT, id, NULL, id, strlen(id), false,
						 &e) < 0)
					_exit(2);
			}
			_exit(0);
		}
		ASSERT_TRUE(pid > 0);
	}
	int status, ok = 0;
	while (wait(&status) > 0)
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	ASSERT_EQ_INT(ok, PROCS);
	char *vkey_text = NULL;
	struct ledger_vkey vkey;
	struct ledger_report rep;
	ASSERT_EQ_INT(ledger_public_key(store_ledger(store), false, &vkey_text, &err), 0);
	ASSERT_EQ_INT(ledger_vkey_parse(vkey_text, &vkey, &err), 0);
	free(vkey_text);
	ASSERT_EQ_INT(ledger_verify(store_ledger(store), &vkey, NULL, 0, &rep, &err), 0);
	ASSERT_EQ_INT(rep.size, PROCS * EACH);
	ASSERT_EQ_INT(rep.n_findings, 0);
	ledger_report_release(&rep);
	scratch_remove(store);
}

/* ---- the canonical reader against the strict parser (tests/fuzz/fuzz_entryscan.c) -- */

static uint64_t scan_rng = 0x9e3779b97f4a7c15ULL;

static uint64_t scan_rand(void)
{
	scan_rng ^= scan_rng << 13;
	scan_rng ^= scan_rng >> 7;
	scan_rng ^= scan_rng << 17;
	return scan_rng;
}

static bool scan_same(const struct ledger_entry *a, const struct ledger_entry *b)
{
	return a->seq == b->seq && a->kind == b->kind && strcmp(a->id, b->id) == 0 &&
	       strcmp(a->path, b->path) == 0 && strcmp(a->sha256, b->sha256) == 0 &&
	       strcmp(a->time, b->time) == 0;
}

/* A value of up to max bytes: mostly what entries hold, now and then a
 * byte the reader must leave to jansson (a quote, a backslash, a control
 * character, UTF-8, DEL, a space or a slash). */
static void scan_value(char *buf, size_t max, const char *usual)
{
	static const char *const odd[] = { "\"", "\\", "\n", "\x01", "\xc3\xa9",	"\x7f",
					   " ",	 "/",  ".",  "..",   "\xf0\x9f\x98\x80" };
	size_t n = 1 + scan_rand() % max, o = 0;

	while (o < n) {
		const char *add = scan_rand() % 48 == 0 ? odd[scan_rand() % 11] : NULL;
		char one[2] = { usual[scan_rand() % strlen(usual)], 0 };
		if (!add)
			add = one;
		if (o + strlen(add) > n)
			break;
		memcpy(buf + o, add, strlen(add));
		o += strlen(add);
	}
	buf[o] = '\0';
}

/* What the differential asserts of one line; returns whether the canonical
 * reader took it (1), left it (0), or they disagreed (-1). */
static int scan_check(const char *line, size_t n)
{
	struct ledger_entry scanned, parsed, read;
	struct ledger_scan_record rec;
	struct error err;
	int p = ledger_entry_parse(&ledger_state_schema, line, n, &parsed, &err);
	bool took = ledger_entry_scan(&ledger_state_schema, line, n, &scanned, &rec);
	int r = ledger_entry_read(&ledger_state_schema, line, n, &read, &err);

	if (r != p || (r == 0 && !scan_same(&read, &parsed)))
		return -1;
	if (!took)
		return 0;
	if (!rec.text)
		return p == 0 && scan_same(&scanned, &parsed) ? 1 : -1;
	/* A record: the line without it must be that entry, the field a string. */
	json_error_t jerr;
	json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	bool ok = json_is_object(doc) && json_object_size(doc) == 8 &&
		  json_is_string(json_object_get(doc, "record"));
	json_decref(doc);
	size_t m = (size_t)(rec.text - line) - strlen(",\"record\":\"");
	char *without = strndup(line, m + 1);
	if (!without)
		return -1;
	without[m] = '}';
	ok = ok && ledger_entry_parse(&ledger_state_schema, without, m + 1, &parsed, &err) == 0 &&
	     scan_same(&scanned, &parsed);
	free(without);
	return ok ? 1 : -1;
}

static void test_ledger_entryscan_differential(void)
{
	static const char *const kinds[] = {
		"receipt", "gate-open", "gate-close",	     "dryrun",	 "apply",
		"discard", "recovered", "permit-transition", "receipts", ""
	};
	size_t took = 0, canonical = 0, with_record = 0;

	for (int i = 0; i < 20000; i++) {
		char id[200], path[600], time[80], sha[SHA256_HEX_SIZE], record[300];
		scan_value(id, i % 50 == 0 ? 140 : 12, "0123456789abcdefXYZ-_:~");
		scan_value(path, i % 50 == 1 ? 530 : 40, "abcdefgh0123456789/._-");
		scan_value(time, i % 50 == 2 ? 70 : 24, "0123456789-:TZ.");
		for (int k = 0; k < 64; k++)
			sha[k] = "0123456789abcdef"[scan_rand() % 16];
		sha[64] = '\0';
		if (i % 40 == 3)
			sha[scan_rand() % 64] = 'A';
		const char *kind = kinds[scan_rand() % 10];
		if (i % 30 == 4)
			snprintf(path, sizeof(path), "/etc/airlock/approver.json");
		json_int_t seq = (json_int_t)(scan_rand() >> (scan_rand() % 64));
		if (i % 25 == 5)
			seq = -seq - 1;
		/* As ledger_entry_format() writes it, with a record as the next
		 * version's receipts carry it: every byte jansson escapes. */
		json_t *doc =
			json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:s}", "v", 1, "seq", seq, "kind",
				  kind, "id", id, "path", path, "sha256", sha, "time", time);
		ASSERT_TRUE(doc != NULL);
		bool has_record = i % 3 == 0;
		if (has_record) {
			size_t rn = scan_rand() % (sizeof(record) - 2);
			for (size_t k = 0; k < rn; k++)
				record[k] = (char)(1 + scan_rand() % 126);
			if (i % 9 == 0 && rn > 0) /* DEL, which the line may not hold */
				record[scan_rand() % rn] = 0x7f;
			if (i % 7 == 0) { /* UTF-8, which jansson leaves as it is */
				memcpy(record + rn, "\xc3\xa9", 2);
				rn += 2;
			}
			json_object_set_new(doc, "record", json_stringn(record, rn));
		}
		char *text = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		ASSERT_TRUE(text != NULL);
		size_t n = strlen(text);
		struct ledger_entry e;
		struct error err;
		/* The line without its record is canonical when the parser takes it,
		 * no value needed an escape and seq has at most 18 digits. */
		bool plain = seq < 1000000000000000000LL && !strpbrk(id, "\"\\") &&
			     !strpbrk(path, "\"\\") && !strpbrk(time, "\"\\");
		for (const char *c = id; plain && *c; c++)
			plain = *c >= 0x20 && *c < 0x7f;
		for (const char *c = path; plain && *c; c++)
			plain = *c >= 0x20 && *c < 0x7f;
		for (const char *c = time; plain && *c; c++)
			plain = *c >= 0x20 && *c < 0x7f;
		int v = scan_check(text, n);
		ASSERT_TRUE(v >= 0);
		if (plain && !has_record &&
		    ledger_entry_parse(&ledger_state_schema, text, n, &e, &err) == 0) {
			canonical++;
			ASSERT_EQ_INT(v, 1);
		}
		took += v == 1;
		with_record += v == 1 && has_record;
		/* Mutations: a byte changed, dropped or added, the line cut. */
		for (int m = 0; m < 6; m++) {
			char *mut = malloc(n + 2);
			ASSERT_TRUE(mut != NULL);
			memcpy(mut, text, n + 1);
			size_t at = scan_rand() % n, mn = n;
			switch (m % 4) {
			case 0:
				mut[at] = (char)(scan_rand() % 256);
				break;
			case 1:
				memmove(mut + at, mut + at + 1, n - at);
				mn--;
				break;
			case 2:
				memmove(mut + at + 1, mut + at, n - at + 1);
				mut[at] = "\"\\{},:0 u"[scan_rand() % 9];
				mn++;
				break;
			default:
				mn = at;
			}
			int mv = scan_check(mut, mn);
			free(mut);
			ASSERT_TRUE(mv >= 0);
		}
		free(text);
	}
	printf("# canonical reader: took %zu lines of 20000 written (%zu canonical without a record, %zu with one)\n",
	       took, canonical, with_record);
	ASSERT_TRUE(canonical > 1000 && with_record > 1000);
}

/* What the old ledger_entry_format() did: jansson's text of the fields
 * (the format, byte for byte), then the strict parser's verdict on it. */
static int format_reference(uint64_t seq, int kind, const char *id, const char *path, const char *sha,
			    const char *time, const char *record, size_t rn, char **ret, size_t *ret_n)
{
	struct ledger_entry e;
	struct error err;

	*ret = NULL;
	if (record && !ledger_record_embeddable(record, rn))
		return -E2BIG;
	json_t *doc = json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:s}", "v", 1, "seq",
				(json_int_t)seq, "kind",
				kind >= 0 && kind < ledger_state_schema.n_kinds
					? ledger_state_schema.kinds[kind]
					: "?",
				"id", id, "path", path, "sha256", sha, "time", time);
	if (!doc)
		return -ENOMEM;
	if (record && json_object_set_new(doc, "record", json_stringn(record, rn)) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	size_t n = strlen(text);
	int r = record && n > LEDGER_ENTRY_MAX
			? -E2BIG
			: ledger_entry_parse(&ledger_state_schema, text, n, &e, &err);
	if (r < 0) {
		free(text);
		return r;
	}
	*ret = text;
	*ret_n = n;
	return 0;
}

/* ledger_entry_format() writes, byte for byte, what jansson writes of the
 * fields, and refuses what the strict parser would refuse: it no longer
 * parses its line back, so this holds it to the parser's reading (the
 * values read back equal, the record's bytes decoded back equal). */
static void test_ledger_entry_format(void)
{
	size_t written = 0, refused = 0, long_ones = 0;

	for (int i = 0; i < 6000; i++) {
		char id[200], path[600], sha[SHA256_HEX_SIZE], record[70000];
		scan_value(id, i % 50 == 0 ? 140 : 12, "0123456789abcdefXYZ-_:~");
		scan_value(path, i % 50 == 1 ? 530 : 40, "abcdefgh0123456789/._-");
		for (int k = 0; k < 64; k++)
			sha[k] = "0123456789abcdef"[scan_rand() % 16];
		sha[64] = '\0';
		if (i % 40 == 3)
			sha[scan_rand() % 64] = 'A';
		if (i % 30 == 4)
			snprintf(path, sizeof(path), "/etc/airlock/approver.json");
		int kind = (int)(scan_rand() % (uint64_t)(ledger_state_schema.n_kinds + 1)) -
			   (i % 20 == 6);
		uint64_t seq = scan_rand() >> (scan_rand() % 64);
		bool has_record = i % 3 != 0;
		size_t rn = 0;
		if (has_record) {
			/* A receipt's JSON, or any bytes: every byte jansson escapes,
			 * DEL, UTF-8 good and bad, NUL; now and then one too long. */
			rn = i % 97 == 0 ? 65536 - 300 - scan_rand() % 600 : scan_rand() % 3000;
			for (size_t k = 0; k < rn; k++)
				record[k] = i % 2 ? "{\"a\":\"b\\c\",\n\t}x"[scan_rand() % 15]
						  : (char)(1 + scan_rand() % 126);
			if (i % 11 == 0 && rn > 0)
				record[scan_rand() % rn] = 0x7f;
			if (i % 13 == 0 && rn > 0)
				record[scan_rand() % rn] = (char)(0x80 + scan_rand() % 128);
			if (i % 17 == 0 && rn > 0)
				record[scan_rand() % rn] = '\0';
			if (i % 7 == 0 && rn + 4 <= sizeof(record)) {
				memcpy(record + rn, "\xf0\x9f\x98\x80", 4);
				rn += 4;
			}
		}
		const char *rec = has_record ? record : NULL;
		char *line = NULL, *ref = NULL;
		size_t n = 0, ref_n = 0;
		struct error err;
		int r = ledger_entry_format(&ledger_state_schema, seq, kind, id, path, sha, rec, rn,
					    &line, &n, &err);
		if (r < 0) {
			/* Refused: so was the same line (any time of the same length). */
			ASSERT_EQ_INT(format_reference(seq, kind, id, path, sha,
						       "2026-01-01T00:00:00.000Z", rec, rn, &ref,
						       &ref_n),
				      r);
			refused++;
			continue;
		}
		ASSERT_TRUE(n > 1 && line[n - 1] == '\n' && line[n] == '\0');
		ASSERT_TRUE(memchr(line, '\n', n - 1) == NULL);
		struct ledger_entry e;
		ASSERT_EQ_INT(ledger_entry_parse(&ledger_state_schema, line, n - 1, &e, &err), 0);
		ASSERT_EQ_INT(e.seq, seq);
		ASSERT_EQ_INT(e.kind, kind);
		ASSERT_EQ_STR(e.id, id);
		ASSERT_EQ_STR(e.path, path);
		ASSERT_EQ_STR(e.sha256, sha);
		ASSERT_TRUE(e.has_record == has_record);
		ASSERT_EQ_INT(format_reference(seq, kind, id, path, sha, e.time, rec, rn, &ref, &ref_n),
			      0);
		ASSERT_EQ_INT(ref_n, n - 1);
		ASSERT_TRUE(memcmp(ref, line, ref_n) == 0);
		if (has_record) {
			json_t *doc = json_loadb(line, n - 1, JSON_REJECT_DUPLICATES, NULL);
			json_t *got = json_object_get(doc, "record");
			ASSERT_TRUE(json_is_string(got) && json_string_length(got) == rn &&
				    memcmp(json_string_value(got), record, rn) == 0);
			json_decref(doc);
		}
		long_ones += n > 60000;
		written++;
		free(ref);
		free(line);
	}
	printf("# entry format: %zu lines written as jansson writes them, %zu refused as the parser would (%zu over 60000 bytes)\n",
	       written, refused, long_ones);
	ASSERT_TRUE(written > 2000 && refused > 200);
}

/* A torn copy is what a power loss leaves of an unsynced cache: no longer
 * than the record, each byte the record's or NUL, and not the record. */
static void test_ledger_torn_copy(void)
{
	static const char want[] = "{\"a\": 1}\n";
	size_t n = sizeof(want) - 1;

	ASSERT_TRUE(ledger_torn_copy("", 0, want, n));
	ASSERT_TRUE(ledger_torn_copy(want, n - 1, want, n));
	ASSERT_TRUE(ledger_torn_copy("\0\0\0", 3, want, n));
	ASSERT_TRUE(ledger_torn_copy("\0\0\0\0\0\0\0\0\0", n, want, n));
	ASSERT_TRUE(ledger_torn_copy("{\"a\"\0\0\0\0\0\0", n, want, n));
	ASSERT_TRUE(ledger_torn_copy("\0\0\0\0: 1}\n", n, want, n));
	ASSERT_TRUE(!ledger_torn_copy(want, n, want, n));
	ASSERT_TRUE(!ledger_torn_copy("{\"a\": 2}\n", n, want, n));
	ASSERT_TRUE(!ledger_torn_copy("{\"a\": 2", n - 1, want, n));
	ASSERT_TRUE(!ledger_torn_copy("{\"a\"\0\0\0\0\0\0\0", n + 1, want, n));
	ASSERT_TRUE(!ledger_torn_copy("\0\0\0\0\0\0\0\0\0\0", n + 1, want, n));
}

RUN_TESTS(T_(test_merkle_known_roots), T_(test_merkle_proof_shapes),
	  T_(test_merkle_inclusion_every_index), T_(test_merkle_consistency_every_pair),
	  T_(test_ledger_entry_parser), T_(test_ledger_commit_checkpoint_verify),
	  T_(test_ledger_checkpoint_signatures), T_(test_ledger_entry_record),
	  T_(test_ledger_record_cache), T_(test_store_sync_defer), T_(test_ledger_record_since),
	  T_(test_ledger_open_ids_lines), T_(test_ledger_concurrent_appenders),
	  T_(test_ledger_entryscan_differential), T_(test_ledger_entry_format),
	  T_(test_ledger_torn_copy))
