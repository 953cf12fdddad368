/* SPDX-License-Identifier: MIT */
/* Property: what apply reads back from a dry run's directory, the change
 * set and the journal, never crashes it, and whatever it accepts holds only
 * clean relative paths (no "", ".", ".." component, not absolute), of kinds
 * apply knows; the one exception is the path "." of the workspace root's
 * own mode or attributes (mode_changed or xattrs_changed of a directory;
 * a chmod or xattrs operation); and every attribute a change lists is one
 * its change set's version carries (no ACL before version 3); from version 4
 * every change but a deletion gives its object's mode and attribute list,
 * and a change's also_names are clean relative paths on a mode, attribute
 * or owner change only. The first byte chooses the parser: even the change set,
 * odd the journal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot/apply.h"
#include "core/snapshot/changeset.h"
#include "core/store/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_apply_check_xattrs(json_t *list, enum changeset_xattrs which)
{
	size_t i;
	json_t *x;

	json_array_foreach(list, i, x)
		if (!jsonutil_str(x, "name") ||
		    !changeset_xattr_carried(jsonutil_str(x, "name"), which))
			abort();
}

static void fuzz_apply_check_path(const char *p, const char *kind, const char *const *root_kinds)
{
	if (p && strcmp(p, ".") == 0) {
		for (size_t i = 0; kind && root_kinds[i]; i++)
			if (strcmp(kind, root_kinds[i]) == 0)
				return;
		abort();
	}
	if (!p || !*p || *p == '/')
		abort();
	for (const char *c = p;; c++) {
		size_t len = strcspn(c, "/");
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			abort();
		c += len;
		if (!*c)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = { 0 };
	json_t *doc = NULL, *c;
	size_t i;

	if (size == 0)
		return 0;
	if (data[0] % 2 == 0) {
		enum dryrun_verdict verdict = DRYRUN_VERDICT_NONE;
		int r = apply_parse_changeset((const char *)data + 1, size - 1, &doc, &verdict, &err);
		if (r == 0) {
			/* the verdict is the one the change set names */
			const char *name = dryrun_verdict_name(verdict);
			if (!name || strcmp(name, jsonutil_str(doc, "verdict")) != 0)
				abort();
			static const char *const root_changes[] = { "mode_changed",
								    "xattrs_changed", NULL };
			json_array_foreach(json_object_get(doc, "changes"), i, c) {
				const char *type = jsonutil_str(c, "type");
				fuzz_apply_check_path(jsonutil_str(c, "path"),
						      type && strcmp(type, "dir") == 0
							      ? jsonutil_str(c, "change")
							      : NULL,
						      root_changes);
				if (!jsonutil_str(c, "type") || !jsonutil_str(c, "change"))
					abort();
				/* the other names of a hard-link group a mode or
				 * attribute change reaches: clean names, on such
				 * a change only */
				size_t k;
				json_t *also;
				json_array_foreach(json_object_get(c, "also_names"), k, also)
					fuzz_apply_check_path(jsonutil_str(also, "path"), NULL,
							      root_changes);
				if ((json_object_get(c, "also_names") ||
				     json_object_get(c, "also_outside")) &&
				    strcmp(jsonutil_str(c, "change"), "mode_changed") != 0 &&
				    strcmp(jsonutil_str(c, "change"), "xattrs_changed") != 0 &&
				    strcmp(jsonutil_str(c, "change"), "owner_changed") != 0)
					abort();
				enum changeset_xattrs which =
					changeset_xattrs_of(jsonutil_str(doc, "schema"));
				fuzz_apply_check_xattrs(json_object_get(c, "xattrs"), which);
				fuzz_apply_check_xattrs(json_object_get(c, "old_xattrs"), which);
				/* version 4: every object apply installs or changes
				 * carries its mode and its whole attribute list */
				if (changeset_carries_identity(jsonutil_str(doc, "schema")) &&
				    strcmp(jsonutil_str(c, "change"), "deleted") != 0 &&
				    (!jsonutil_str(c, "mode") ||
				     !json_is_array(json_object_get(c, "xattrs"))))
					abort();
			}
			json_decref(doc);
		} else if (err.msg[0] == '\0') {
			abort(); /* every rejection names its reason */
		}
		return 0;
	}
	char *text = malloc(size);
	char mark[32];
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	struct applyop_list ops = { 0 };
	if (apply_parse_journal(text, &ops, mark, sizeof(mark), &err) == 0) {
		static const char *const root_ops[] = { "chmod", "xattrs", NULL };
		for (i = 0; i < ops.n; i++) {
			const char *kind = applyop_kind_name(ops.items[i].kind);
			fuzz_apply_check_path(ops.items[i].path, kind, root_ops);
			if (!kind)
				abort();
		}
		if (strnlen(mark, sizeof(mark)) == sizeof(mark))
			abort();
		applyop_list_release(&ops);
	} else if (err.msg[0] == '\0') {
		abort();
	}
	free(text);
	return 0;
}
