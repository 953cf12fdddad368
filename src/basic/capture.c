/* SPDX-License-Identifier: MIT */
#include "basic/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

int capture_init(struct capture *c, size_t keep_bytes)
{
	*c = (struct capture){
		.head_cap = keep_bytes / 2,
		.tail_cap = keep_bytes - keep_bytes / 2,
	};
	c->head = malloc(MAX(c->head_cap, 1));
	c->tail = malloc(MAX(c->tail_cap, 1));
	c->hash = sha256_new();
	if (!c->head || !c->tail || !c->hash) {
		capture_release(c);
		return -ENOMEM;
	}
	return 0;
}

void capture_release(struct capture *c)
{
	free(c->head);
	free(c->tail);
	sha256_free(c->hash);
	c->head = c->tail = NULL;
	c->hash = NULL;
}

static void capture_feed_tail(struct capture *c, const char *p, size_t n)
{
	if (c->tail_cap == 0)
		return;
	if (n >= c->tail_cap) {
		memcpy(c->tail, p + n - c->tail_cap, c->tail_cap);
		c->tail_pos = 0;
		c->tail_len = c->tail_cap;
		return;
	}
	size_t first = MIN(n, c->tail_cap - c->tail_pos);
	memcpy(c->tail + c->tail_pos, p, first);
	memcpy(c->tail, p + first, n - first);
	c->tail_pos = (c->tail_pos + n) % c->tail_cap;
	c->tail_len = MIN(c->tail_len + n, c->tail_cap);
}

void capture_feed(struct capture *c, const void *data, size_t n)
{
	const char *p = data;

	sha256_update(c->hash, p, n);
	c->total_bytes += n;
	size_t to_head = MIN(n, c->head_cap - c->head_len);
	memcpy(c->head + c->head_len, p, to_head);
	c->head_len += to_head;
	capture_feed_tail(c, p + to_head, n - to_head);
}

void capture_finish(struct capture *c)
{
	sha256_final_hex(c->hash, c->sha256);
}

uint64_t capture_omitted_bytes(const struct capture *c)
{
	return c->total_bytes - c->head_len - c->tail_len;
}

bool capture_is_truncated(const struct capture *c)
{
	return capture_omitted_bytes(c) > 0;
}

size_t capture_copy_tail(const struct capture *c, char *buf)
{
	if (c->tail_len < c->tail_cap) {
		/* never wrapped: the bytes start at 0 */
		memcpy(buf, c->tail, c->tail_len);
		return c->tail_len;
	}
	size_t first = c->tail_cap - c->tail_pos;
	memcpy(buf, c->tail + c->tail_pos, first);
	memcpy(buf + first, c->tail, c->tail_pos);
	return c->tail_len;
}
