/* SPDX-License-Identifier: MIT */
/* core/report: the unified diff (known answers, and random pairs whose diff,
 * applied to the old text, gives the new one with every hunk header right). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/report/diff.h"
#include "harness.h"

static char *diff_of(const char *a, const char *b)
{
	char *d = NULL;
	size_t n;
	struct error err = { 0 };
	if (diff_unified(a, strlen(a), b, strlen(b), &d, &n, &err) < 0)
		return NULL;
	return d;
}

static void test_diff_known(void)
{
	char *d = diff_of("", "");
	ASSERT_EQ_STR(d, "");
	free(d);
	d = diff_of("", "new\n");
	ASSERT_EQ_STR(d, "@@ -0,0 +1,1 @@\n+new\n");
	free(d);
	d = diff_of("old\n", "");
	ASSERT_EQ_STR(d, "@@ -1,1 +0,0 @@\n-old\n");
	free(d);
	d = diff_of("a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\n");
	ASSERT_EQ_STR(d, "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
	free(d);
	d = diff_of("x\n", "x");
	ASSERT_EQ_STR(d, "@@ -1,1 +1,1 @@\n-x\n+x\n\\ No newline at end of file\n");
	free(d);
	/* Two changes far apart are two hunks; near, one. */
	d = diff_of("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
		    "0\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n13\n");
	ASSERT_EQ_STR(d, "@@ -1,4 +1,4 @@\n-1\n+0\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+13\n");
	free(d);
}

static void test_diff_too_big(void)
{
	size_t lines = 2100, n = lines * 2;
	char *a = malloc(n + 1), *b = malloc(n + 1), *d = NULL;
	ASSERT_TRUE(a && b);
	for (size_t i = 0; i < lines; i++) {
		a[2 * i] = 'a', b[2 * i] = 'b';
		a[2 * i + 1] = b[2 * i + 1] = '\n';
	}
	a[n] = b[n] = '\0';
	size_t dn;
	struct error err = { 0 };
	int r = diff_unified(a, n, b, n, &d, &dn, &err);
	free(a);
	free(b);
	ASSERT_EQ_INT(r, -E2BIG);
}

/* Applies diff d to a (NUL-terminated texts with newlines) and compares
 * the result with b; checks every hunk's counts. */
static bool diff_applies(const char *a, const char *d, const char *b)
{
	char out[8192] = "";
	size_t o = 0, aline = 1;
	const char *ap = a;
	while (*d) {
		unsigned long as, ac, bs, bc;
		int used = 0;
		/* (a "\n" in the format would also eat the next line's leading space) */
		if (sscanf(d, "@@ -%lu,%lu +%lu,%lu @@%n", &as, &ac, &bs, &bc, &used) != 4 ||
		    !used || d[used] != '\n')
			return false;
		d += used + 1;
		unsigned long first = ac ? as : as + 1;
		while (aline < first) { /* copy the unchanged lines before the hunk */
			const char *nl = strchr(ap, '\n');
			size_t len = (size_t)(nl - ap) + 1;
			memcpy(out + o, ap, len);
			o += len, ap += len, aline++;
		}
		unsigned long sa = 0, sb = 0;
		while (*d && *d != '@') {
			const char *nl = strchr(d, '\n');
			size_t len = (size_t)(nl - d) - 1; /* the line without its mark */
			if (*d != '+') {
				if (strncmp(ap, d + 1, len) != 0 || ap[len] != '\n')
					return false;
				ap += len + 1, aline++, sa++;
			}
			if (*d != '-') {
				memcpy(out + o, d + 1, len);
				o += len;
				out[o++] = '\n';
				sb++;
			}
			d = nl + 1;
		}
		if (sa != ac || sb != bc)
			return false;
	}
	strcpy(out + o, ap);
	return strcmp(out, b) == 0;
}

static void test_diff_random(void)
{
	unsigned seed = 1;
	for (int round = 0; round < 2000; round++) {
		char a[1024] = "", b[1024] = "";
		size_t na = (size_t)(rand_r(&seed) % 30), nb = (size_t)(rand_r(&seed) % 30);
		for (size_t i = 0; i < na; i++)
			sprintf(a + strlen(a), "%c\n", 'a' + rand_r(&seed) % 4);
		for (size_t i = 0; i < nb; i++)
			sprintf(b + strlen(b), "%c\n", 'a' + rand_r(&seed) % 4);
		char *d = diff_of(a, b);
		ASSERT_TRUE(d);
		bool ok = diff_applies(a, d, b);
		if (!ok)
			printf("# a=[%s] b=[%s] diff=[%s]\n", a, b, d);
		free(d);
		ASSERT_TRUE(ok);
	}
}

RUN_TESTS(T_(test_diff_known), T_(test_diff_too_big), T_(test_diff_random))
