/* SPDX-License-Identifier: MIT */
/* Property: the ledger's parsers (ledger/ledger.h) never crash on any input,
 * and what they accept is what the format allows: an entry has a known
 * kind, a clean path and a 64-digit digest, and the record it carries is
 * handed out only when its SHA-256 is that digest; a checkpoint or proof accepted
 * with the corpus's key carries a signature that key made. The first byte
 * chooses: 0 an entry, 1 a checkpoint (unsigned, then with the key), 2 a
 * verifier key, 3 a proof (inclusion; consistency against the corpus's old
 * checkpoint, the bytes after the first NUL). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The public key of the ledger that signed the corpus's checkpoints. */
static const char fuzz_vkey[] =
	"airlock.local/ledger/3cb16bfffa825a64+e3ee5fd4+AX8Cn7Mrvluy+s7xW4MFsJsA2RDeSMdyci0GfYtWY9EM";

/* A path the entry may name: the system approver, or relative with no
 * empty, "." or ".." component ("..5x" is a file name like any other). */
static bool fuzz_ledger_path_clean(const char *p)
{
	if (strcmp(p, "/etc/airlock/approver.json") == 0)
		return true;
	if (!*p || *p == '/')
		return false;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

static void fuzz_ledger_check_entry(const struct ledger_entry *e)
{
	if ((unsigned)e->kind >= (unsigned)ledger_state_schema.n_kinds || strlen(e->sha256) != 64 ||
	    !fuzz_ledger_path_clean(e->path) || !e->id[0] || strchr(e->id, '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err;
	struct ledger_vkey vkey;

	if (size < 1)
		return 0;
	const char *text = (const char *)data + 1;
	size_t n = size - 1;
	if (ledger_vkey_parse(fuzz_vkey, &vkey, &err) < 0)
		abort();
	switch (data[0] % 4) {
	case 0: {
		struct ledger_entry e;
		if (ledger_entry_parse(&ledger_state_schema, text, n, &e, &err) == 0) {
			fuzz_ledger_check_entry(&e);
			char *bytes = NULL, hex[SHA256_HEX_SIZE];
			size_t len = 0;
			int r = ledger_entry_record(&ledger_state_schema, text, n, &bytes, &len, &err);
			if (r == 0) {
				sha256_hex(bytes, len, hex);
				if (!e.has_record || strlen(bytes) != len || strcmp(hex, e.sha256) != 0)
					abort();
				free(bytes);
			} else if (r == -ENODATA ? e.has_record : !e.has_record) {
				abort();
			}
		}
		break;
	}
	case 1: {
		struct ledger_checkpoint cp;
		if (ledger_checkpoint_parse(text, n, NULL, &cp, &err) == 0)
			ledger_checkpoint_release(&cp);
		if (ledger_checkpoint_parse(text, n, &vkey, &cp, &err) == 0) {
			if (strcmp(cp.origin, vkey.name) != 0)
				abort();
			ledger_checkpoint_release(&cp);
		}
		break;
	}
	case 2: {
		char *copy = strndup(text, n);
		struct ledger_vkey v;
		if (copy)
			(void)ledger_vkey_parse(copy, &v, &err);
		free(copy);
		break;
	}
	default: {
		const char *nul = memchr(text, '\0', n);
		size_t proof_n = nul ? (size_t)(nul - text) : n;
		struct ledger_entry e = { 0 };
		if (ledger_verify_proof(&ledger_state_schema, text, proof_n, &vkey, nul ? nul + 1 : NULL,
					nul ? n - proof_n - 1 : 0, NULL, &e, &err) == 0 &&
		    e.path[0])
			fuzz_ledger_check_entry(&e);
		break;
	}
	}
	return 0;
}
