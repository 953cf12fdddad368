/* SPDX-License-Identifier: MIT */
/* Property: whatever ledger/index holds (docs/ledger.md, "The index"), a
 * lookup never answers that the ledger backs a record no entry of the log
 * commits (ledger_backs; an older version of a record that moves on is the
 * index's documented limit), nor names an open failure the log never opened
 * (ledger_open_ids: naming one since closed, 2 here, keeps the gate
 * closed, which is safe), and never crashes. The input is the index file,
 * after one byte of flags that make it look sound so the fuzzer gets past
 * the head's checks: 1 the magic and this boot's id, 2 what it covers set to
 * the whole log (offset and leaf hash of its last line), 4 padded to a
 * table of 1024 slots, 8 the head's SHA-256 made to match. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/merkle.h"
#include "basic/sha256.h"
#include "core/store/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD 8192

struct fuzz_query {
	enum ledger_kind kind;
	const char *id, *path;
	char sha[SHA256_HEX_SIZE];
	int truth;
	bool older; /* an older version: the log has it, not as the last */
};

static struct ledger *fuzz_ledger;
static int fuzz_root_fd = -1;
static char fuzz_a[SHA256_HEX_SIZE], fuzz_b[SHA256_HEX_SIZE];
static struct fuzz_query fuzz_q[8];
static size_t fuzz_nq;
static uint64_t *fuzz_open;
static size_t fuzz_nopen;
static int fuzz_ledger_fd = -1;
static char fuzz_dir[] = "/tmp/fuzz-index-XXXXXX";
static char *fuzz_log;
static size_t fuzz_log_n;

static void fuzz_append(enum ledger_kind kind, const char *id, const char *path, const char *sha)
{
	struct error err;

	if (ledger_append(fuzz_ledger, kind, id, path, sha, false, NULL, &err) < 0) {
		fprintf(stderr, "fuzz_index: %s\n", err.msg);
		abort();
	}
}

static void fuzz_query(enum ledger_kind kind, const char *id, const char *path, const char *sha)
{
	struct fuzz_query *q = &fuzz_q[fuzz_nq++];

	*q = (struct fuzz_query){ kind, id, path, { 0 }, 0, false };
	memcpy(q->sha, sha, SHA256_HEX_SIZE);
}

static void fuzz_cleanup(void)
{
	(void)remove_tree_at(AT_FDCWD, fuzz_dir);
}

/* A ledger, and what the log says, with no index to ask. */
static void fuzz_setup(void)
{
	struct error err;

	if (!mkdtemp(fuzz_dir) ||
	    (fuzz_root_fd = open(fuzz_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    ledger_open(fuzz_root_fd, fuzz_dir, &ledger_state_schema, &fuzz_ledger, &err) < 0)
		abort();
	atexit(fuzz_cleanup);
	sha256_hex("a", 1, fuzz_a);
	sha256_hex("b", 1, fuzz_b);
	fuzz_append(LEDGER_RECEIPT, "1", "receipts/1.json", fuzz_a);
	fuzz_append(LEDGER_GATE_OPEN, "2", "gate/open/x/2.json", fuzz_a);
	fuzz_append(LEDGER_APPROVER_ENROL, "approver", "approver.json", fuzz_a);
	fuzz_append(LEDGER_GATE_CLOSE, "2", "gate/closed/2.json", fuzz_a);
	fuzz_append(LEDGER_GATE_OPEN, "3", "gate/open/x/3.json", fuzz_b);
	fuzz_append(LEDGER_APPROVER_CHANGE, "approver", "approver.json", fuzz_b);
	fuzz_query(LEDGER_RECEIPT, "1", "receipts/1.json", fuzz_a);
	fuzz_query(LEDGER_RECEIPT, "1", "receipts/1.json", fuzz_b);
	fuzz_query(LEDGER_GATE_OPEN, "2", "gate/open/x/2.json", fuzz_a);
	fuzz_query(LEDGER_GATE_CLOSE, "2", "gate/closed/2.json", fuzz_a);
	fuzz_query(LEDGER_KIND_MAX, "approver", "approver.json", fuzz_a);
	fuzz_q[fuzz_nq - 1].older = true;
	fuzz_query(LEDGER_KIND_MAX, "approver", "approver.json", fuzz_b);
	fuzz_query(LEDGER_GATE_CLOSE, "3", "gate/closed/3.json", fuzz_b);
	(void)unlinkat(fuzz_root_fd, "ledger/index", 0);
	for (size_t i = 0; i < fuzz_nq; i++)
		fuzz_q[i].truth = ledger_backs(fuzz_ledger, fuzz_q[i].kind, fuzz_q[i].id,
					       fuzz_q[i].path, fuzz_q[i].sha, &err);
	if (ledger_open_ids(fuzz_ledger, "gate/open/", &fuzz_open, &fuzz_nopen, &err) < 0 ||
	    fuzz_nopen != 1 || fuzz_q[0].truth != 0 || fuzz_q[4].truth == 0) {
		fprintf(stderr, "fuzz_index: the log does not say what it should\n");
		abort();
	}
	fuzz_ledger_fd = openat(fuzz_root_fd, "ledger", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fuzz_ledger_fd < 0 ||
	    file_read_capped(fuzz_ledger_fd, "log", 1 << 20, &fuzz_log, &fuzz_log_n, &err) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err;

	if (!fuzz_ledger)
		fuzz_setup();
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	size_t n = size - 1;
	size_t want = (flags & 4) && n < HEAD + 1024 * 16 ? HEAD + 1024 * 16 : n;
	if (want < HEAD && (flags & 15))
		want = HEAD;
	uint8_t *index = calloc(1, want ? want : 1);
	if (!index)
		abort();
	memcpy(index, data + 1, n);
	if (flags & 1) {
		char boot[40] = { 0 };
		int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)!read(fd, boot, 39);
			close(fd);
		}
		memcpy(index, "airlock-ledger-index/2", 23);
		memcpy(index + 24, boot, 40);
	}
	if (flags & 2) {
		uint64_t covered = fuzz_log_n, last = fuzz_log_n - 1;
		while (last > 0 && fuzz_log[last - 1] != '\n')
			last--;
		merkle_hash leaf;
		merkle_leaf_hash(fuzz_log + last, fuzz_log_n - 1 - last, leaf);
		memcpy(index + 64, &covered, 8);
		memcpy(index + 72, &last, 8);
		memcpy(index + 104, leaf, sizeof(leaf));
	}
	if (flags & 4) {
		uint64_t nslots = 1024;
		memcpy(index + 80, &nslots, 8);
	}
	if (flags & 8) {
		/* the head up to its last open failure listed */
		uint32_t n_open;
		memcpy(&n_open, index + 96, 4);
		memset(index + 136, 0, 32);
		sha256_raw(index, 168 + 16 * (size_t)(n_open < 480 ? n_open : 480), index + 136);
	}
	(void)unlinkat(fuzz_ledger_fd, "index.fuzz", 0);
	if (file_write_atomic(fuzz_ledger_fd, "index.fuzz", index, want, 0600, false, &err) < 0 ||
	    renameat(fuzz_ledger_fd, "index.fuzz", fuzz_ledger_fd, "index") < 0)
		abort();
	free(index);
	for (size_t i = 0; i < fuzz_nq; i++)
		if (ledger_backs(fuzz_ledger, fuzz_q[i].kind, fuzz_q[i].id, fuzz_q[i].path,
				 fuzz_q[i].sha, &err) == 0 &&
		    fuzz_q[i].truth != 0 && !fuzz_q[i].older)
			abort();
	uint64_t *ids = NULL;
	size_t nids = 0;
	if (ledger_open_ids(fuzz_ledger, "gate/open/", &ids, &nids, &err) == 0)
		for (size_t i = 0; i < nids; i++)
			if (ids[i] != fuzz_open[0] && ids[i] != 2)
				abort();
	free(ids);
	return 0;
}
