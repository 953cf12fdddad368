/* SPDX-License-Identifier: MIT */
/* What the ledger's files share; nothing outside src/ledger includes it. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/ed25519.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/text.h"
#include "ledger/ledger.h"

#define LEDGER_DIR	    "ledger"
#define LEDGER_NOTE_MAX	    (16 << 10)
#define LEDGER_TAIL_WINDOW  (2 * LEDGER_ENTRY_MAX + 2)
#define LEDGER_MAX_FINDINGS 10000
#define LEDGER_RANGE_MAGIC  "airlock-ledger-range/1"
#define EM_DASH		    "\xe2\x80\x94"

#define LEDGER_INDEX_MAGIC     "airlock-ledger-index/2"
#define LEDGER_INDEX_HEAD      8192
#define LEDGER_INDEX_OPEN_MAX  480
#define LEDGER_INDEX_SLOTS_MIN 1024

struct ledger_remote {
	const struct ledger_remote_ops *ops;
	void *ctx;
};

struct ledger {
	int root_fd; /* the directory records' paths are relative to */
	char *root_path;
	const struct ledger_schema *schema;
	bool durable;
	bool sync_deferred; /* ledger_defer_sync(): appends write, not sync */
	struct ledger_remote *remotes;
	size_t n_remotes;
};

static inline bool ledger_kind_known(const struct ledger_schema *s, int kind)
{
	return kind >= 0 && kind < s->n_kinds;
}

/* A read-only map of a file (NULL and 0 for an empty one). */
struct ledger_map {
	char *data;
	size_t size;
};

struct ledger_key {
	char name[256];
	uint8_t seed[ED25519_KEY_BYTES];
	struct ledger_vkey vkey;
};

struct ledger_tail {
	uint64_t good_end; /* the byte after the last complete line */
	uint64_t size;
	bool has_last;
	struct ledger_entry last;
};

struct ledger_writer {
	struct ledger *ledger;
	int dir_fd;
	int log_fd;
};

struct ledger_index_open {
	uint64_t off;
	uint64_t id;
};

struct ledger_index_head {
	char magic[24];
	char boot_id[40];
	uint64_t covered; /* the byte after the last line indexed */
	uint64_t last_off; /* where that line starts */
	uint64_t nslots; /* a power of two */
	uint64_t used;
	uint32_t n_open;
	uint32_t open_overflow; /* more open failures than the head holds */
	merkle_hash last_leaf;
	uint8_t sum[SHA256_DIGEST_BYTES]; /* of the head with sum zeroed */
	struct ledger_index_open open[LEDGER_INDEX_OPEN_MAX];
};

struct ledger_index_slot {
	uint64_t hash;
	uint64_t off1;
};

/* The index mapped: read-only for a reader, shared and writable for the
 * appender. */
struct ledger_index {
	int fd;
	char *data;
	size_t size;
	struct ledger_index_head *head;
	struct ledger_index_slot *slots;
	bool is_new; /* index.new, to be renamed over index */
};

struct ledger_log {
	struct ledger_map map;
	size_t n; /* complete, valid entries */
	size_t *offsets; /* of each entry's line */
	merkle_hash *leaves;
	size_t good_end; /* the byte after the last complete line */
	bool corrupt; /* a complete line that is not a valid entry */
	char why[300];
};

/* entry.c */
bool ledger_id_ok(const char *s);
/* A clean relative path (no empty, "." or ".." component) of at most
 * LEDGER_PATH_MAX bytes, or the schema's absolute path. */
bool ledger_path_ok(const struct ledger_schema *schema, const char *p);
/* ledger_entry_format(): ledger/entryscan.h */

/* dir.c */
int ledger_dir(struct ledger *ledger, bool create, struct error *err);
int ledger_lock(int dir_fd, int how, struct error *err);
void ledger_map_release(struct ledger_map *m);
int ledger_map_fd(int fd, struct ledger_map *ret, struct error *err);

/* note.c */
bool ledger_b64_exact(const char *text, void *ret, size_t n);
char *ledger_vkey_format(const struct ledger_vkey *v);
int ledger_key_load(int dir_fd, bool create, struct ledger_key *ret, struct error *err);
char *ledger_note_sign(const struct ledger_key *key, uint64_t size, const merkle_hash root);
int ledger_checkpoint_read(int dir_fd, const struct ledger_vkey *vkey,
			   struct ledger_checkpoint *ret, struct error *err);

/* append.c */
int ledger_tail_read(const struct ledger_schema *schema, int fd, struct ledger_tail *ret,
		     struct error *err);
int ledger_quarantine_tail(struct ledger_writer *w, const struct ledger_tail *t, struct error *err);
/* Writes the entry (and the record's bytes, when record) at the log's end,
 * not synced; the byte after its line goes to *ret_end. */
int ledger_append_locked(struct ledger_writer *w, int kind, const char *id, const char *path,
			 const char *sha, const char *record, size_t record_n, uint64_t *ret_seq,
			 uint64_t *ret_end, struct error *err);
/* Makes the log durable up to end (ledger/sync, "Group commit"), when the
 * ledger is durable: 0 when a sync that succeeded already covers it, else
 * one fdatasync under ledger/sync's lock, which poisons the ledger on
 * failure; -EIO when poisoned. locked: the caller holds the exclusive lock
 * (then every complete line is made durable); else lock_fd is its lock's
 * descriptor, not held, tried for a shared lock to cover more lines. */
int ledger_sync(struct ledger_writer *w, int lock_fd, bool locked, uint64_t end, struct error *err);
int ledger_writer_open(struct ledger *ledger, struct ledger_writer *w, int *ret_lock,
		       struct error *err);
void ledger_writer_close(struct ledger_writer *w);

/* checkpoint.c */
int ledger_checkpoint_locked(struct ledger_writer *w, struct error *err);

/* index.c */
void ledger_boot_id(char ret[40]);
uint64_t ledger_path_hash(const char *path);
uint64_t ledger_good_end(const struct ledger_map *m);
int ledger_line_at(const struct ledger_schema *schema, const struct ledger_map *m, uint64_t off,
		   uint64_t end, struct ledger_entry *ret, uint64_t *ret_next);
void ledger_index_release(struct ledger_index *x);
bool ledger_index_open_usable(int dir_fd, const struct ledger_map *m, uint64_t good_end,
			      struct ledger_index *ret);
void ledger_index_update(struct ledger_writer *w);

/* backing.c */
int ledger_file_digest(struct ledger *ledger, const char *path, char hex[SHA256_HEX_SIZE]);
/* Whether the file at path (below the root, never through a symlink) is a
 * torn copy of want (ledger_torn_copy()), as an unsynced cache of a record
 * its entry carries can be after a power loss. */
bool ledger_file_torn(struct ledger *ledger, const char *path, const char *want, size_t want_n);
/* Whether a line of m in [0, end) is an entry for path whose digest is
 * sha256 (an earlier version of a record whose last entry is at end): a
 * search of the log for the digest, each hit parsed and its path compared. */
bool ledger_scan_digest(const struct ledger_schema *schema, const struct ledger_map *m,
			uint64_t end, const char *path, const char sha256[SHA256_HEX_SIZE]);

/* verify.c */
void ledger_log_release(struct ledger_log *l);
int ledger_log_load(const struct ledger_schema *schema, int dir_fd, struct ledger_log *l,
		    struct error *err);
void ledger_log_entry(const struct ledger_schema *schema, const struct ledger_log *l, size_t i,
		      struct ledger_entry *ret);

/* remote.c: after a checkpoint was signed, the lock released. */
void ledger_push_quietly(struct ledger *ledger);
