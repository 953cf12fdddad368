/* SPDX-License-Identifier: MIT */
/* The ledger's proofs: inclusion and consistency, made and checked. */
#include "ledger/internal.h"

/* ---- proofs -------------------------------------------------------------------- */

static int ledger_load_signed(struct ledger *ledger, struct ledger_log *l,
			      struct ledger_checkpoint *cp, struct error *err)
{
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	if (dir_fd == -ENOENT)
		return error_set(err, ENOENT, "there is no ledger");
	if (dir_fd < 0)
		return dir_fd;
	cleanup_close int lock_fd = ledger_lock(dir_fd, LOCK_SH, err);
	if (lock_fd < 0)
		return lock_fd;
	int r = ledger_log_load(ledger->schema, dir_fd, l, err);
	if (r < 0)
		return r;
	r = ledger_checkpoint_read(dir_fd, NULL, cp, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "the ledger has no checkpoint yet");
	if (r < 0)
		return r;
	if (cp->size > l->n)
		return error_set(err, EBADMSG, "the checkpoint signs more entries than the log holds");
	return 0;
}

static char *ledger_hashes_text(merkle_hash *h, size_t n)
{
	size_t cap = n * 46 + 1, len = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *b64 = base64_encode(h[i], MERKLE_HASH_BYTES);
		if (!b64) {
			free(out);
			return NULL;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s\n", b64);
	}
	return out;
}

int ledger_prove(struct ledger *ledger, const char *what, char **ret_text, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	struct ledger_checkpoint cp = { 0 };
	int r = ledger_load_signed(ledger, &l, &cp, err);
	if (r < 0) {
		ledger_checkpoint_release(&cp);
		return r;
	}
	uint64_t index = UINT64_MAX;
	if (parse_u64(what, &index) < 0) {
		const char *colon = strchr(what, ':');
		char kind[32];
		snprintf(kind, sizeof(kind), "%.*s", colon ? (int)(colon - what) : 0, what);
		int k = colon ? ledger_schema_kind(ledger->schema, kind) : -EINVAL;
		if (k < 0) {
			ledger_checkpoint_release(&cp);
			return error_set(err, EINVAL, "'%s' is neither an index nor KIND:ID", what);
		}
		for (size_t i = l.n; i > 0; i--) {
			struct ledger_entry e;
			ledger_log_entry(ledger->schema, &l, i - 1, &e);
			if ((int)e.kind == k && strcmp(e.id, colon + 1) == 0) {
				index = i - 1;
				break;
			}
		}
	}
	if (index >= l.n) {
		ledger_checkpoint_release(&cp);
		return error_set(err, ENOENT, "no ledger entry %s", what);
	}
	if (index >= cp.size) {
		ledger_checkpoint_release(&cp);
		return error_set(err, EAGAIN,
				 "entry %llu is after the latest checkpoint (size %llu): run `airlock ledger checkpoint` first",
				 (unsigned long long)index, (unsigned long long)cp.size);
	}
	merkle_hash proof[MERKLE_MAX_PROOF];
	size_t n;
	(void)merkle_inclusion_proof(l.leaves, cp.size, index, proof, &n);
	const char *line = l.map.data + l.offsets[index];
	const char *nl = memchr(line, '\n', l.map.size - l.offsets[index]);
	cleanup_free char *extra = base64_encode(line, (size_t)(nl - line));
	cleanup_free char *hashes = ledger_hashes_text(proof, n);
	r = !extra || !hashes ||
			    asprintf(ret_text, "c2sp.org/tlog-proof@v1\nextra %s\nindex %llu\n%s\n%s",
				     extra, (unsigned long long)index, hashes, cp.text) < 0
		    ? error_set(err, ENOMEM, "out of memory")
		    : 0;
	ledger_checkpoint_release(&cp);
	return r;
}

/* The kept checkpoint of this size, which the log l must extend. */
static int ledger_checkpoint_kept(struct ledger *ledger, const struct ledger_log *l, uint64_t size,
				  struct ledger_checkpoint *ret, struct error *err)
{
	char name[64];
	cleanup_free char *text = NULL;
	size_t n;

	snprintf(name, sizeof(name), LEDGER_DIR "/checkpoints/%llu", (unsigned long long)size);
	int r = file_read_capped(ledger->root_fd, name, LEDGER_NOTE_MAX, &text, &n, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no checkpoint of size %llu is kept",
				 (unsigned long long)size);
	if (r < 0)
		return r;
	r = ledger_checkpoint_parse(text, n, NULL, ret, err);
	if (r < 0)
		return error_prefix(err, "%s", name);
	merkle_hash root;
	if (ret->size != size || size > l->n ||
	    (merkle_root(l->leaves, size, root), memcmp(root, ret->root, MERKLE_HASH_BYTES) != 0))
		return error_set(err, EBADMSG,
				 "the log does not extend its kept checkpoint of size %llu: tampering (see `airlock ledger verify`)",
				 (unsigned long long)size);
	return 0;
}

int ledger_prove_consistency(struct ledger *ledger, uint64_t old, uint64_t new_size,
			     char **ret_text, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	struct ledger_checkpoint cp = { 0 };
	int r = ledger_load_signed(ledger, &l, &cp, err);
	if (r == 0 && new_size && new_size != cp.size) {
		ledger_checkpoint_release(&cp);
		r = ledger_checkpoint_kept(ledger, &l, new_size, &cp, err);
	}
	if (r == 0 && (old == 0 || old > cp.size))
		r = error_set(err, EINVAL, "the old size must be 1..%llu (the new checkpoint)",
			      (unsigned long long)cp.size);
	merkle_hash proof[MERKLE_MAX_PROOF];
	size_t n = 0;
	if (r == 0)
		(void)merkle_consistency_proof(l.leaves, cp.size, old, proof, &n);
	cleanup_free char *hashes = r == 0 ? ledger_hashes_text(proof, n) : NULL;
	if (r == 0 && (!hashes || asprintf(ret_text, "airlock.ledger/consistency@v1\nold %llu\n%s\n%s",
					   (unsigned long long)old, hashes, cp.text) < 0))
		r = error_set(err, ENOMEM, "out of memory");
	ledger_checkpoint_release(&cp);
	return r;
}

int ledger_verify_proof(const struct ledger_schema *schema, const char *proof, size_t n,
			const struct ledger_vkey *vkey, const char *old_checkpoint, size_t old_n,
			const char record_sha256[SHA256_HEX_SIZE], struct ledger_entry *ret_entry,
			struct error *err)
{
	if (n > LEDGER_NOTE_MAX + 4 * LEDGER_ENTRY_MAX || memchr(proof, '\0', n))
		return error_set(err, EBADMSG, "not a proof");
	cleanup_free char *text = strndup(proof, n);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	char *sep = strstr(text, "\n\n");
	if (!sep)
		return error_set(err, EBADMSG, "a proof ends with a blank line and a checkpoint");
	*sep = '\0';
	const char *note = sep + 2;
	struct ledger_checkpoint cp;
	int r = ledger_checkpoint_parse(note, strlen(note), vkey, &cp, err);
	if (r < 0)
		return error_prefix(err, "the proof's checkpoint");
	ledger_checkpoint_release(&cp);

	char *save = NULL, *line = strtok_r(text, "\n", &save);
	bool inclusion = line && strcmp(line, "c2sp.org/tlog-proof@v1") == 0;
	bool consistency = line && strcmp(line, "airlock.ledger/consistency@v1") == 0;
	if (!inclusion && !consistency)
		return error_set(err, EBADMSG, "unknown proof type");
	cleanup_free char *entry = NULL;
	size_t entry_n = 0;
	uint64_t number = 0;
	line = strtok_r(NULL, "\n", &save);
	if (inclusion && line && strncmp(line, "extra ", 6) == 0) {
		entry = base64_decode(line + 6, &entry_n);
		line = strtok_r(NULL, "\n", &save);
	}
	const char *key = inclusion ? "index " : "old ";
	if (!line || strncmp(line, key, strlen(key)) != 0 || parse_u64(line + strlen(key), &number) < 0)
		return error_set(err, EBADMSG, "the proof has no %sline", key);
	merkle_hash hashes[MERKLE_MAX_PROOF];
	size_t k = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (k == MERKLE_MAX_PROOF || !ledger_b64_exact(line, hashes[k], MERKLE_HASH_BYTES))
			return error_set(err, EBADMSG, "bad hash in the proof");
		k++;
	}
	if (inclusion) {
		if (!entry)
			return error_set(err, EBADMSG, "the proof carries no entry (extra line)");
		struct ledger_entry e;
		r = ledger_entry_parse(schema, entry, entry_n, &e, err);
		if (r < 0)
			return error_prefix(err, "the proof's entry");
		if (e.seq != number)
			return error_set(err, EBADMSG, "the entry's seq is not the proof's index");
		merkle_hash leaf;
		merkle_leaf_hash(entry, entry_n, leaf);
		if (!merkle_verify_inclusion(number, cp.size, leaf, hashes, k, cp.root))
			return error_set(err, EBADMSG, "the inclusion proof does not verify");
		if (record_sha256 && strcmp(record_sha256, e.sha256) != 0)
			return error_set(err, EBADMSG, "the record is not the one the entry commits");
		if (ret_entry)
			*ret_entry = e;
		return 0;
	}
	if (!old_checkpoint)
		return error_set(err, EINVAL,
				 "a consistency proof is checked against an old checkpoint (--old FILE)");
	struct ledger_checkpoint old;
	r = ledger_checkpoint_parse(old_checkpoint, old_n, vkey, &old, err);
	if (r < 0)
		return error_prefix(err, "the old checkpoint");
	ledger_checkpoint_release(&old);
	if (old.size != number)
		return error_set(err, EBADMSG,
				 "the proof is from size %llu, the old checkpoint has %llu",
				 (unsigned long long)number, (unsigned long long)old.size);
	if (!merkle_verify_consistency(old.size, cp.size, old.root, cp.root, hashes, k))
		return error_set(err, EBADMSG,
				 "the consistency proof does not verify: the new tree does not extend the old one");
	return 0;
}
