/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/sha256.h"

/* A bounded summary of a byte stream of any length: the first head_cap bytes,
 * the last tail_cap bytes, the total count and the SHA-256 of everything.
 * Memory is head_cap + tail_cap whatever the stream's size. */
struct capture {
	size_t head_cap, tail_cap;
	char *head;
	size_t head_len;
	char *tail; /* ring buffer of the bytes after the head */
	size_t tail_len, tail_pos;
	uint64_t total_bytes;
	struct sha256 *hash;
	char sha256[SHA256_HEX_SIZE]; /* set by capture_finish() */
};

/* Keeps keep_bytes in all: half for the head, the rest for the tail. */
int capture_init(struct capture *c, size_t keep_bytes);
void capture_release(struct capture *c);
void capture_feed(struct capture *c, const void *data, size_t n);
void capture_finish(struct capture *c);

/* True when bytes between head and tail were dropped. */
bool capture_is_truncated(const struct capture *c);
uint64_t capture_omitted_bytes(const struct capture *c);
/* Copies the tail in stream order into buf (capacity c->tail_cap). */
size_t capture_copy_tail(const struct capture *c, char *buf);
