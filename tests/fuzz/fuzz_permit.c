/* SPDX-License-Identifier: MIT */
/* Property: the two permit parsers never crash. What permit_parse_proposal()
 * accepts is a proposal airlock can judge: a non-empty argv (sh -c STRING
 * for a candidate), a timeout of 1-3600 s, a declared risk of 0-5, a
 * confidence in [0, 1], expected paths that are clean relative patterns, a
 * label (the seed's "id") of 1-128 bytes with no control character.
 * What permit_parse() accepts survives permit_to_json() and parses again
 * to the same record, its label included. Every rejection names its reason. The first input byte
 * picks the parser. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/permit/permit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p)
{
	if (!*p || p[0] == '/')
		abort();
	for (const char *c = p; *c;) {
		size_t len = strcspn(c, "/");
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && !strncmp(c, "..", 2)))
			abort();
		c += len;
		if (*c == '/')
			c++;
	}
}

static void check_label(const char *label)
{
	size_t n = label ? strlen(label) : 1;

	if (n < 1 || n > PERMIT_LABEL_MAX)
		abort();
	for (size_t i = 0; label && i < n; i++)
		if ((unsigned char)label[i] < 0x20 || label[i] == 0x7f)
			abort();
}

static void fuzz_proposal(const char *text, size_t n)
{
	struct permit_proposal p;
	struct error err = { 0 };
	int r = permit_parse_proposal(text, n, &p, &err);

	if (r < 0) {
		if (!err.msg[0])
			abort();
		return;
	}
	if (!p.argv || !p.argv[0] || !p.argv[0][0] || !p.reason || !p.expected_paths)
		abort();
	if (p.via_shell != (p.candidate != NULL))
		abort();
	if (p.candidate && (strcmp(p.argv[0], "sh") || strcmp(p.argv[1], "-c") ||
			    strcmp(p.argv[2], p.candidate) || p.argv[3]))
		abort();
	if (p.timeout_seconds < 1 || p.timeout_seconds > PERMIT_TIMEOUT_MAX)
		abort();
	if (p.declared_risk < 0 || p.declared_risk > 5)
		abort();
	if (p.has_confidence && !(p.confidence >= 0 && p.confidence <= 1))
		abort();
	for (size_t i = 0; p.expected_paths[i]; i++)
		check_path(p.expected_paths[i]);
	if (p.verify && (!p.verify[0] || !p.verify[0][0]))
		abort();
	check_label(p.label);
	permit_proposal_release(&p);
}

static void fuzz_record(const char *text, size_t n)
{
	struct permit p, again;
	struct error err = { 0 };
	int r = permit_parse(text, n, &p, &err);

	if (r < 0) {
		if (!err.msg[0])
			abort();
		return;
	}
	json_t *doc = permit_to_json(&p);
	char *out = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!out)
		abort();
	if (permit_parse(out, strlen(out), &again, &err) < 0)
		abort(); /* what airlock writes, it reads back */
	if (again.id != p.id || again.state != p.state || again.risk != p.risk ||
	    again.dryrun_id != p.dryrun_id || strcmp(again.changeset_sha256, p.changeset_sha256) ||
	    strcmp(again.workspace, p.workspace) ||
	    json_array_size(again.history) != json_array_size(p.history) ||
	    !again.p.label != !p.p.label || (p.p.label && strcmp(again.p.label, p.p.label)) ||
	    strcmp(again.classify_reason, p.classify_reason))
		abort();
	check_label(p.p.label);
	for (size_t i = 0; p.p.expected_paths[i]; i++)
		check_path(p.p.expected_paths[i]);
	permit_release(&again);
	free(out);
	json_decref(doc);
	permit_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_record((const char *)data + 1, size - 1);
	else
		fuzz_proposal((const char *)data + 1, size - 1);
	return 0;
}
