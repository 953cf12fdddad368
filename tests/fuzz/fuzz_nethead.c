/* SPDX-License-Identifier: MIT */
/* Property: nethead_feed() and nethead_request() never crash, whatever the
 * bytes and however they are split; fed whole or in two parts (split at
 * the first byte's value), a head parses to the same verdict, head length
 * and request; a plain request's rewritten head ends as a head does. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/nethead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nethead one, two;

static int outcome(struct nethead *h, const char *s, size_t n, size_t split, struct nethead_request *req)
{
	struct error err = { 0 };
	int r = -EAGAIN;

	nethead_init(h);
	if (split > n)
		split = n;
	if (split > 0)
		r = nethead_feed(h, s, split, &err);
	if (r == -EAGAIN && n > split)
		r = nethead_feed(h, s + split, n - split, &err);
	if (r == 0)
		r = nethead_request(h, req, &err) == 0 ? 0 : 1;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = { 0 };
	struct nethead_request a, b;

	if (nethead_load(&err) < 0 || size == 0 || size > NETHEAD_MAX)
		return 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	int ra = outcome(&one, (const char *)data, size, size, &a);
	int rb = outcome(&two, (const char *)data, size, data[0], &b);
	if (ra != rb)
		abort();
	if (ra >= 0 && one.head_len != two.head_len)
		abort();
	if (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	char *out = NULL;
	size_t len = 0;
	if (ra == 0 && !a.is_connect && nethead_rewrite(&one, &a, &out, &len, &err) == 0) {
		if (len < 4 || memcmp(out + len - 4, "\r\n\r\n", 4) != 0)
			abort();
		free(out);
	}
	return 0;
}
