/* SPDX-License-Identifier: MIT */
/* Property: exedigest_parse() never crashes or reads past its input on any
 * bytes; what it accepts is written back by exedigest_format() byte for
 * byte, each entry is found by its own key, and a table with one more
 * entry inserted is bounded and reads back as written. The input's last 32
 * bytes are replaced by the SHA-256 of the rest first (when it is long
 * enough), so that the records' parser is reached, not only the checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/exedigest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct exedigest_table t, back;
	static uint8_t out[EXEDIGEST_FILE_MAX];
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	(void)exedigest_parse(buf, size, &t);
	if (size >= SHA256_DIGEST_BYTES)
		sha256_raw(buf, size - SHA256_DIGEST_BYTES, buf + size - SHA256_DIGEST_BYTES);
	if (exedigest_parse(buf, size, &t) == 0) {
		if (t.n > EXEDIGEST_MAX_ENTRIES || exedigest_format(&t, out) != size ||
		    memcmp(out, buf, size) != 0)
			abort();
		for (size_t i = 0; i < t.n; i++) {
			const struct exedigest_entry *e = exedigest_find(&t, &t.entries[i].key);
			if (!e || e > &t.entries[i] ||
			    memcmp(&e->key, &t.entries[i].key, sizeof(e->key)) != 0)
				abort();
		}
		struct exedigest_entry e = { .key = { .dev = 1, .ino = 2, .size = 3 } };
		if (t.n)
			e.key = t.entries[t.n - 1].key;
		e.key.ctime_nsec ^= 1;
		exedigest_insert(&t, &e);
		size_t n = exedigest_format(&t, out);
		if (t.n > EXEDIGEST_MAX_ENTRIES || exedigest_parse(out, n, &back) != 0 ||
		    back.n != t.n || exedigest_find(&back, &e.key) != &back.entries[0])
			abort();
	}
	free(buf);
	return 0;
}
