/* SPDX-License-Identifier: MIT */
/* The change set as a C type (core/snapshot/changeset_json.h): the writer
 * gives back the very bytes the reader took, for every change set of the
 * fuzz corpus apply reads and of the fixtures (change sets the dry run
 * suites wrote): changeset.json's bytes are a permit's reviewed digest and
 * apply's check. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "core/snapshot/apply.h"
#include "core/snapshot/applyop.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/store/jsonutil.h"
#include "harness.h"

#ifndef TEST_SOURCE_DIR
#error "TEST_SOURCE_DIR names tests/"
#endif

/* Whether text (one change set, or none) round-trips: 1 it does, 0 not a
 * change set the reader takes, -1 the bytes differ. */
static int roundtrip(const char *text, size_t n, const char *name)
{
	json_error_t jerr;
	cleanup_with(json_decrefp) json_t *doc = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	struct error err = { 0 };

	if (!doc || changeset_from_json(doc, &cs, &err) < 0)
		return 0;
	cleanup_with(json_decrefp) json_t *back = changeset_to_json(cs);
	cleanup_free char *want = jsonutil_dump_line(doc);
	cleanup_free char *got = back ? jsonutil_dump_line(back) : NULL;
	if (!want || !got || strcmp(want, got) != 0) {
		printf("# %s: differs\n#  want %s#  got  %s", name, want ? want : "(null)\n",
		       got ? got : "(null)\n");
		return -1;
	}
	return 1;
}

/* Every file of dir; skip: how many leading bytes to try without (a fuzz
 * corpus's selector byte). */
static int roundtrip_dir(const char *dir, size_t *ret_ok)
{
	cleanup_closedir DIR *d = opendir(dir);
	struct dirent *de;
	int bad = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[4096];
		cleanup_free char *text = NULL;
		size_t n;
		struct error err = { 0 };
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (file_read_capped(AT_FDCWD, path, 256 << 20, &text, &n, &err) < 0)
			return -EIO;
		for (size_t skip = 0; skip <= 1 && skip < n; skip++) {
			int r = roundtrip(text + skip, n - skip, path);
			if (r < 0)
				bad++;
			else
				*ret_ok += (size_t)r;
		}
	}
	return bad;
}

static bool reference_any_matches(char *const *patterns, const char *path)
{
	for (size_t i = 0; patterns && patterns[i]; i++)
		if (changeset_path_matches(patterns[i], path))
			return true;
	return false;
}

/* The verdict as the dry run judged it over the JSON changes before the
 * struct (the reference both struct verdicts are held to). */
static enum dryrun_verdict reference_verdict(json_t *changes, bool succeeded, char *const *expect,
					     char *const *expect_delete, json_t **ret_problems)
{
	json_t *problems = json_array();
	*ret_problems = problems;
	if (!succeeded)
		return DRYRUN_VERDICT_DRY_RUN_FAILED;
	if (json_array_size(changes) == 0)
		return DRYRUN_VERDICT_NO_EFFECT;
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c) {
		const char *why = json_string_value(json_object_get(c, "refused"));
		if (why)
			json_array_append_new(problems,
					      json_pack("{s:O, s:O, s:s}", "refused",
							json_object_get(c, "path"), "change",
							json_object_get(c, "change"), "reason", why));
	}
	if (json_array_size(problems) > 0)
		return DRYRUN_VERDICT_PRIVILEGED_FILE;
	json_array_foreach(changes, i, c) {
		const char *path = json_string_value(json_object_get(c, "path"));
		const char *change = json_string_value(json_object_get(c, "change"));
		bool removes = strcmp(change, "deleted") == 0 || strcmp(change, "type_changed") == 0;
		bool ok = removes ? reference_any_matches(expect_delete, path)
				  : reference_any_matches(expect, path);
		if (ok && strcmp(change, "renamed") == 0)
			ok = reference_any_matches(expect_delete,
						   json_string_value(json_object_get(c, "from")));
		if (!ok)
			json_array_append_new(problems, json_pack("{s:s, s:s}", "unexpected", path,
								  "change", change));
	}
	if (json_array_size(problems) > 0)
		return DRYRUN_VERDICT_UNEXPECTED_PATH;
	char *const *lists[] = { expect, expect_delete };
	for (size_t l = 0; l < 2; l++)
		for (size_t k = 0; lists[l] && lists[l][k]; k++) {
			bool hit = false;
			json_array_foreach(changes, i, c) {
				const char *path = json_string_value(json_object_get(c, "path"));
				const char *from = json_string_value(json_object_get(c, "from"));
				if (changeset_path_matches(lists[l][k], path) ||
				    (from && changeset_path_matches(lists[l][k], from))) {
					hit = true;
					break;
				}
			}
			if (!hit)
				json_array_append_new(problems,
						      json_pack("{s:s}", "missing", lists[l][k]));
		}
	return json_array_size(problems) > 0 ? DRYRUN_VERDICT_EXPECTED_PATH_MISSING
					     : DRYRUN_VERDICT_DRY_RUN_OK;
}

/* changeset_verdict_of() of the struct judges as changeset_verdict() of the
 * document apply reads back (names decoded): same verdict, same problems;
 * changeset_verdict() (the dry run's) as the reference over the document
 * as written (names shown). */
static int verdict_same(const char *text, size_t n, const char *name)
{
	static char all[] = "**", src[] = "src", a[] = "a", nothing[] = "nothing";
	static char *const expects[][3] = { { NULL }, { all, NULL }, { src, a, NULL }, { nothing, NULL } };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	enum dryrun_verdict recorded;
	struct error err = { 0 };

	if (apply_parse_changeset(text, n, &doc, &recorded, &err) < 0)
		return 0;
	if (changeset_parse(text, n, &cs, &err) < 0 || cs->verdict != recorded)
		return -1;
	cleanup_with(json_decrefp) json_t *written = json_loadb(text, n, 0, NULL);
	if (!written)
		return -1;
	for (size_t i = 0; i < sizeof(expects) / sizeof(expects[0]); i++)
		for (size_t j = 0; j < sizeof(expects) / sizeof(expects[0]); j++) {
			cleanup_with(json_decrefp) json_t *p1 = NULL, *p2 = NULL;
			enum dryrun_verdict v1 = reference_verdict(json_object_get(doc, "changes"),
								   true, expects[i], expects[j], &p1);
			enum dryrun_verdict v2 =
				changeset_verdict_of(cs, true, expects[i], expects[j], &p2);
			if (v1 != v2 || !json_equal(p1, p2)) {
				printf("# %s: verdicts differ (%zu, %zu)\n", name, i, j);
				return -1;
			}
			cleanup_with(json_decrefp) json_t *p3 = NULL, *p4 = NULL;
			enum dryrun_verdict v3 =
				reference_verdict(json_object_get(written, "changes"), true,
						  expects[i], expects[j], &p3);
			enum dryrun_verdict v4 =
				changeset_verdict(cs, true, expects[i], expects[j], &p4);
			if (v3 != v4 || !json_equal(p3, p4)) {
				printf("# %s: shown verdicts differ (%zu, %zu)\n", name, i, j);
				return -1;
			}
		}
	return 1;
}

static void test_changeset_verdict(void)
{
	const char *const dirs[] = { TEST_SOURCE_DIR "/fuzz/corpus/apply",
				     TEST_SOURCE_DIR "/fixtures/changesets" };
	size_t ok = 0;

	for (size_t k = 0; k < 2; k++) {
		cleanup_closedir DIR *d = opendir(dirs[k]);
		struct dirent *de;
		ASSERT_TRUE(d);
		while ((de = readdir(d))) {
			char path[4096];
			cleanup_free char *text = NULL;
			size_t n;
			struct error err = { 0 };
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[k], de->d_name);
			ASSERT_EQ_INT(file_read_capped(AT_FDCWD, path, 256 << 20, &text, &n, &err), 0);
			for (size_t skip = 0; skip <= 1 && skip < n; skip++) {
				int r = verdict_same(text + skip, n - skip, path);
				ASSERT_TRUE(r >= 0);
				ok += (size_t)r;
			}
		}
	}
	ASSERT_TRUE(ok >= 30);
}

static void test_changeset_roundtrip_corpus(void)
{
	size_t ok = 0;

	ASSERT_EQ_INT(roundtrip_dir(TEST_SOURCE_DIR "/fuzz/corpus/apply", &ok), 0);
	ASSERT_EQ_INT(roundtrip_dir(TEST_SOURCE_DIR "/fuzz/corpus/permit", &ok), 0);
	/* the corpus's change sets that apply accepts */
	printf("# %zu corpus change sets\n", ok);
	ASSERT_TRUE(ok >= 7);
}

static void test_changeset_roundtrip_fixtures(void)
{
	size_t ok = 0;

	ASSERT_EQ_INT(roundtrip_dir(TEST_SOURCE_DIR "/fixtures/changesets", &ok), 0);
	printf("# %zu fixture change sets\n", ok);
	ASSERT_TRUE(ok >= 10);
}

/* A name that is not UTF-8 keeps its shown value beside its bytes, and one
 * made without a shown value is written as changeset_set_bytes() would. */
static void test_changeset_bytes(void)
{
	const char *text =
		"{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\","
		"\"changes\":[{\"change\":\"deleted\",\"type\":\"file\",\"path\":\"a\\ufffd\","
		"\"path_b64\":\"Yf8=\",\"future\":[1,2]}],\"later\":true}";
	cleanup_with(json_decrefp) json_t *doc = json_loads(text, 0, NULL);
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(changeset_from_json(doc, &cs, &err), 0);
	ASSERT_EQ_INT(cs->n_entries, 1);
	ASSERT_EQ_STR(cs->entries[0].path.bytes, "a\xff");
	ASSERT_EQ_INT(cs->entries[0].change, CHANGESET_DELETED);
	ASSERT_EQ_INT(cs->verdict, DRYRUN_VERDICT_DRY_RUN_OK);
	ASSERT_EQ_INT(roundtrip(text, strlen(text), "bytes"), 1);
	free(cs->entries[0].path.shown);
	cs->entries[0].path.shown = NULL;
	cleanup_with(json_decrefp) json_t *back = changeset_to_json(cs);
	cleanup_free char *want = jsonutil_dump_line(doc), *got = jsonutil_dump_line(back);
	ASSERT_EQ_STR(got, want);
}

/* Strict types: a known key of another type is a damaged change set. */
static void test_changeset_strict(void)
{
	static const char *const bad[] = {
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[{\"change\":\"deleted\",\"type\":\"file\",\"path\":\"a\",\"size\":\"1\"}]}",
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[{\"change\":\"deleted\",\"type\":\"file\",\"path\":\"a\",\"hard_link\":1}]}",
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[{\"change\":\"created\",\"type\":\"file\",\"path\":\"a\",\"mode\":\"644\"}]}",
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[{\"change\":\"created\",\"type\":\"file\",\"path\":\"a\",\"odd_b64\":\"!\"}]}",
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"receipt\":\"1\",\"changes\":[]}",
		"{\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[{\"change\":\"created\",\"type\":\"file\",\"path\":\"../a\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cleanup_with(json_decrefp) json_t *doc = json_loads(bad[i], 0, NULL);
		cleanup_with(changeset_freep) struct changeset *cs = NULL;
		struct error err = { 0 };
		ASSERT_TRUE(doc);
		ASSERT_EQ_INT(changeset_from_json(doc, &cs, &err), -EINVAL);
	}
}

/* Editing the struct (linkgroups.c) writes what the same edits of the
 * JSON document wrote: a key unset and set again goes last, one set again
 * keeps its place, a name that is not UTF-8 gets its _b64 key, an added
 * entry is sorted in by the path the document shows. */
static void test_changeset_edit(void)
{
	const char *text =
		"{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\","
		"\"changes\":[{\"change\":\"mode_changed\",\"type\":\"file\",\"path\":\"m\","
		"\"size\":1,\"sha256\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"mode\":\"0600\",\"old_mode\":\"0644\","
		"\"xattrs\":[]},{\"change\":\"created\",\"type\":\"file\",\"path\":\"z\","
		"\"size\":0,\"sha256\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"mode\":\"0644\",\"xattrs\":[]}]}";
	const char *want =
		"{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\","
		"\"changes\":[{\"path\":\"a\\ufffd\",\"path_b64\":\"Yf8=\",\"change\":\"modified\","
		"\"type\":\"file\",\"hard_link\":true,\"link_to\":\"m\"},"
		"{\"change\":\"modified\",\"type\":\"file\",\"path\":\"m\",\"size\":1,"
		"\"sha256\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"mode\":\"0600\",\"link_split\":true,\"xattrs\":[]},"
		"{\"change\":\"created\",\"type\":\"file\",\"path\":\"z\",\"size\":0,"
		"\"sha256\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"mode\":\"0644\",\"xattrs\":[]}]}";
	cleanup_with(json_decrefp) json_t *doc = json_loads(text, 0, NULL);
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(changeset_from_json(doc, &cs, &err), 0);
	struct changeset_entry *m = &cs->entries[0];
	changeset_entry_key_unset(m, CHANGESET_KEY_OLD_MODE);
	changeset_entry_key_unset(m, CHANGESET_KEY_XATTRS);
	m->change = CHANGESET_MODIFIED;
	m->link_split = true;
	ASSERT_EQ_INT(changeset_entry_key_set(m, CHANGESET_KEY_CHANGE), 0);
	ASSERT_EQ_INT(changeset_entry_key_set(m, CHANGESET_KEY_LINK_SPLIT), 0);
	ASSERT_EQ_INT(changeset_entry_key_set(m, CHANGESET_KEY_XATTRS), 0);
	struct changeset_entry *a = changeset_add_entry(cs);
	ASSERT_TRUE(a);
	ASSERT_EQ_INT(changeset_entry_set_bytes(a, CHANGESET_KEY_PATH, "a\xff"), 0);
	ASSERT_EQ_INT(changeset_entry_key_set(a, CHANGESET_KEY_CHANGE), 0);
	ASSERT_EQ_INT(changeset_entry_key_set(a, CHANGESET_KEY_TYPE), 0);
	ASSERT_EQ_INT(changeset_entry_key_set(a, CHANGESET_KEY_HARD_LINK), 0);
	ASSERT_EQ_INT(changeset_entry_set_bytes(a, CHANGESET_KEY_LINK_TO, "m"), 0);
	a->change = CHANGESET_MODIFIED;
	a->type = CHANGESET_TYPE_FILE;
	a->hard_link = true;
	ASSERT_EQ_INT(changeset_sort(cs), 0);
	cleanup_with(json_decrefp) json_t *back = changeset_to_json(cs);
	cleanup_with(json_decrefp) json_t *want_doc = json_loads(want, 0, NULL);
	cleanup_free char *got = jsonutil_dump_line(back), *expected = jsonutil_dump_line(want_doc);
	ASSERT_EQ_STR(got, expected);
}

/* An apply's operation: what the journal's writer gives, its reader takes
 * back to the same operation (names as their exact bytes). */
static void test_applyop_roundtrip(void)
{
	char text[] = "{\"schema\":\"airlock.journal/4\"}\n"
		      "{\"op\":\"rename\",\"from\":\"a\",\"path\":\"b\\uFFFD\",\"path_b64\":\"Yv8=\","
		      "\"mode\":\"0555\"}\n"
		      "{\"op\":\"exchange\",\"path\":\"c\",\"staged\":\"upper/c\","
		      "\"backup\":\"backup/0\",\"new_ino\":42}\n"
		      "{\"op\":\"chown\",\"path\":\"d\",\"uid\":1,\"gid\":2,\"old_uid\":3,"
		      "\"old_gid\":4}\n"
		      "{\"op\":\"xattrs\",\"path\":\"e\",\"mode\":\"0444\",\"xattrs\":[{\"name\":"
		      "\"user.x\",\"base64\":\"Mg==\"}],\"old_xattrs\":[]}\n"
		      "{\"op\":\"chmod\",\"path\":\".\",\"mode\":\"0700\",\"old_mode\":\"0755\"}\n"
		      "{\"mark\":\"committed\"}\n";
	cleanup_free char *copy = strdup(text);
	struct applyop_list ops = { 0 };
	char mark[32];
	struct error err = { 0 };

	ASSERT_EQ_INT(apply_parse_journal(copy, &ops, mark, sizeof(mark), &err), 0);
	ASSERT_EQ_STR(mark, "committed");
	ASSERT_EQ_INT(ops.n, 5);
	ASSERT_EQ_STR(ops.items[0].path, "b\xff");
	ASSERT_EQ_INT(ops.items[1].new_ino, 42);
	ASSERT_EQ_INT(ops.items[2].old_gid, 4);
	ASSERT_EQ_INT(ops.items[3].xattrs.n, 1);
	ASSERT_EQ_INT(ops.items[4].mode, 0700);
	char *line = strchr(text, '\n') + 1;
	for (size_t i = 0; i < ops.n; i++) {
		char *end = strchr(line, '\n');
		*end = '\0';
		cleanup_with(json_decrefp) json_t *o = applyop_to_json(&ops.items[i]);
		cleanup_with(json_decrefp) json_t *enc = o ? changeset_encode_bytes(o) : NULL;
		cleanup_free char *got = enc ? jsonutil_dump_line(enc) : NULL;
		ASSERT_TRUE(got);
		got[strcspn(got, "\n")] = '\0';
		ASSERT_EQ_STR(got, line);
		line = end + 1;
	}
	applyop_list_release(&ops);
}

RUN_TESTS(T_(test_changeset_roundtrip_corpus), T_(test_changeset_roundtrip_fixtures),
	  T_(test_changeset_bytes), T_(test_changeset_strict), T_(test_changeset_verdict),
	  T_(test_changeset_edit), T_(test_applyop_roundtrip))
