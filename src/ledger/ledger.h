/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/merkle.h"
#include "basic/sha256.h"

/* The ledger (docs/ledger.md): an append-only file whose lines are the
 * leaves of an RFC 9162 Merkle tree, one line per record committed (the
 * record's kind, id, path below the ledger's root directory and the SHA-256
 * of its bytes), with checkpoints in the C2SP tlog-checkpoint signed-note
 * format, signed with an Ed25519 key kept beside the log. Lives in the root
 * directory's ledger/:
 *	log		the entries, one compact JSON object per line
 *	lock		flock()ed by every appender (and shared by readers)
 *	sync		flock()ed by the appender that syncs; how far the log
 *			is known durable (group commit, ledger_append_record())
 *	checkpoint	the latest signed checkpoint, replaced atomically
 *	checkpoints/	every checkpoint signed, by tree size
 *	index		derived: a path's last entry, the open ids
 *	key, key.pub	the signing key (0600) and its public half (vkey)
 *	torn/		torn tails cut off after a crash, never deleted
 *	poisoned	present after an fsync error: appends are refused
 *	remotes/	what each remote acknowledged (ledger_push)
 *
 * The ledger knows nothing of what its records mean: the kinds' names, the
 * kinds the open-id index follows and the directories verify walks are the
 * caller's, in a struct ledger_schema. */

#define LEDGER_ENTRY_MAX (64 << 10)
#define LEDGER_ID_MAX	 128
#define LEDGER_PATH_MAX	 512
/* A checkpoint is signed by the append that makes the log's size a multiple
 * of this (and by the first), by every append with checkpoint set, and by
 * ledger_checkpoint(). */
#define LEDGER_CHECKPOINT_EVERY 64
/* A kind outside the schema (this, or its n_kinds) matches any kind. */
#define LEDGER_KIND_ANY (-1)

/* Records of the root directory that verify expects the ledger to back:
 * in each directory matching dir ("" the root; a "*" component is every
 * entry of the directory there not starting with '.'), each entry matching
 * one of names (fnmatch patterns, NULL-terminated; a name without '*' is
 * looked up, in this order, rather than listed). */
struct ledger_records {
	const char *dir;
	const char *const *names;
};

struct ledger_schema {
	const char *const *kinds; /* a kind's name, by kind */
	int n_kinds;
	/* The one absolute path an entry may name (NULL: none). */
	const char *absolute_path;
	/* The kind of the entries the ledger writes itself for what it repairs
	 * (a torn tail, the poisoned mark, a record moved aside). */
	int kind_recovered;
	/* ledger_open_ids(): an entry of kind_open stays open until an entry of
	 * kind_close names its id; an open record gone once closed is not
	 * missing; recover adopts a record below adopt_dir that no entry backs
	 * with a kind_open entry instead of moving it aside. */
	int kind_open, kind_close;
	const char *adopt_dir;
	/* An entry of kind_retire retires the records below its path: they may
	 * be gone. */
	int kind_retire;
	const struct ledger_records *records;
	size_t n_records;
};

/* "?" for a kind outside the schema. */
const char *ledger_schema_kind_name(const struct ledger_schema *schema, int kind);
/* -EINVAL for an unknown name. */
int ledger_schema_kind(const struct ledger_schema *schema, const char *name);

/* ---- the handle ------------------------------------------------------------ */

struct ledger;

/* A ledger over the directory root_fd (duplicated; records' paths are
 * relative to it, root_path only names it in messages), with the schema,
 * which must outlive it. Opens nothing else: ledger/ is made by the first
 * append. Appends fsync (durable) until ledger_set_durable(). */
int ledger_open(int root_fd, const char *root_path, const struct ledger_schema *schema,
		struct ledger **ret, struct error *err);
void ledger_free(struct ledger *ledger);
static inline void ledger_freep(struct ledger **l)
{
	ledger_free(*l);
}
/* Whether appends and checkpoints fdatasync the log: off only when the
 * records are not synced either (a crash is then a torn or lost tail). */
void ledger_set_durable(struct ledger *ledger, bool durable);
/* While deferred, an append writes its line and returns without syncing
 * it (one that signs a checkpoint still syncs, as a checkpoint never signs
 * a line not yet durable): the next append that syncs, or
 * ledger_sync_written(), makes it durable, one fdatasync of the log
 * covering every line written before it. For a caller that acts on none
 * of the entries so written before that sync, and whose records are
 * written before their entries (so that a power loss that loses the line
 * leaves what a kill before the append leaves). */
void ledger_defer_sync(struct ledger *ledger, bool deferred);
/* Makes every complete line of the log durable (nothing to do when a sync
 * since covered them). */
int ledger_sync_written(struct ledger *ledger, struct error *err);
const struct ledger_schema *ledger_schema(const struct ledger *ledger);

/* ---- entries --------------------------------------------------------------- */

struct ledger_entry {
	uint64_t seq;
	int kind;
	char id[LEDGER_ID_MAX + 1];
	char path[LEDGER_PATH_MAX + 1];
	char sha256[SHA256_HEX_SIZE];
	char time[64];
	bool has_record; /* the line carries the record's bytes (ledger_entry_record()) */
};

/* Parses one line (without its newline) strictly: at most LEDGER_ENTRY_MAX
 * bytes of UTF-8 without control characters, one JSON object with exactly
 * the fields of version 1 and no duplicate keys, a kind of the schema, a
 * clean relative path (or the schema's absolute one). -EBADMSG with the
 * reason otherwise. */
int ledger_entry_parse(const struct ledger_schema *schema, const char *line, size_t n,
		       struct ledger_entry *ret, struct error *err);

/* The record's bytes a line carries (its optional "record" field), NUL
 * terminated for convenience: -ENODATA when it carries none, -EBADMSG when
 * the line is not an entry or the bytes' SHA-256 is not its sha256. */
int ledger_entry_record(const struct ledger_schema *schema, const char *line, size_t n, char **ret,
			size_t *ret_n, struct error *err);
/* Whether bytes may be carried by an entry: UTF-8 without NUL (the line's
 * own limit, LEDGER_ENTRY_MAX, is checked when it is formatted). */
bool ledger_record_embeddable(const void *data, size_t n);

/* ---- appending, backing ---------------------------------------------------- */

/* Whether an fsync error poisoned the ledger (until `airlock ledger
 * recover`, which syncs the log): an entry appended since, or whose sync
 * failed, may not be durable, so nothing only it backs is to be acted on. */
bool ledger_poisoned(struct ledger *ledger);

/* Appends an entry for the record at path (relative to the root directory)
 * whose bytes have digest sha256, under the ledger's lock, durably
 * (fdatasync). A torn tail left by a crash is first moved to torn/ and
 * recorded; a torn tail inside the signed prefix is tampering (-EBADMSG).
 * An fsync error poisons the ledger and returns -EIO; so does any append
 * while it is poisoned. The entry's index goes to *ret_seq when not NULL.
 * A checkpoint signed on the way is pushed to the remotes (ledger_push(),
 * whose failure does not fail the append). */
int ledger_append(struct ledger *ledger, int kind, const char *id, const char *path,
		  const char sha256[SHA256_HEX_SIZE], bool checkpoint, uint64_t *ret_seq,
		  struct error *err);
/* ledger_append() of an entry that carries the record's bytes (record,
 * record_n, whose SHA-256 is sha256): the append alone commits the record
 * durably, and the file at path is a cache of it (docs/ledger.md, "One
 * commit path"). -E2BIG, with nothing appended, when the bytes cannot be
 * carried (not UTF-8, a NUL, a line over LEDGER_ENTRY_MAX). The line is
 * written under the lock and synced after it is released, one fdatasync
 * covering every line written before it ("Group commit"). */
int ledger_append_record(struct ledger *ledger, int kind, const char *id, const char *path,
			 const char sha256[SHA256_HEX_SIZE], const void *record, size_t record_n,
			 bool checkpoint, uint64_t *ret_seq, struct error *err);

/* Signs a checkpoint of the whole log (creating the key on first use),
 * after checking the log still extends the last checkpoint, then pushes it
 * to the remotes (ledger_push()). */
int ledger_checkpoint(struct ledger *ledger, struct error *err);
/* The latest signed checkpoint's text, as kept (at most 64 KiB). */
int ledger_checkpoint_text(struct ledger *ledger, char **ret_text, size_t *ret_n, struct error *err);

/* The vkey (C2SP signed-note verifier key, "<name>+<id>+<base64>") of the
 * ledger's key, creating the key when create. */
int ledger_public_key(struct ledger *ledger, bool create, char **ret_vkey, struct error *err);

/* Whether the ledger's last entry for path has this kind, id and digest:
 * 0 yes; -ENOENT no entry names path; -EBADMSG the last one differs.
 * LEDGER_KIND_ANY matches any kind, a NULL id any id. */
int ledger_backs(struct ledger *ledger, int kind, const char *id, const char *path,
		 const char sha256[SHA256_HEX_SIZE], struct error *err);
/* ledger_backs() for many paths with one reader (the log mapped once):
 * the log as it was at ledger_lookup_open(), whose shared lock it holds
 * until ledger_lookup_free(), so no append (of this process either) can be
 * made while it is open. */
struct ledger_lookup;
int ledger_lookup_open(struct ledger *ledger, struct ledger_lookup **ret, struct error *err);
int ledger_lookup_backs(struct ledger_lookup *lk, int kind, const char *id, const char *path,
			const char sha256[SHA256_HEX_SIZE]);
void ledger_lookup_free(struct ledger_lookup *lk);
/* The bytes of the record the ledger's last entry for path carries (a
 * record committed with ledger_append_record()), which must be of this kind
 * (LEDGER_KIND_ANY: any) and id (NULL: any), NUL terminated: what rebuilds
 * a record file that is a cache of the log. -ENOENT no entry names path;
 * -ENODATA its last entry carries no bytes; -EBADMSG it is another record,
 * or its bytes are not the ones its digest names. */
int ledger_record(struct ledger *ledger, int kind, const char *id, const char *path, char **ret,
		  size_t *ret_n, struct error *err);
/* A record file whose bytes (digest sha256) differ from its last entry's:
 * whether they are those of an EARLIER entry for path, the last one being
 * of kind (LEDGER_KIND_ANY: any) and id (NULL: any) and carrying the
 * record's bytes. Then the file is a stale cache (a power loss kept the
 * rename of a version the log has since moved past) and the last entry's
 * bytes, which rebuild it, go to *ret (NUL terminated): 1. 0 when the last
 * entry itself backs sha256 (nothing to *ret); -EBADMSG when no entry for
 * path carried these bytes (a rewritten record), or the last one carries
 * none or is another record; -ENOENT when no entry names path. The earlier
 * entries are found by a search of the log for the digest, made only when
 * the last entry does not back it. */
int ledger_record_since(struct ledger *ledger, int kind, const char *id, const char *path,
			const char sha256[SHA256_HEX_SIZE], char **ret, size_t *ret_n,
			struct error *err);
/* ledger_record_since() with the reader of a ledger_lookup. */
int ledger_lookup_record_since(struct ledger_lookup *lk, int kind, const char *id, const char *path,
			       const char sha256[SHA256_HEX_SIZE], char **ret, size_t *ret_n,
			       struct error *err);
/* The largest decimal id of the log's entries of kind (0 without one): a
 * scan of the whole log. */
int ledger_max_id(struct ledger *ledger, int kind, uint64_t *ret, struct error *err);
/* Whether have (a cache of a record its entry carries, want) is a torn
 * copy of want, as a power loss leaves an unsynced file: no longer than
 * want, and each byte want's at its offset or NUL (blocks allocated and
 * never written, wherever they are), short of or unlike want. A strict
 * prefix, or nothing but NULs, is one. */
bool ledger_torn_copy(const char *have, size_t have_n, const char *want, size_t want_n);
/* ledger_backs() of the current bytes of the file at path. */
int ledger_backs_file(struct ledger *ledger, int kind, const char *id, const char *path,
		      struct error *err);

/* The one refusal of a record the ledger does not back: 0 when the
 * ledger's last entry for path has this kind (LEDGER_KIND_ANY: any), id and
 * the digest of the file's current bytes; else -errnum with "the ledger does
 * not back <what> (<why>): <refusal>; `airlock ledger verify` says more",
 * why being the caller's or, when NULL, "never committed" (no entry names
 * path, or the file cannot be read) or "rewritten" (the last one differs). */
int ledger_require(struct ledger *ledger, int kind, const char *id, const char *path, int errnum,
		   const char *what, const char *why, const char *refusal, struct error *err);

/* The ids (decimal) of the schema's kind_open entries whose path starts
 * with dir_prefix and that no later kind_close entry names. */
int ledger_open_ids(struct ledger *ledger, const char *dir_prefix, uint64_t **ret_ids,
		    size_t *ret_n, struct error *err);

/* ---- verification ---------------------------------------------------------- */

struct ledger_vkey {
	char name[256];
	uint8_t id[4];
	uint8_t key[32];
};
/* "<name>+<8 hex>+<base64(0x01 || key)>"; checks the id. */
int ledger_vkey_parse(const char *text, struct ledger_vkey *ret, struct error *err);

struct ledger_checkpoint {
	char origin[256];
	uint64_t size;
	merkle_hash root;
	char *text; /* the whole note */
};
void ledger_checkpoint_release(struct ledger_checkpoint *c);
/* Parses a tlog-checkpoint note and checks it carries a valid signature by
 * vkey (when vkey is NULL, only parses). A signature line by vkey that does
 * not verify is a failure even when another does; lines by other keys are
 * ignored. -EBADMSG on any problem. */
int ledger_checkpoint_parse(const char *text, size_t n, const struct ledger_vkey *vkey,
			    struct ledger_checkpoint *ret, struct error *err);

enum ledger_finding_type {
	LEDGER_FINDING_TAMPERED, /* the log itself: corrupt, rewritten, truncated */
	LEDGER_FINDING_DIFFERS, /* a record differs from what the ledger committed */
	LEDGER_FINDING_MISSING, /* a committed record is gone */
	LEDGER_FINDING_UNBACKED, /* a record the ledger never committed */
	LEDGER_FINDING_TORN, /* a torn tail after the signed prefix (a crash) */
};
struct ledger_finding {
	enum ledger_finding_type type;
	char path[LEDGER_PATH_MAX + 32]; /* the record's, when about a record */
	char what[600];
};
struct ledger_report {
	uint64_t size; /* complete entries */
	merkle_hash root;
	uint64_t checkpoint_size;
	uint64_t unsigned_entries; /* after the checkpoint */
	struct ledger_finding *findings;
	size_t n_findings;
};
void ledger_report_release(struct ledger_report *r);

/* Checks the log against its latest checkpoint signed by vkey (and against
 * an older one kept elsewhere, when given: the log must extend it), then
 * the root directory against the log (the schema's records). Findings go
 * into *ret; the return is an error only when nothing could be checked. */
int ledger_verify(struct ledger *ledger, const struct ledger_vkey *vkey, const char *old_checkpoint,
		  size_t old_n, struct ledger_report *ret, struct error *err);

/* Repairs what a crash leaves, recording each repair as an entry: a torn
 * tail is moved to torn/; the poisoned mark is cleared; a record the ledger
 * never committed (a crash between its write and its entry, or a forgery:
 * they look alike) is moved to ledger/uncommitted/<its path>, but below the
 * schema's adopt_dir, where it is committed (adopted: for an open failure,
 * the gate stays closed rather than open to anything). A complete entry
 * that is not valid, or a log shorter than its checkpoint, is tampering and
 * is not repaired. */
int ledger_recover(struct ledger *ledger, struct error *err);

/* An inclusion proof (c2sp.org/tlog-proof@v1 text) of the last entry whose
 * "kind:id" is what, or of the entry with index what (digits), against the
 * latest checkpoint. */
int ledger_prove(struct ledger *ledger, const char *what, char **ret_text, struct error *err);
/* A consistency proof between the tree of the first old entries and the
 * checkpoint of new_size entries, a kept one (ledger/checkpoints/<size>: -ENOENT
 * when there is none, -EBADMSG when the log does not extend it), or with 0 the
 * latest (airlock.ledger/consistency@v1 text). */
int ledger_prove_consistency(struct ledger *ledger, uint64_t old, uint64_t new_size,
			     char **ret_text, struct error *err);
/* Checks a proof offline: an inclusion proof (and that record_sha256, when
 * given, is the digest it commits), or a consistency proof from
 * old_checkpoint. The entry an inclusion proof carries goes to *ret_entry. */
int ledger_verify_proof(const struct ledger_schema *schema, const char *proof, size_t n,
			const struct ledger_vkey *vkey, const char *old_checkpoint, size_t old_n,
			const char record_sha256[SHA256_HEX_SIZE], struct ledger_entry *ret_entry,
			struct error *err);

/* ---- remotes: mirrors and witnesses ---------------------------------------- */

/* What a push sends: the entries the remote does not hold yet, the signed
 * checkpoint that covers them, and a consistency proof from the size the
 * remote holds to the checkpoint's (C2SP tlog-witness add-checkpoint). */
struct ledger_push {
	const char *origin; /* the checkpoint's origin (the log's key name) */
	uint64_t old_size; /* what the remote holds, as far as the ledger knows */
	uint64_t new_size; /* the checkpoint's */
	const char *checkpoint; /* the signed note of new_size entries */
	size_t checkpoint_n;
	merkle_hash *proof; /* old_size -> new_size (none when old_size is 0); read only */
	size_t n_proof;
	const char *entries; /* the log's lines old_size..new_size-1, each ending in '\n' */
	size_t entries_n;
};

/* A remote's answer. On a conflict (push() returned -EEXIST) remote_size
 * is the size the remote holds, and the ledger tries once more from it
 * when it is not above the checkpoint's; any other error is final. */
struct ledger_push_reply {
	uint64_t remote_size;
	char cosignature[512]; /* a cosignature/v1 (or signature) line, or "" */
};

struct ledger_remote_ops {
	const char *name; /* [a-z0-9._-]+: ledger/remotes/<name> keeps its state */
	/* 0 accepted (what it held extended by the entries); -EEXIST a
	 * conflict, with reply->remote_size; another -errno on any failure
	 * (a fork it refuses: -EBADMSG). */
	int (*push)(void *ctx, const struct ledger_push *p, struct ledger_push_reply *reply,
		    struct error *err);
	void (*free)(void *ctx); /* NULL: nothing to free */
};

/* Registers a remote (none by default); ctx is the remote's, freed with
 * ops->free by ledger_free(). */
int ledger_add_remote(struct ledger *ledger, const struct ledger_remote_ops *ops, void *ctx,
		      struct error *err);
size_t ledger_n_remotes(const struct ledger *ledger);

/* Sends every registered remote what it does not hold of the latest
 * checkpoint, as a struct ledger_push, and records what it acknowledged
 * (its size, its cosignature line) in ledger/remotes/<name>. The log is
 * read under the shared lock; the remotes are called after it is released,
 * so appends never wait for the network. The first remote's failure is
 * returned, after every remote was tried. 0 with no remote. */
int ledger_push(struct ledger *ledger, struct error *err);

/* The cosignature lines the remotes acknowledged for the checkpoint of
 * size entries (ledger/remotes/<name>'s second line, when not empty and its
 * first is size), as kept: that each covers that checkpoint is for its
 * verifier to check. *ret_lines is NULL terminated, freed with strv_free(). */
int ledger_remote_cosignatures(struct ledger *ledger, uint64_t size, char ***ret_lines,
			       size_t *ret_n, struct error *err);
