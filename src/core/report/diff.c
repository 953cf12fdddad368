/* SPDX-License-Identifier: MIT */
/* A unified diff of two texts: the common head and tail trimmed, then the
 * longest common subsequence of the lines between (a table bounded by
 * DIFF_MAX_CELLS), then hunks with three lines of context. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "core/report/diff.h"

#define DIFF_CONTEXT 3

struct diff_line {
	const char *s;
	size_t n; /* with its '\n', when it has one */
};

struct diff_lines {
	struct diff_line *v;
	size_t n;
};

struct diff_op {
	char op; /* ' ', '-', '+' */
	size_t ai, bi; /* lines of a and b before this one */
};

struct diff_buf {
	char *s;
	size_t n, size;
	bool oom;
};

static int diff_split(const char *t, size_t n, struct diff_lines *ret)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += t[i] == '\n';
	count += n > 0 && t[n - 1] != '\n';
	ret->v = calloc(count ? count : 1, sizeof(*ret->v));
	if (!ret->v)
		return -ENOMEM;
	ret->n = 0;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(t + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (t + i)) + 1 : n - i;
		ret->v[ret->n++] = (struct diff_line){ t + i, len };
		i += len;
	}
	return 0;
}

static bool diff_same(const struct diff_line *x, const struct diff_line *y)
{
	return x->n == y->n && memcmp(x->s, y->s, x->n) == 0;
}

static void diff_put(struct diff_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->size) {
		size_t size = MAX(b->size * 2, b->n + n + 1 + 256);
		char *p = realloc(b->s, size);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->size = size;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void diff_put_line(struct diff_buf *b, char op, const struct diff_line *l)
{
	diff_put(b, &op, 1);
	diff_put(b, l->s, l->n);
	if (l->n == 0 || l->s[l->n - 1] != '\n')
		diff_put(b, "\n\\ No newline at end of file\n", 29);
}

/* The edit script of the middle parts by their LCS table (suffix lengths). */
static int diff_script(const struct diff_lines *a, const struct diff_lines *b, size_t head,
		       size_t tail, struct diff_op *ops, size_t *ret_n)
{
	size_t n = a->n - head - tail, m = b->n - head - tail, k = 0;
	cleanup_free uint32_t *t = calloc((n + 1) * (m + 1), sizeof(*t));
	if (!t)
		return -ENOMEM;
#define T(i, j) t[(size_t)(i) * (m + 1) + (j)]
	for (size_t i = n; i-- > 0;)
		for (size_t j = m; j-- > 0;)
			T(i, j) = diff_same(&a->v[head + i], &b->v[head + j])
					  ? T(i + 1, j + 1) + 1
					  : MAX(T(i + 1, j), T(i, j + 1));
	for (size_t i = 0; i < head; i++)
		ops[k++] = (struct diff_op){ ' ', i, i };
	size_t i = 0, j = 0;
	while (i < n || j < m) {
		if (i < n && j < m && diff_same(&a->v[head + i], &b->v[head + j])) {
			ops[k++] = (struct diff_op){ ' ', head + i, head + j };
			i++, j++;
		} else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
			ops[k++] = (struct diff_op){ '-', head + i, head + j };
			i++;
		} else {
			ops[k++] = (struct diff_op){ '+', head + i, head + j };
			j++;
		}
	}
#undef T
	for (size_t x = 0; x < tail; x++)
		ops[k++] = (struct diff_op){ ' ', head + n + x, head + m + x };
	*ret_n = k;
	return 0;
}

static void diff_hunks(const struct diff_lines *a, const struct diff_lines *b,
		       const struct diff_op *ops, size_t n_ops, struct diff_buf *out)
{
	size_t i = 0;
	while (i < n_ops) {
		if (ops[i].op == ' ') {
			i++;
			continue;
		}
		size_t start = i > DIFF_CONTEXT ? i - DIFF_CONTEXT : 0, end = i + 1, j = i + 1;
		while (j < n_ops) {
			if (ops[j].op != ' ') {
				end = ++j;
				continue;
			}
			size_t k = j;
			while (k < n_ops && ops[k].op == ' ')
				k++;
			if (k == n_ops || k - j > 2 * DIFF_CONTEXT)
				break;
			j = k;
		}
		size_t stop = MIN(end + DIFF_CONTEXT, n_ops), ac = 0, bc = 0;
		for (size_t x = start; x < stop; x++) {
			ac += ops[x].op != '+';
			bc += ops[x].op != '-';
		}
		char hdr[96];
		int len = snprintf(hdr, sizeof(hdr), "@@ -%zu,%zu +%zu,%zu @@\n",
				   ops[start].ai + (ac ? 1 : 0), ac, ops[start].bi + (bc ? 1 : 0), bc);
		diff_put(out, hdr, (size_t)len);
		for (size_t x = start; x < stop; x++)
			diff_put_line(out, ops[x].op,
				      ops[x].op == '+' ? &b->v[ops[x].bi] : &a->v[ops[x].ai]);
		i = stop;
	}
}

int diff_unified(const char *a_text, size_t a_n, const char *b_text, size_t b_n, char **ret,
		 size_t *ret_n, struct error *err)
{
	struct diff_lines a = { 0 }, b = { 0 };
	cleanup_free struct diff_line *av = NULL, *bv = NULL;
	if (diff_split(a_text, a_n, &a) < 0 || diff_split(b_text, b_n, &b) < 0) {
		free(a.v);
		return error_set(err, ENOMEM, "out of memory");
	}
	av = a.v;
	bv = b.v;
	size_t head = 0, tail = 0;
	while (head < a.n && head < b.n && diff_same(&a.v[head], &b.v[head]))
		head++;
	while (tail < a.n - head && tail < b.n - head &&
	       diff_same(&a.v[a.n - 1 - tail], &b.v[b.n - 1 - tail]))
		tail++;
	size_t n = a.n - head - tail, m = b.n - head - tail;
	if (n && m && (n + 1) * (m + 1) > DIFF_MAX_CELLS)
		return error_set(err, E2BIG, "%zu and %zu lines differ: too many to compare", n, m);
	cleanup_free struct diff_op *ops = calloc(a.n + b.n + 1, sizeof(*ops));
	size_t n_ops = 0;
	if (!ops || diff_script(&a, &b, head, tail, ops, &n_ops) < 0)
		return error_set(err, ENOMEM, "out of memory");
	struct diff_buf out = { 0 };
	diff_put(&out, "", 0);
	diff_hunks(&a, &b, ops, n_ops, &out);
	if (out.oom) {
		free(out.s);
		return error_set(err, ENOMEM, "out of memory");
	}
	*ret = out.s;
	*ret_n = out.n;
	return 0;
}
