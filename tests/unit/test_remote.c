/* SPDX-License-Identifier: MIT */
/* The ledger's remote seam (ledger/ledger.h, struct ledger_remote_ops),
 * linked without core: an in-memory mirror that keeps the leaves it was
 * sent, checks every checkpoint's signature, the consistency proof from what
 * it holds (basic/merkle.h) and that the entries make the signed root, and
 * refuses anything else: a conflict with its size, or a fork. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/ledger.h"
#include "basic/fileio.h"
#include "basic/merkle.h"
#include "basic/sha256.h"
#include "harness.h"

struct mem_remote {
	struct ledger_vkey vkey;
	uint64_t size;
	merkle_hash root;
	merkle_hash *leaves;
	int pushes, conflicts, refused;
	uint64_t last_old; /* the old size of the last push */
};

static int mem_push(void *ctx, const struct ledger_push *p, struct ledger_push_reply *reply,
		    struct error *err)
{
	struct mem_remote *m = ctx;
	struct ledger_checkpoint cp;

	m->pushes++;
	m->last_old = p->old_size;
	if (ledger_checkpoint_parse(p->checkpoint, p->checkpoint_n, &m->vkey, &cp, err) < 0)
		return m->refused++, -EBADMSG;
	ledger_checkpoint_release(&cp);
	if (cp.size != p->new_size || strcmp(p->origin, cp.origin) != 0)
		return m->refused++, error_set(err, EBADMSG, "not the checkpoint's size");
	if (p->old_size != m->size) {
		reply->remote_size = m->size;
		m->conflicts++;
		return error_set(err, EEXIST, "I hold %llu", (unsigned long long)m->size);
	}
	if (cp.size < m->size ||
	    (m->size == cp.size && memcmp(m->root, cp.root, MERKLE_HASH_BYTES) != 0) ||
	    (m->size > 0 && m->size < cp.size &&
	     !merkle_verify_consistency(m->size, cp.size, m->root, cp.root, p->proof, p->n_proof)))
		return m->refused++, error_set(err, EBADMSG, "a fork: refused");
	merkle_hash *leaves = reallocarray(NULL, cp.size + 1, sizeof(*leaves));
	if (!leaves)
		return error_set(err, ENOMEM, "out of memory");
	if (m->size)
		memcpy(leaves, m->leaves, m->size * sizeof(*leaves));
	uint64_t n = m->size;
	for (const char *l = p->entries, *end = p->entries + p->entries_n; l < end; n++) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl || n >= cp.size) {
			free(leaves);
			return m->refused++, error_set(err, EBADMSG, "entries past the checkpoint");
		}
		merkle_leaf_hash(l, (size_t)(nl - l), leaves[n]);
		l = nl + 1;
	}
	merkle_hash root;
	merkle_root(leaves, n, root);
	if (n != cp.size || memcmp(root, cp.root, MERKLE_HASH_BYTES) != 0) {
		free(leaves);
		return m->refused++, error_set(err, EBADMSG, "the entries do not make the root");
	}
	free(m->leaves);
	m->leaves = leaves;
	m->size = cp.size;
	memcpy(m->root, cp.root, MERKLE_HASH_BYTES);
	snprintf(reply->cosignature, sizeof(reply->cosignature), "\xe2\x80\x94 mem %llu",
		 (unsigned long long)m->size);
	return 0;
}

static void mem_free(void *ctx)
{
	struct mem_remote *m = ctx;

	free(m->leaves);
	m->leaves = NULL;
}

static const struct ledger_remote_ops mem_ops = { "mem", mem_push, mem_free };

static char scratch[64];
static int root_fd = -1;

static struct ledger *scratch_ledger(void)
{
	struct ledger *l = NULL;
	struct error err;

	snprintf(scratch, sizeof(scratch), "/tmp/test-remote-XXXXXX");
	if (!mkdtemp(scratch) || (root_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    ledger_open(root_fd, scratch, &ledger_state_schema, &l, &err) < 0)
		return NULL;
	return l;
}

static void scratch_remove(struct ledger *l)
{
	ledger_free(l);
	close(root_fd);
	(void)remove_tree_at(AT_FDCWD, scratch);
}

static int append(struct ledger *l, unsigned i, bool checkpoint)
{
	char id[32], path[64], hex[SHA256_HEX_SIZE];
	struct error err;

	snprintf(id, sizeof(id), "%u", i);
	snprintf(path, sizeof(path), "receipts/%u.json", i);
	sha256_hex(id, strlen(id), hex);
	return ledger_append(l, LEDGER_RECEIPT, id, path, hex, checkpoint, NULL, &err);
}

static int mem_attach(struct ledger *l, struct mem_remote *m)
{
	char *text = NULL;
	struct error err;

	*m = (struct mem_remote){ 0 };
	if (append(l, 0, false) < 0 || ledger_public_key(l, false, &text, &err) < 0 ||
	    ledger_vkey_parse(text, &m->vkey, &err) < 0) {
		free(text);
		return -1;
	}
	free(text);
	return ledger_add_remote(l, &mem_ops, m, &err);
}

/* No remote: nothing is pushed and nothing is kept for one. */
static void test_remote_none(void)
{
	struct ledger *l = scratch_ledger();
	struct error err;

	ASSERT_TRUE(l);
	ASSERT_EQ_INT(ledger_n_remotes(l), 0);
	for (unsigned i = 0; i < 70; i++)
		ASSERT_EQ_INT(append(l, i, false), 0);
	ASSERT_EQ_INT(ledger_push(l, &err), 0);
	ASSERT_TRUE(faccessat(root_fd, "ledger/remotes", F_OK, 0) < 0 && errno == ENOENT);
	scratch_remove(l);
}

/* Each signed checkpoint reaches the remote with the entries since the last
 * push and a proof it checks; one it holds is not sent again. */
static void test_remote_push(void)
{
	struct ledger *l = scratch_ledger();
	struct mem_remote m;
	struct error err;

	ASSERT_TRUE(l);
	ASSERT_EQ_INT(mem_attach(l, &m), 0);
	ASSERT_EQ_INT(ledger_push(l, &err), 0); /* the first entry's checkpoint */
	ASSERT_EQ_INT(m.size, 1);
	for (unsigned i = 1; i < 64; i++)
		ASSERT_EQ_INT(append(l, i, false), 0);
	ASSERT_EQ_INT(m.size, 64); /* the 64th entry signed, and pushed */
	ASSERT_EQ_INT(m.last_old, 1);
	ASSERT_EQ_INT(append(l, 64, true), 0);
	ASSERT_EQ_INT(m.size, 65);
	ASSERT_EQ_INT(m.last_old, 64);
	ASSERT_EQ_INT(m.refused + m.conflicts, 0);
	int pushes = m.pushes;
	ASSERT_EQ_INT(ledger_push(l, &err), 0);
	ASSERT_EQ_INT(m.pushes, pushes);
	char *text = NULL;
	size_t n;
	ASSERT_EQ_INT(file_read_capped(root_fd, "ledger/remotes/mem", 4096, &text, &n, &err), 0);
	ASSERT_EQ_STR(text, "65\n\xe2\x80\x94 mem 65\n");
	free(text);
	/* What the ledger recorded is lost: the remote names its size, and
	 * the push goes on from there. */
	ASSERT_EQ_INT(unlinkat(root_fd, "ledger/remotes/mem", 0), 0);
	ASSERT_EQ_INT(append(l, 65, true), 0);
	ASSERT_EQ_INT(m.conflicts, 1);
	ASSERT_EQ_INT(m.size, 66);
	ASSERT_EQ_INT(m.last_old, 65);
	scratch_remove(l);
}

/* A log rewritten after a push and re-signed with the same key: the
 * remote refuses the fork, keeps what it held, and the push fails. */
static void test_remote_refuses_fork(void)
{
	struct ledger *l = scratch_ledger();
	struct mem_remote m;
	struct error err;

	ASSERT_TRUE(l);
	ASSERT_EQ_INT(mem_attach(l, &m), 0);
	for (unsigned i = 1; i < 10; i++)
		ASSERT_EQ_INT(append(l, i, i == 9), 0);
	ASSERT_EQ_INT(m.size, 10);
	merkle_hash held;
	memcpy(held, m.root, MERKLE_HASH_BYTES);

	/* The first 5 entries kept, the rest rewritten, signed anew. */
	char *log = NULL;
	size_t n;
	ASSERT_EQ_INT(file_read_capped(root_fd, "ledger/log", 1 << 20, &log, &n, &err), 0);
	const char *cut = log;
	for (int k = 0; k < 5; k++)
		cut = strchr(cut, '\n') + 1;
	int fd = openat(root_fd, "ledger/log", O_WRONLY | O_TRUNC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, log, (size_t)(cut - log)), cut - log);
	close(fd);
	free(log);
	ASSERT_EQ_INT(unlinkat(root_fd, "ledger/checkpoint", 0), 0);
	(void)unlinkat(root_fd, "ledger/range", 0);
	(void)unlinkat(root_fd, "ledger/index", 0);
	(void)remove_tree_at(root_fd, "ledger/checkpoints");
	for (unsigned i = 105; i < 112; i++)
		ASSERT_EQ_INT(append(l, i, i == 111), 0); /* signs 12, pushes: refused */
	ASSERT_TRUE(m.refused > 0);
	ASSERT_EQ_INT(ledger_push(l, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "remote mem") != NULL);
	ASSERT_EQ_INT(m.size, 10);
	ASSERT_TRUE(memcmp(held, m.root, MERKLE_HASH_BYTES) == 0);
	char *text = NULL;
	ASSERT_EQ_INT(file_read_capped(root_fd, "ledger/remotes/mem", 4096, &text, &n, &err), 0);
	ASSERT_EQ_STR(text, "10\n\xe2\x80\x94 mem 10\n");
	free(text);
	scratch_remove(l);
}

/* A log cut below what the remote holds is refused before any push. */
static void test_remote_rolled_back(void)
{
	struct ledger *l = scratch_ledger();
	struct mem_remote m;
	struct error err;

	ASSERT_TRUE(l);
	ASSERT_EQ_INT(mem_attach(l, &m), 0);
	for (unsigned i = 1; i < 10; i++)
		ASSERT_EQ_INT(append(l, i, i == 9), 0);
	ASSERT_EQ_INT(m.size, 10);
	int fd = openat(root_fd, "ledger/remotes/mem", O_WRONLY | O_TRUNC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, "99\n\n", 4), 4);
	close(fd);
	ASSERT_EQ_INT(append(l, 10, true), 0);
	int pushes = m.pushes;
	ASSERT_EQ_INT(ledger_push(l, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "holds 99 entries") != NULL);
	ASSERT_EQ_INT(m.pushes, pushes);
	scratch_remove(l);
}

static void test_remote_names(void)
{
	struct ledger *l = scratch_ledger();
	struct error err;
	static const struct ledger_remote_ops bad = { "../x", mem_push, NULL };
	static const struct ledger_remote_ops ok = { "mem", mem_push, NULL };
	struct mem_remote m = { 0 };

	ASSERT_TRUE(l);
	ASSERT_EQ_INT(ledger_add_remote(l, &bad, &m, &err), -EINVAL);
	ASSERT_EQ_INT(ledger_add_remote(l, &ok, &m, &err), 0);
	ASSERT_EQ_INT(ledger_add_remote(l, &ok, &m, &err), -EEXIST);
	ASSERT_EQ_INT(ledger_n_remotes(l), 1);
	scratch_remove(l);
}

RUN_TESTS(T_(test_remote_none), T_(test_remote_push), T_(test_remote_refuses_fork),
	  T_(test_remote_rolled_back), T_(test_remote_names))
