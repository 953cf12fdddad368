/* SPDX-License-Identifier: MIT */
/* The witness (ledger/witness.h) without HTTP: add-checkpoint from real
 * ledgers, pushed by an in-process remote; the request parser; the policy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "core/store/ledger.h"
#include "harness.h"
#include "ledger/witness.h"

struct scratch {
	char path[64];
	int fd;
	struct ledger *l;
};

static int scratch_open(struct scratch *s, const char *tag)
{
	struct error err;

	snprintf(s->path, sizeof(s->path), "/tmp/test-witness-%s-XXXXXX", tag);
	s->l = NULL;
	if (!mkdtemp(s->path) || (s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	return ledger_open(s->fd, s->path, &ledger_state_schema, &s->l, &err);
}

static void scratch_close(struct scratch *s)
{
	ledger_free(s->l);
	close(s->fd);
	(void)remove_tree_at(AT_FDCWD, s->path);
}

/* Appends n entries (ids from first) and signs a checkpoint. */
static int grow(struct scratch *s, unsigned first, unsigned n)
{
	struct error err;

	for (unsigned i = first; i < first + n; i++) {
		char id[32], path[64], hex[SHA256_HEX_SIZE];
		snprintf(id, sizeof(id), "%u", i);
		snprintf(path, sizeof(path), "receipts/%u.json", i);
		sha256_hex(id, strlen(id), hex);
		if (ledger_append(s->l, LEDGER_RECEIPT, id, path, hex, false, NULL, &err) < 0)
			return -1;
	}
	return ledger_checkpoint(s->l, &err);
}

/* The ledger key of another scratch, so that both sign as one log. */
static int copy_key(struct scratch *s, const char *key, size_t n)
{
	struct error err;
	int fd = openat(s->fd, "ledger", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = file_write_atomic(fd, "key", key, n, 0600, false, &err);
	close(fd);
	return r;
}

/* A remote that calls the witness directly, as the HTTP client maps it. */
struct direct {
	struct witness *w;
	int last_status;
};

static int direct_push(void *ctx, const struct ledger_push *p, struct ledger_push_reply *reply,
		       struct error *err)
{
	struct direct *d = ctx;
	size_t n;
	char *body = witness_request_format(p->old_size, (const merkle_hash *)p->proof, p->n_proof,
					    p->checkpoint, p->checkpoint_n, &n);
	struct witness_reply r;

	witness_add_checkpoint(d->w, body, n, 1700000000, &r);
	free(body);
	d->last_status = r.status;
	int ret = 0;
	if (r.status == 409) {
		reply->remote_size = strtoull(r.body, NULL, 10);
		ret = error_set(err, EEXIST, "conflict");
	} else if (r.status != 200) {
		ret = error_set(err, EBADMSG, "%d %s", r.status, r.body);
	} else {
		snprintf(reply->cosignature, sizeof(reply->cosignature), "%.*s",
			 (int)strcspn(r.body, "\n"), r.body);
	}
	witness_reply_release(&r);
	return ret;
}

static const struct ledger_remote_ops direct_ops = { "direct", direct_push, NULL };

static struct witness *witness_here(char path[64])
{
	struct witness *w = NULL;
	struct error err;

	snprintf(path, 64, "/tmp/test-witness-w-XXXXXX");
	if (!mkdtemp(path))
		return NULL;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	int r = witness_open(fd, true, "example.com/w1", &w, &err);
	close(fd);
	return r < 0 ? NULL : w;
}

static int accept_log(struct witness *w, struct scratch *s)
{
	char *vkey = NULL;
	struct error err;
	int r = ledger_public_key(s->l, true, &vkey, &err);
	if (r == 0) {
		struct ledger_vkey v;
		r = ledger_vkey_parse(vkey, &v, &err);
		if (r == 0)
			r = witness_add_log(w, v.name, vkey, &err);
	}
	free(vkey);
	return r;
}

/* The cosignature kept for the ledger's latest checkpoint verifies with
 * the witness's key. */
static int cosigned(struct scratch *s, struct witness *w)
{
	char *cp = NULL, **lines = NULL;
	size_t n, n_lines;
	struct ledger_vkey wk;
	struct ledger_checkpoint c;
	struct error err;
	char *vkey = witness_vkey(w);
	int r = witness_vkey_parse(vkey, &wk, &err);
	free(vkey);
	if (r < 0 || ledger_checkpoint_text(s->l, &cp, &n, &err) < 0 ||
	    ledger_checkpoint_parse(cp, n, NULL, &c, &err) < 0)
		return -1;
	ledger_checkpoint_release(&c);
	r = ledger_remote_cosignatures(s->l, c.size, &lines, &n_lines, &err);
	if (r == 0 && n_lines != 1)
		r = -ENOENT;
	if (r == 0)
		r = witness_cosignature_verify(&wk, cp, (size_t)(strstr(cp, "\n\n") - cp) + 1,
					       lines[0], NULL);
	for (size_t i = 0; lines && lines[i]; i++)
		free(lines[i]);
	free(lines);
	free(cp);
	return r;
}

static void test_witness_cosigns_and_refuses_forks(void)
{
	struct scratch a, b;
	char wpath[64];
	struct error err;
	struct witness *w = witness_here(wpath);
	struct direct d = { w, 0 };

	ASSERT_TRUE(w);
	ASSERT_EQ_INT(scratch_open(&a, "a"), 0);
	ASSERT_EQ_INT(grow(&a, 1, 3), 0);
	ASSERT_EQ_INT(ledger_add_remote(a.l, &direct_ops, &d, &err), 0);
	/* An unknown log: 404. */
	ASSERT_TRUE(ledger_push(a.l, &err) < 0);
	ASSERT_EQ_INT(d.last_status, 404);
	ASSERT_EQ_INT(accept_log(w, &a), 0);
	ASSERT_EQ_INT(ledger_push(a.l, &err), 0);
	ASSERT_EQ_INT(d.last_status, 200);
	ASSERT_EQ_INT(cosigned(&a, w), 0);
	/* Grown: a consistency proof from 3. */
	ASSERT_EQ_INT(grow(&a, 4, 70), 0);
	ASSERT_EQ_INT(ledger_push(a.l, &err), 0);
	ASSERT_EQ_INT(cosigned(&a, w), 0);

	/* Another history under the same key: refused, never cosigned. */
	ASSERT_EQ_INT(scratch_open(&b, "b"), 0);
	ASSERT_EQ_INT(mkdirat(b.fd, "ledger", 0700), 0);
	char *key = NULL;
	size_t key_n;
	ASSERT_EQ_INT(file_read_capped(a.fd, "ledger/key", 1024, &key, &key_n, &err), 0);
	ASSERT_EQ_INT(copy_key(&b, key, key_n), 0);
	free(key);
	ASSERT_EQ_INT(grow(&b, 100, 90), 0);
	ASSERT_EQ_INT(ledger_add_remote(b.l, &direct_ops, &d, &err), 0);
	ASSERT_TRUE(ledger_push(b.l, &err) < 0);
	ASSERT_EQ_INT(d.last_status, 422);
	/* The same size as it holds, another root: 409. */
	struct scratch c;
	ASSERT_EQ_INT(scratch_open(&c, "c"), 0);
	ASSERT_EQ_INT(mkdirat(c.fd, "ledger", 0700), 0);
	ASSERT_EQ_INT(file_read_capped(a.fd, "ledger/key", 1024, &key, &key_n, &err), 0);
	ASSERT_EQ_INT(copy_key(&c, key, key_n), 0);
	free(key);
	ASSERT_EQ_INT(grow(&c, 300, 73), 0);
	ASSERT_EQ_INT(ledger_add_remote(c.l, &direct_ops, &d, &err), 0);
	ASSERT_TRUE(ledger_push(c.l, &err) < 0);
	ASSERT_EQ_INT(d.last_status, 409);
	/* The honest log still goes on. */
	ASSERT_EQ_INT(grow(&a, 80, 5), 0);
	ASSERT_EQ_INT(ledger_push(a.l, &err), 0);
	ASSERT_EQ_INT(cosigned(&a, w), 0);
	scratch_close(&a);
	scratch_close(&b);
	scratch_close(&c);
	witness_free(w);
	(void)remove_tree_at(AT_FDCWD, wpath);
}

static void test_witness_request_parse(void)
{
	struct witness_request q;
	struct error err;
	static const char cp[] =
		"o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\xe2\x80\x94 o AAAA\n";
	char buf[8192];

	snprintf(buf, sizeof(buf), "old 0\n\n%s", cp);
	ASSERT_EQ_INT(witness_request_parse(buf, strlen(buf), &q, &err), 0);
	ASSERT_EQ_INT(q.old_size, 0);
	ASSERT_EQ_INT(q.checkpoint_n, strlen(cp));
	snprintf(buf, sizeof(buf), "old 5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n%s", cp);
	ASSERT_EQ_INT(witness_request_parse(buf, strlen(buf), &q, &err), 0);
	ASSERT_EQ_INT(q.n_proof, 1);
	static const char *const bad[] = {
		"",
		"old\n\nx",
		"old 01\n\nx",
		"old -1\n\nx",
		"old 1",
		"old 1\n",
		"old 1\n\n",
		"old 0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\nx",
		"old 1\nAAAA\n\nx",
		"old 99999999999999999999\n\nx",
		"olds 1\n\nx",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ_INT(witness_request_parse(bad[i], strlen(bad[i]), &q, &err), -EBADMSG);
	/* 64 proof lines: one too many. */
	size_t n = (size_t)snprintf(buf, sizeof(buf), "old 5\n");
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\n%s", cp);
	ASSERT_EQ_INT(witness_request_parse(buf, n, &q, &err), -EBADMSG);
}

static void test_witness_policy(void)
{
	struct witness_policy *p = malloc(sizeof(*p));
	struct error err;
	char wpath[64], text[2048];
	struct witness *w = witness_here(wpath);
	struct scratch a;

	ASSERT_TRUE(p && w);
	ASSERT_EQ_INT(scratch_open(&a, "p"), 0);
	ASSERT_EQ_INT(grow(&a, 1, 2), 0);
	char *log = NULL, *wk = witness_vkey(w);
	ASSERT_EQ_INT(ledger_public_key(a.l, false, &log, &err), 0);
	snprintf(text, sizeof(text),
		 "# c\nlog %s\nwitness w1 %s http://x\ngroup g any w1\nquorum g\n", log, wk);
	ASSERT_EQ_INT(witness_policy_parse(text, strlen(text), p, &err), 0);
	ASSERT_EQ_INT(p->n_witnesses, 1);
	char *cp = NULL;
	size_t cp_n, valid;
	ASSERT_EQ_INT(ledger_checkpoint_text(a.l, &cp, &cp_n, &err), 0);
	ASSERT_EQ_INT(witness_policy_check(p, cp, cp_n, NULL, 0, &valid, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "no quorum: 0 of"));
	/* Cosigned: the quorum is met; a forged line refused. */
	struct direct d = { w, 0 };
	ASSERT_EQ_INT(accept_log(w, &a), 0);
	ASSERT_EQ_INT(ledger_add_remote(a.l, &direct_ops, &d, &err), 0);
	ASSERT_EQ_INT(ledger_push(a.l, &err), 0);
	char **lines = NULL;
	size_t n_lines;
	ASSERT_EQ_INT(ledger_remote_cosignatures(a.l, 2, &lines, &n_lines, &err), 0);
	ASSERT_EQ_INT(n_lines, 1);
	ASSERT_EQ_INT(witness_policy_check(p, cp, cp_n, lines, n_lines, &valid, &err), 0);
	ASSERT_EQ_INT(valid, 1);
	size_t k = strlen(lines[0]);
	lines[0][k - 3] = lines[0][k - 3] == 'A' ? 'B' : 'A';
	ASSERT_EQ_INT(witness_policy_check(p, cp, cp_n, lines, n_lines, &valid, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "does not verify"));
	free(lines[0]);
	free(lines);

	static const char *const bad[] = {
		"quorum none\n",
		"log x\nquorum none\n",
		"group g any\nquorum g\n",
		"quorum none\nquorum none\n",
		"frob\n",
		"log \x01\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ_INT(witness_policy_parse(bad[i], strlen(bad[i]), p, &err), -EBADMSG);
	snprintf(text, sizeof(text), "log %s\nwitness w1 %s\nwitness w2 %s\nquorum none\n", log, wk,
		 wk);
	ASSERT_EQ_INT(witness_policy_parse(text, strlen(text), p, &err), -EBADMSG);
	snprintf(text, sizeof(text), "log %s\nwitness w1 %s\ngroup g 2 w1\nquorum g\n", log, wk);
	ASSERT_EQ_INT(witness_policy_parse(text, strlen(text), p, &err), -EBADMSG);
	free(cp);
	free(log);
	free(wk);
	free(p);
	scratch_close(&a);
	witness_free(w);
	(void)remove_tree_at(AT_FDCWD, wpath);
}

RUN_TESTS(T_(test_witness_cosigns_and_refuses_forks), T_(test_witness_request_parse),
	  T_(test_witness_policy))
