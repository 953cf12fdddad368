/* SPDX-License-Identifier: MIT */
/* The shell reading, the rules, the gate's state and the approver. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/ed25519.h"
#include "basic/macro.h"
#include "basic/text.h"
#include "core/gate/approver.h"
#include "core/snapshot/changeset.h"
#include "core/gate/gate.h"
#include "core/host/hostsafety.h"
#include "core/record/receipt.h"
#include "core/policy/policy.h"
#include "core/policy/rules.h"
#include "core/policy/rules_embed.h"
#include "core/policy/shellwords.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/store/store.h"
#include "harness.h"

static void test_shell_plain_commands_and_operators(void)
{
	struct shell_script s;
	const char *text = "git status && ls -la 'a b' \"c\\\"d\"; echo x | wc -l";

	ASSERT_EQ_INT(shell_script_parse(text, strlen(text), &s), 0);
	ASSERT_TRUE(s.plain);
	ASSERT_EQ_INT(s.n_commands, 4);
	ASSERT_EQ_STR(s.commands[1].argv[2], "a b");
	ASSERT_EQ_STR(s.commands[1].argv[3], "c\"d");
	ASSERT_EQ_INT(s.commands[0].op_after, SHELL_OP_AND);
	ASSERT_EQ_INT(s.commands[1].op_after, SHELL_OP_SEQ);
	ASSERT_EQ_INT(s.commands[2].op_after, SHELL_OP_PIPE);
	ASSERT_EQ_INT(shell_script_masking(&s), SHELL_MASK_SEQUENCE | SHELL_MASK_PIPE);
	shell_script_release(&s);
}

static void test_shell_masking_forms(void)
{
	static const struct {
		const char *text;
		unsigned mask;
	} cases[] = {
		{ "pytest -q | tail -15", SHELL_MASK_PIPE },
		{ "make || true", SHELL_MASK_OR },
		{ "make; echo done", SHELL_MASK_SEQUENCE },
		{ "make &", SHELL_MASK_BACKGROUND },
		{ "make && make install", 0 },
		{ "make 2>&1 | tee log", SHELL_MASK_PIPE | SHELL_MASK_UNPARSED },
		{ "make\n", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct shell_script s;
		ASSERT_EQ_INT(shell_script_parse(cases[i].text, strlen(cases[i].text), &s), 0);
		unsigned mask = shell_script_masking(&s);
		shell_script_release(&s);
		if (mask != cases[i].mask)
			printf("# case %zu: %s\n", i, cases[i].text);
		ASSERT_EQ_INT(mask, cases[i].mask);
	}
}

static void test_shell_not_plain(void)
{
	static const char *const cases[] = {
		"echo $HOME",	 "echo `id`",  "cat < f",    "ls > f",		 "(cd x; ls)",
		"ls *.c",	 "X=1",	       "echo 'open", "ls # hidden",	 "echo {a,b}",
		"ls ~",		 "echo \\; x", "cat <(ls)",  "echo $(rm -rf x)", "echo \"$X\"",
		"a &&",		 "| ls",       "ls\r",	     "ls \xc2\xa0-la",	 "echo a;; b",
		"PATH=/tmp; ls",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct shell_script s;
		ASSERT_EQ_INT(shell_script_parse(cases[i], strlen(cases[i]), &s), 0);
		bool plain = s.plain;
		shell_script_release(&s);
		if (plain)
			printf("# read as plain: %s\n", cases[i]);
		ASSERT_TRUE(!plain);
	}
}

/* `NAME=VALUE cmd` is read: the assignments are kept apart for the rules. */
static void test_shell_assignment_prefix_is_kept(void)
{
	struct shell_script s;
	const char *text = "LC_ALL=C GIT_DIR=x ls -la A=1";

	ASSERT_EQ_INT(shell_script_parse(text, strlen(text), &s), 0);
	ASSERT_TRUE(s.plain);
	ASSERT_EQ_INT(s.n_commands, 1);
	ASSERT_EQ_STR(s.commands[0].argv[0], "ls");
	ASSERT_EQ_STR(s.commands[0].argv[2], "A=1");
	ASSERT_EQ_STR(s.commands[0].assignments[0], "LC_ALL=C");
	ASSERT_EQ_STR(s.commands[0].assignments[1], "GIT_DIR=x");
	ASSERT_TRUE(s.commands[0].assignments[2] == NULL);
	shell_script_release(&s);
}

static void test_shell_redirection_target_is_not_an_argument(void)
{
	struct shell_script s;
	const char *text = "true 2>/dev/null >out";

	ASSERT_EQ_INT(shell_script_parse(text, strlen(text), &s), 0);
	ASSERT_EQ_INT(s.n_commands, 1);
	ASSERT_EQ_STR(s.commands[0].argv[0], "true");
	ASSERT_TRUE(s.commands[0].argv[1] == NULL);
	shell_script_release(&s);
}

static int classify(const struct rules *rules, const char *const *argv)
{
	struct rules_verdict v;

	rules_classify(rules, (char *const *)argv, &v);
	return v.risk;
}

static void test_rules_flag_vetoes(void)
{
	struct rules *rules = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(rules_load_default(&rules, &err), 0);
	static const struct {
		const char *argv[8];
		int risk;
	} cases[] = {
		{ { "git", "status", NULL }, 1 },
		{ { "git", "-C", "sub", "diff", NULL }, 1 },
		{ { "/usr/bin/git", "log", "--oneline", NULL }, 1 },
		{ { "git", "-c", "core.pager=sh", "log", NULL }, 4 },
		{ { "git", "diff", "--output=/tmp/x", NULL }, 4 },
		{ { "git", "diff", "--ext-diff", NULL }, 4 },
		{ { "git", "branch", NULL }, 1 },
		{ { "git", "branch", "-D", "main", NULL }, 4 },
		{ { "git", "push", "--force", NULL }, 5 },
		{ { "find", ".", "-name", "x", NULL }, 1 },
		{ { "find", ".", "-exec", "rm", "{}", ";", NULL }, 4 },
		{ { "find", ".", "-delete", NULL }, 4 },
		{ { "rg", "--pre", "sh", "x", NULL }, 4 },
		{ { "rg", "-iz", "x", NULL }, 4 },
		{ { "rg", "-i", "x", NULL }, 1 },
		{ { "sed", "-n", "1,5p", "f", NULL }, 1 },
		{ { "sed", "-i", "s/a/b/", "f", NULL }, 4 },
		{ { "sed", "-i.bak", "s/a/b/", "f", NULL }, 4 },
		{ { "ls", NULL }, 1 },
		{ { "env", "FOO=1", "ls", NULL }, 4 },
		{ { "env", "LC_ALL=C", "ls", NULL }, 1 },
		{ { "timeout", "5", "rm", "-rf", "/", NULL }, 5 },
		{ { "sudo", "ls", NULL }, 5 },
		{ { "sh", "-c", "ls && git status", NULL }, 1 },
		{ { "bash", "-lc", "ls; rm -rf ~", NULL }, 5 },
		{ { "sh", "-c", "ls > out", NULL }, 4 },
		{ { "make", NULL }, 3 },
		{ { "frobnicate", NULL }, 4 },
		{ { "airlock", "gate", NULL }, 1 },
		{ { "airlock", "approver", "init", NULL }, 5 },
		{ { "airlock", "dryrun", "--", "make", NULL }, 2 },
		{ { "airlock", "apply", "7", NULL }, 4 },
		{ { "script", "-qc", "airlock ack 1", NULL }, 5 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int risk = classify(rules, cases[i].argv);
		if (risk != cases[i].risk)
			printf("# case %zu: %s %s\n", i, cases[i].argv[0],
			       cases[i].argv[1] ? cases[i].argv[1] : "");
		ASSERT_EQ_INT(risk, cases[i].risk);
	}
	rules_free(rules);
}

static void test_rules_errors_name_the_key(void)
{
	struct rules *rules = NULL;
	struct error err = { 0 };
	static const struct {
		const char *rule, *key;
	} cases[] = {
		{ "\"risk\":9", "rules[0].risk" },
		/* read-only is granted by a list of what is allowed, never by default */
		{ "\"risk\":1", "rules[0]" },
		{ "\"risk\":1,\"options\":{\"flags\":[\"-vv\"]}", "rules[0].options.flags[0]" },
		{ "\"risk\":1,\"options\":{\"bogus\":1}", "rules[0].options.bogus" },
		{ "\"risk\":1,\"options\":{\"flags\":\"  \"}", "rules[0].options.flags" },
		{ "\"risk\":1,\"options\":{\"flags\":\"-a --b=c\"}", "rules[0].options.flags[1]" },
		{ "\"risk\":1,\"any_arguments\":true,\"operands\":{\"patterns\":[\"[\"]}",
		  "rules[0].operands.patterns[0]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char doc[1024];
		snprintf(doc, sizeof(doc),
			 "{\"schema\":\"airlock.rules/2\",\"levels\":{\"1\":\"a\",\"2\":\"b\","
			 "\"3\":\"c\",\"4\":\"d\",\"5\":\"e\"},\"default\":{\"risk\":4,\"reason\":\"x\"},"
			 "\"unparsed_shell\":{\"risk\":4,\"reason\":\"y\"},\"environment\":{\"safe\":"
			 "[\"LANG\"],\"risk\":4,\"reason\":\"w\"},\"shells\":[\"sh\"],"
			 "\"wrappers\":[],\"rules\":[{\"id\":\"a\",\"argv0\":[\"ls\"],%s,"
			 "\"reason\":\"z\"}]}",
			 cases[i].rule);
		err = (struct error){ 0 };
		ASSERT_TRUE(rules_parse(doc, strlen(doc), &rules, &err) < 0);
		if (!strstr(err.msg, cases[i].key))
			printf("# case %zu: %s\n", i, err.msg);
		ASSERT_TRUE(strstr(err.msg, cases[i].key) != NULL);
	}
}

static int classify_shell(const struct rules *rules, const char *script, char *rule, size_t n)
{
	struct rules_verdict v;

	rules_classify_shell(rules, script, &v);
	snprintf(rule, n, "%s", v.rule);
	return v.risk;
}

/* issue 20: a shell string's reason names the command that decided, as
 * printable text: a name with control or non-ASCII bytes is shown with '?'
 * (a script with such bytes is not plain, so this needs rules where a
 * construct not modelled is below the default level). */
static void test_rules_shell_reason_names_as_text(void)
{
	extern const char policy_rules_json[];
	struct rules *rules = NULL;
	struct error err = { 0 };
	struct rules_verdict v;
	char *text = strdup(policy_rules_json);
	const char *from = "\"unparsed_shell\": {\"risk\": 4";
	char *at = text ? strstr(text, from) : NULL;

	ASSERT_TRUE(at != NULL);
	at[strlen(from) - 1] = '1';
	ASSERT_EQ_INT(rules_parse(text, strlen(text), &rules, &err), 0);
	rules_classify_shell(rules, "ls; to\033[2J\xc3\xa9uch f", &v);
	ASSERT_EQ_INT(v.risk, 4);
	ASSERT_EQ_STR(v.rule, "default");
	if (strncmp(v.reason, "to?[2J??uch: ", 13) != 0)
		printf("# %s\n", v.reason);
	ASSERT_TRUE(strncmp(v.reason, "to?[2J??uch: ", 13) == 0);
	/* A long list is cut at a name, and says so. */
	char script[4096] = "";
	for (int i = 0; i < 100; i++)
		strcat(script, "echo; ");
	rules_classify_shell(rules, script, &v);
	ASSERT_EQ_INT(v.risk, 1);
	ASSERT_TRUE(strlen(v.reason) < sizeof(v.reason));
	ASSERT_TRUE(strstr(v.reason, ", ...") != NULL);
	rules_free(rules);
	free(text);
}

/* Every string value under v (argument words a rule names), at most max. */
static size_t rules_words(json_t *v, const char **words, size_t n, size_t max)
{
	size_t i;
	const char *k;
	json_t *e;

	if (json_is_string(v) && n < max)
		words[n++] = json_string_value(v);
	else if (json_is_array(v))
		json_array_foreach(v, i, e)
			n = rules_words(e, words, n, max);
	else if (json_is_object(v))
		json_object_foreach(v, k, e)
			n = rules_words(e, words, n, max);
	return n;
}

/* Both judge argv alike: risk, rule, reason, level, wrappers stripped. */
static bool rules_agree(const struct rules *a, const struct rules *b, char *const *argv)
{
	struct rules_verdict va, vb;

	rules_classify(a, argv, &va);
	rules_classify(b, argv, &vb);
	bool same = va.risk == vb.risk && strcmp(va.rule, vb.rule) == 0 &&
		    strcmp(va.reason, vb.reason) == 0 && strcmp(va.level, vb.level) == 0 &&
		    rules_strip_wrappers(a, argv) == rules_strip_wrappers(b, argv) &&
		    rules_shell_script(a, argv) == rules_shell_script(b, argv);
	if (!same)
		printf("# %s %s %s: %d %s, parsed whole %d %s\n", argv[0], argv[1] ? argv[1] : "",
		       argv[1] && argv[2] ? argv[2] : "", va.risk, va.rule, vb.risk, vb.rule);
	return same;
}

/* issue 22: the built-in rules, parsed by the names a command uses when it
 * first uses them (rules_embed.h), judge every command as all of rules.json
 * parsed at once does: each wrapper's and rule's names with each word any
 * of them lists, bare, behind wrappers and in `sh -c`; and every piece
 * parses. */
static void test_rules_embedded_as_parsed(void)
{
	struct rules *lazy = NULL, *whole = NULL;
	struct error err = { 0 };
	json_t *doc = json_loads(policy_rules_json, 0, NULL);
	static const char *words[4096];
	size_t n_words = rules_words(doc, words, 0, ARRAY_SIZE(words));
	const char *const sections[] = { "wrappers", "rules" };
	size_t checked = 0;

	ASSERT_TRUE(doc != NULL);
	ASSERT_TRUE(n_words > 500 && n_words < ARRAY_SIZE(words));
	ASSERT_EQ_INT(rules_load_default(&lazy, &err), 0);
	ASSERT_EQ_INT(rules_parse(policy_rules_json, strlen(policy_rules_json), &whole, &err), 0);
	for (size_t s = 0; s < 2; s++) {
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(doc, sections[s]), i, item) {
			size_t k;
			json_t *name;
			json_array_foreach(json_object_get(item, "argv0"), k, name) {
				char *n = (char *)json_string_value(name);
				char *bare[] = { n, NULL };
				ASSERT_TRUE(rules_agree(lazy, whole, bare));
				for (size_t w = 0; w < n_words; w++) {
					char *word = (char *)words[w];
					char script[512];
					snprintf(script, sizeof(script), "%s %s x", n, word);
					char *argvs[][6] = {
						{ n, word, NULL },
						{ n, word, (char *)"file", NULL },
						{ (char *)"env", (char *)"A=1", n, word, NULL },
						{ (char *)"nice", n, word, NULL },
						{ (char *)"sh", (char *)"-c", script, NULL },
					};
					for (size_t a = 0; a < ARRAY_SIZE(argvs); a++)
						ASSERT_TRUE(rules_agree(lazy, whole, argvs[a]));
					checked++;
				}
			}
		}
	}
	char *unknown[] = { (char *)"no-such-tool", (char *)"-x", NULL };
	ASSERT_TRUE(rules_agree(lazy, whole, unknown));
	ASSERT_TRUE(checked > 10000);
	/* What no command named is left unparsed; it parses too. */
	struct rules *fresh = NULL;
	ASSERT_EQ_INT(rules_load_default(&fresh, &err), 0);
	ASSERT_EQ_INT(rules_parse_all(fresh, &err), 0);
	ASSERT_EQ_INT(rules_parse_all(lazy, &err), 0);
	rules_free(fresh);
	rules_free(lazy);
	rules_free(whole);
	json_decref(doc);
}

/* issue 12: each of these passed the hook as risk 1 and wrote a file or ran
 * a program. */
static void test_rules_read_only_attacks(void)
{
	struct rules *rules = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(rules_load_default(&rules, &err), 0);
	static const char *const argvs[][12] = {
		{ "env", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor",
		  "GIT_CONFIG_VALUE_0=id > f; false", "git", "status", NULL },
		{ "env", "BASH_ENV=./evil", "bash", "-c", "ls", NULL },
		{ "env", "LD_PRELOAD=./evil.so", "ls", NULL },
		{ "env", "PATH=.", "ls", NULL },
		{ "exec", "-a", "ls", "rm", "-f", "victim", NULL },
		{ "env", "-S", "rm -f victim", NULL },
		{ "env", "-Srm -f victim", NULL },
		{ "env", "-Smake test", NULL },
		{ "env", "--split-string=rm -f victim", NULL },
		{ "env", "--spl=rm -f victim", NULL },
		{ "uniq", "-", "out", NULL },
		{ "uniq", "-c", "in", "out", NULL },
		{ "xxd", "-r", "-p", "hex", "out", NULL },
		{ "sort", "--outp=F", NULL },
		{ "sort", "--o", "F", NULL },
		{ "sort", "-oF", NULL },
		{ "sort", "-rnoF", NULL },
		{ "sort", "-S", "1", "--compress-program=./evil", NULL },
		{ "sort", "-S", "1", "--compress=./evil", NULL },
		{ "sort", "-T", "/tmp", "f", NULL },
		{ "/usr/bin/time", "-oF", "ls", NULL },
		{ "time", "--output=F", "ls", NULL },
		{ "time", "--outp", "F", "ls", NULL },
		{ "file", "-C", "-m", "x", NULL },
		{ "file", "--comp", "-m", "x", NULL },
		{ "file", "-p", "f", NULL },
		{ "date", "-s", "2020-01-01", NULL },
		{ "date", "--se=2020-01-01", NULL },
		{ "date", "0101000020", NULL },
		{ "hostname", "X", NULL },
		{ "hostname", "-F", "f", NULL },
		{ "tree", "-o", "out", NULL },
		{ "find", ".", "-fprint", "out", NULL },
		{ "find", ".", "-newer", "f", "-delete", NULL },
		{ "diff", "--paginate", "a", "b", NULL },
		{ "git", "log", "--outp=x", NULL },
		{ "git", "log", "--ext-diff", NULL },
		{ "git", "-c", "core.pager=sh", "log", NULL },
		{ "git", "--exec-path=.", "status", NULL },
		{ "git", "grep", "-O", "x", NULL },
		{ "git", "grep", "--open-files-in-pager=vi", "x", NULL },
		{ "git", "stash", NULL },
		{ "git", "tag", "list", NULL },
		{ "git", "branch", "show", NULL },
		{ "git", "branch", "--edit-description", NULL },
		{ "git", "remote", "add", "x", "y", NULL },
		{ "rg", "--pre", "./evil", "x", NULL },
		{ "rg", "-iz", "x", NULL },
		{ "printf", "-v", "PATH", "/tmp", NULL },
		{ "ionice", "-c", "3", "-p", "1", NULL },
		{ "xargs", "ls", NULL },
		{ "command", "-x", "ls", NULL },
		{ "timeout", "--bogus", "5", "ls", NULL },
	};
	for (size_t i = 0; i < sizeof(argvs) / sizeof(argvs[0]); i++) {
		int risk = classify(rules, argvs[i]);
		if (risk < 2)
			printf("# rated read-only: %s %s %s\n", argvs[i][0], argvs[i][1],
			       argvs[i][2] ? argvs[i][2] : "");
		ASSERT_TRUE(risk >= 2);
	}
	/* The same through a shell string, as a hook hands it over. */
	static const char *const scripts[] = {
		"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=id git status",
		"LD_PRELOAD=./x.so ls",
		"BASH_ENV=./evil bash -c ls",
		"LC_ALL=C PATH=. ls",
		"PATH=. :; ls",
		"ls && exec -a ls rm -f victim",
		"echo x | uniq - out",
		"git status; env -S'rm -f victim'",
		"bash -c 'sort --outp=F'",
	};
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		char rule[64];
		int risk = classify_shell(rules, scripts[i], rule, sizeof(rule));
		if (risk < 2)
			printf("# rated read-only: %s (%s)\n", scripts[i], rule);
		ASSERT_TRUE(risk >= 2);
	}
	/* The wrapper or the variable is named as the reason. */
	char rule[64];
	classify_shell(rules, "env LD_PRELOAD=x ls", rule, sizeof(rule));
	ASSERT_EQ_STR(rule, "environment: LD_PRELOAD");
	classify_shell(rules, "/usr/bin/time -oF ls", rule, sizeof(rule));
	ASSERT_EQ_STR(rule, "wrapper-option: time");
	ASSERT_EQ_INT(classify_shell(rules, "exec -a ls rm -rf /", rule, sizeof(rule)), 5);
	ASSERT_EQ_INT(classify_shell(rules, "env -i LC_ALL=C timeout -s KILL 5 rm -rf /", rule,
				     sizeof(rule)),
		      5);
	rules_free(rules);
}

/* What is read-only stays so: real commands an agent runs to look around. */
static void test_rules_read_only_commands(void)
{
	struct rules *rules = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(rules_load_default(&rules, &err), 0);
	static const char *const scripts[] = {
		"ls -la",
		"ls --colo=auto -1",
		"cat f",
		"grep -rn x .",
		"grep -rn '--include=*.c' -e x -A3 src",
		"git status",
		"git status --porcelain=v1 -uno",
		"git log --oneline -5",
		"git log -n 3 --stat --format=%H",
		"git diff --cached --stat",
		"git show HEAD~1 --name-only",
		"git -C sub --no-pager diff -U5",
		"git blame -L 1,10 f",
		"git rev-parse --abbrev-ref HEAD",
		"git ls-files -z",
		"git branch -a",
		"git branch --show-current",
		"git stash list",
		"git remote -v",
		"find . -name x",
		"find . -type f -name '*.c' -print0",
		"sed -n 1,5p f",
		"head -n 20 f",
		"head -5 f",
		"tail -f log",
		"wc -l f g",
		"sort -u f",
		"sort -k2,2n -t, f g",
		"uniq -c",
		"uniq -c in",
		"jq .",
		"jq -r '.a' f.json",
		"xxd -r -p hex",
		"date +%s",
		"date -u",
		"hostname -f",
		"file -b f",
		"env",
		"env LC_ALL=C sort f",
		"LC_ALL=C TZ=UTC date",
		"command -v rm",
		"nice -n 5 ls",
		"timeout 5 cat f",
		"stat -c %s f",
		"diff -u a b",
		"test -e f && echo yes",
		"echo --- x ---",
		"du -sh .",
	};
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		char rule[64];
		int risk = classify_shell(rules, scripts[i], rule, sizeof(rule));
		if (risk != 1)
			printf("# not read-only: %s (%s)\n", scripts[i], rule);
		ASSERT_EQ_INT(risk, 1);
	}
	rules_free(rules);
}

static void test_gate_trivial_successes(void)
{
	struct rules *rules = NULL;
	struct policy *policy = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(rules_load_default(&rules, &err), 0);
	ASSERT_EQ_INT(policy_load_default(&policy, &err), 0);
	const char *trivial[][5] = {
		{ "true", NULL },
		{ ":", NULL },
		{ "/bin/echo", "ok", NULL },
		{ "sh", "-c", "exit 0", NULL },
		{ "bash", "-c", "true; echo fixed", NULL },
		{ "env", "LANG=C", "true", NULL },
		{ "timeout", "5", "test", "-e", NULL },
		{ "sh", "-c", "", NULL },
	};
	const char *real[][5] = {
		{ "make", "test", NULL },
		{ "sh", "-c", "true && make", NULL },
		{ "pytest", NULL },
		{ "env", "-Smake test", NULL },
	};
	for (size_t i = 0; i < sizeof(trivial) / sizeof(trivial[0]); i++)
		ASSERT_TRUE(gate_is_trivial(policy, rules, (char *const *)trivial[i]));
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++)
		ASSERT_TRUE(!gate_is_trivial(policy, rules, (char *const *)real[i]));
	rules_free(rules);
	policy_free(policy);
}

static json_t *fake_receipt(uint64_t id, const char *cmd, int code)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)cmd, NULL };
	static const int expected[] = { 0 };
	struct receipt_sandbox sandbox = { .profile = "default" };
	struct receipt r = { .id = id,
			     .source = "run",
			     .argv = argv,
			     .cwd = "/w",
			     .status = RECEIPT_EXITED,
			     .has_exit_code = true,
			     .exit_code = code,
			     .match_expected = code == 0,
			     .expected = expected,
			     .n_expected = 1,
			     .err = { .text = "line1\nline2\n", .text_len = 12 },
			     .sandbox = &sandbox };

	return receipt_to_json(&r);
}

/* gate_prepare() on a receipt document, as the tests change it. */
static int prepare(struct store *store, json_t *doc, const char *scope, uint64_t fixes,
		   uint64_t rerun_of, bool trivial, bool verified, struct gate_effect *ret,
		   struct error *err)
{
	struct receipt_parsed p;
	int r = receipt_from_json(doc, &p, err);

	if (r == 0)
		r = gate_prepare(store, &p.receipt, NULL, scope, fixes, rerun_of, trivial, verified,
				 false, ret, err);
	receipt_parsed_release(&p);
	return r;
}

/* A receipt of the same command (fake_receipt()) cancelled by its client. */
static json_t *fake_cancelled(uint64_t id, const char *cmd)
{
	json_t *doc = fake_receipt(id, cmd, 0);

	json_object_set_new(doc, "status", json_string("cancelled"));
	json_object_set_new(doc, "exit_code", json_null());
	json_object_set_new(doc, "signal", json_integer(15));
	json_object_set_new(doc, "match_expected", json_false());
	return doc;
}

/* A cancelled run neither passes nor fails: it closes nothing (its
 * command's failure, a --fixes run's, a re-run's all stay open) and opens
 * nothing, unless the policy's gate.cancelled_opens_failure says so. The
 * agent chooses when to cancel: nothing it cancels may count for it. */
static void test_gate_cancelled_run(void)
{
	char dir[] = "/tmp/airlock-gate-XXXXXX";
	struct store *store = NULL;
	struct error err = { 0 };
	struct gate_effect e;
	struct gate_failures open = { 0 };
	struct receipt_parsed p;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ_INT(store_open(dir, true, &store, &err), 0);
	json_t *failed = fake_receipt(1, "make", 2);
	ASSERT_EQ_INT(prepare(store, failed, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(e.opened);
	gate_effect_release(&e);

	/* The same command, cancelled: no close, no new failure. */
	json_t *cancelled = fake_cancelled(2, "make");
	ASSERT_EQ_INT(receipt_from_json(cancelled, &p, &err), 0);
	ASSERT_EQ_INT(p.receipt.status, RECEIPT_CANCELLED);
	receipt_parsed_release(&p);
	ASSERT_EQ_INT(prepare(store, cancelled, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(!e.opened);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(strstr(e.note, "cancelled") != NULL);
	gate_effect_release(&e);
	/* A fix attempt cancelled is not a fix, and needs no re-run. */
	json_t *fix = fake_cancelled(3, "make clean all");
	ASSERT_EQ_INT(prepare(store, fix, "/w", 1, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(!e.opened && !e.needs_rerun);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(strstr(e.note, "cancelled") != NULL && strstr(e.note, "stays open") != NULL);
	gate_effect_release(&e);
	/* The failed command's re-run, cancelled: it stays open. */
	json_object_set_new(cancelled, "id", json_integer(4));
	ASSERT_EQ_INT(prepare(store, cancelled, "/w", 0, 1, false, true, &e, &err), 0);
	ASSERT_TRUE(!e.opened);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(strstr(e.note, "cancelled") != NULL && strstr(e.note, "stays open") != NULL);
	gate_effect_release(&e);
	ASSERT_EQ_INT(gate_list_open(store, "/w", &open, &err), 0);
	ASSERT_EQ_INT(open.n, 1);
	ASSERT_EQ_INT(open.v[0].receipt, 1);
	gate_failures_release(&open);

	/* By policy, a cancelled run is a failure like a timeout. */
	json_t *other = fake_cancelled(5, "make other");
	ASSERT_EQ_INT(receipt_from_json(other, &p, &err), 0);
	ASSERT_EQ_INT(gate_prepare(store, &p.receipt, NULL, "/w", 0, 0, false, true, true, &e, &err),
		      0);
	receipt_parsed_release(&p);
	ASSERT_TRUE(e.opened);
	gate_effect_release(&e);
	ASSERT_EQ_INT(gate_list_open(store, "/w", &open, &err), 0);
	ASSERT_EQ_INT(open.n, 2);
	size_t k = open.v[0].receipt == 5 ? 0 : 1;
	ASSERT_EQ_INT(open.v[k].receipt, 5);
	ASSERT_EQ_STR(open.v[k].status, "cancelled");
	gate_failures_release(&open);
	/* ... and still closes nothing. */
	json_object_set_new(cancelled, "id", json_integer(6));
	ASSERT_EQ_INT(receipt_from_json(cancelled, &p, &err), 0);
	ASSERT_EQ_INT(gate_prepare(store, &p.receipt, NULL, "/w", 1, 0, false, true, true, &e, &err),
		      0);
	receipt_parsed_release(&p);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(!e.needs_rerun);
	gate_effect_release(&e);

	json_decref(failed);
	json_decref(cancelled);
	json_decref(fix);
	json_decref(other);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

static void test_gate_opens_and_closes(void)
{
	char dir[] = "/tmp/airlock-gate-XXXXXX";
	struct store *store = NULL;
	struct error err = { 0 };
	struct gate_effect e;
	struct gate_failures open = { 0 };

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ_INT(store_open(dir, true, &store, &err), 0);

	json_t *failed = fake_receipt(1, "make", 2);
	json_object_set_new(failed, "exec_path", json_string("/bin/sh"));
	json_object_set_new(failed, "exec_identity",
			    json_pack("{s:i, s:i, s:i, s:s}", "dev", 1, "ino", 2, "size", 3,
				      "sha256", "ab"));
	ASSERT_EQ_INT(prepare(store, failed, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(e.opened);
	gate_effect_release(&e);
	ASSERT_EQ_INT(gate_list_open(store, "/w", &open, &err), 0);
	ASSERT_EQ_INT(open.n, 1);
	ASSERT_EQ_STR(open.v[0].tail, "line1\nline2");
	gate_failures_release(&open);
	ASSERT_EQ_INT(gate_list_open(store, "/elsewhere", &open, &err), 0);
	ASSERT_EQ_INT(open.n, 0);
	gate_failures_release(&open);

	/* Unverified success of the same argv: nothing closes. */
	json_t *ok = fake_receipt(2, "make", 0);
	json_object_set(ok, "exec_path", json_object_get(failed, "exec_path"));
	json_object_set_new(ok, "exec_identity",
			    json_deep_copy(json_object_get(failed, "exec_identity")));
	ASSERT_EQ_INT(prepare(store, ok, "/w", 0, 0, false, false, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	gate_effect_release(&e);
	/* The same argv, but another executable (or one changed while it ran):
	 * not a rerun. */
	json_object_set_new(json_object_get(ok, "exec_identity"), "sha256", json_string("cd"));
	ASSERT_EQ_INT(prepare(store, ok, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	gate_effect_release(&e);
	json_object_set_new(json_object_get(ok, "exec_identity"), "sha256", json_string("ab"));
	json_object_set_new(json_object_get(ok, "exec_identity"), "changed_during_run", json_true());
	ASSERT_EQ_INT(prepare(store, ok, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	gate_effect_release(&e);
	json_object_del(json_object_get(ok, "exec_identity"), "changed_during_run");
	/* The same command, verified: a rerun, with or without --fixes. */
	ASSERT_EQ_INT(prepare(store, ok, "/w", 1, 0, true, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 1);
	ASSERT_EQ_STR(e.moves[0], "rerun");
	ASSERT_TRUE(!e.needs_rerun);
	gate_effect_release(&e);
	/* Any other --fixes command closes nothing itself: the re-run decides. */
	json_t *other = fake_receipt(3, "true", 0);
	ASSERT_EQ_INT(prepare(store, other, "/w", 1, 0, true, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(e.needs_rerun);
	ASSERT_TRUE(strstr(e.note, "trivial") != NULL && strstr(e.note, "re-run") != NULL);
	gate_effect_release(&e);
	json_t *fix = fake_receipt(4, "make clean all", 0);
	ASSERT_EQ_INT(prepare(store, fix, "/w", 1, 0, false, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(e.needs_rerun);
	gate_effect_release(&e);
	/* A re-run that is not the command exactly, or that fails, closes
	 * nothing and opens nothing. */
	ASSERT_EQ_INT(prepare(store, fix, "/w", 0, 1, false, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 0);
	ASSERT_TRUE(strstr(e.note, "not the command") != NULL);
	gate_effect_release(&e);
	json_t *again = fake_receipt(5, "make", 2);
	ASSERT_EQ_INT(prepare(store, again, "/w", 0, 1, false, true, &e, &err), 0);
	ASSERT_TRUE(!e.opened);
	ASSERT_EQ_INT(e.n_closes, 0);
	gate_effect_release(&e);
	/* The re-run that passes closes it, once, as "fixes". */
	json_object_set_new(ok, "id", json_integer(6));
	ASSERT_EQ_INT(prepare(store, ok, "/w", 0, 1, false, true, &e, &err), 0);
	ASSERT_EQ_INT(e.n_closes, 1);
	ASSERT_EQ_STR(e.moves[0], "fixes");
	/* A close stands on its closing receipt (the re-run): written before
	 * the commit. */
	json_object_set_new(ok, "schema", json_string(RECEIPT_SCHEMA));
	struct receipt_gate ok_gate;
	gate_effect_to_receipt(&e, &ok_gate);
	json_object_set_new(ok, "gate", receipt_gate_to_json(&ok_gate));
	char *ok_text = json_dumps(ok, JSON_COMPACT);
	ASSERT_EQ_INT(store_write_receipt(store, 6, ok_text, strlen(ok_text), &err), 0);
	free(ok_text);
	ASSERT_EQ_INT(gate_commit(store, &e, 6, &err), 0);
	gate_effect_release(&e);
	ASSERT_EQ_INT(gate_list_open(store, "/w", &open, &err), 0);
	ASSERT_EQ_INT(open.n, 0); /* the failed re-run (5) opened none */
	gate_failures_release(&open);
	struct gate_close_record record = { 0 };
	ASSERT_EQ_INT(gate_find_closed(store, 1, &record, &err), 0);
	ASSERT_EQ_STR(record.move, "fixes");
	ASSERT_EQ_INT(record.by_receipt, 6);
	/* The record holds; moved to another failure, or with another digest,
	 * it does not. */
	struct error why = { 0 };
	ASSERT_EQ_INT(gate_close_check(store, 1, &record, NULL, &why), 0);
	ASSERT_EQ_INT(gate_close_check(store, 2, &record, NULL, &why), -EBADMSG);
	json_t *record_doc = gate_close_record_to_json(&record);
	gate_close_record_release(&record);
	json_object_set_new(record_doc, "by_sha256", json_string("00"));
	ASSERT_EQ_INT(gate_close_record_from_json(record_doc, &record, &err), 0);
	ASSERT_EQ_INT(gate_close_check(store, 1, &record, NULL, &why), -EBADMSG);
	ASSERT_TRUE(strstr(why.msg, "digest") != NULL);
	gate_close_record_release(&record);
	json_object_set_new(record_doc, "schema", json_string("airlock.gate-close/1"));
	ASSERT_EQ_INT(gate_close_record_from_json(record_doc, &record, &err), 0);
	ASSERT_EQ_INT(gate_close_check(store, 1, &record, NULL, &why), -EBADMSG);
	gate_close_record_release(&record);
	/* A key of another type than airlock writes: refused by the reader. */
	json_object_set_new(record_doc, "by_receipt", json_string("6"));
	ASSERT_EQ_INT(gate_close_record_from_json(record_doc, &record, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "by_receipt") != NULL);
	gate_close_record_release(&record);
	err = (struct error){ 0 };
	json_decref(record_doc);
	json_decref(again);

	json_decref(failed);
	json_decref(ok);
	json_decref(other);
	json_decref(fix);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* A dry run that exited as expected is a success to the gate whatever its
 * verdict but DRY_RUN_FAILED; one whose verdict airlock never writes is
 * never taken for one. */
static void test_gate_dry_run_verdicts(void)
{
	static const struct {
		const char *verdict;
		bool opens;
	} cases[] = {
		{ "DRY_RUN_OK", false },      { "NO_EFFECT", false },
		{ "UNEXPECTED_PATH", false }, { "OUTSIDE_WRITE", false },
		{ "HOST_CODE", false },	      { "ATTRS_LOST", false },
		{ "LINK_GROUP", false },      { "RENAME_INCOMPLETE", false },
		{ "DRY_RUN_FAILED", true },   { "BOGUS", true },
		{ "dry_run_ok", true },	      { "", true },
	};
	char dir[] = "/tmp/airlock-gate-XXXXXX";
	struct store *store = NULL;
	struct error err = { 0 };
	struct gate_effect e;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ_INT(store_open(dir, true, &store, &err), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *receipt = fake_receipt(i + 1, "make", 0);
		json_object_set_new(receipt, "dryrun", json_pack("{s:s}", "verdict", cases[i].verdict));
		ASSERT_EQ_INT(prepare(store, receipt, "/w", 0, 0, false, true, &e, &err), 0);
		if (e.opened != cases[i].opens)
			printf("# verdict %s: opened %d\n", cases[i].verdict, e.opened);
		ASSERT_TRUE(e.opened == cases[i].opens);
		gate_effect_release(&e);
		json_decref(receipt);
	}
	/* Without a verdict, or not an object: not a dry run airlock wrote. */
	json_t *receipt = fake_receipt(20, "make", 0);
	json_object_set_new(receipt, "dryrun", json_object());
	ASSERT_EQ_INT(prepare(store, receipt, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(e.opened);
	gate_effect_release(&e);
	json_object_set_new(receipt, "dryrun", json_null()); /* null: not a dry run */
	ASSERT_EQ_INT(prepare(store, receipt, "/w", 0, 0, false, true, &e, &err), 0);
	ASSERT_TRUE(!e.opened);
	gate_effect_release(&e);
	json_decref(receipt);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* The host-code reports success_cases() tries: not checked, clean, and
 * each way of failing, with paths and reasons that are not UTF-8 (the
 * workspace's names are the agent's). */
static const struct hostsafety_report *success_host_code(size_t i)
{
	static struct hostsafety_item moved = { .path = (char *)".git/hooks/pre-commit",
						.kind = HOSTSAFETY_GIT_HOOK,
						.moved_to = (char *)"/s/quarantine/7/pre-commit" };
	static struct hostsafety_item stuck = { .path = (char *)".git/config",
						.kind = HOSTSAFETY_GIT_CONFIG,
						.move_errno = EACCES };
	static struct hostsafety_item bytes = { .path = (char *)"\xff\xfe/.git/hooks/post-merge",
						.kind = HOSTSAFETY_GIT_HOOK,
						.moved_to = (char *)"/s/quarantine/7/\xff" };
	static struct hostsafety_report reports[] = {
		{ .entries = 12 },
		{ .items = &moved, .n_items = 1, .entries = 3 },
		{ .items = &stuck, .n_items = 1 },
		{ .items = &bytes, .n_items = 1 },
		{ .incomplete = true, .reason = "too deep at a/b/c" },
		{ .incomplete = true, .reason = "cannot read \xc3\x28" },
		{ .items = &moved, .n_items = 1, .incomplete = true, .reason = "out of memory" },
	};
	return i == 0 ? NULL : i <= ARRAY_SIZE(reports) ? &reports[i - 1] : NULL;
}
#define SUCCESS_HOST_CODES 8

/* The dry-run summaries tried: none, null, each verdict airlock writes,
 * and what it never writes. */
static json_t *success_dryrun(size_t i)
{
	if (i == 0)
		return NULL;
	if (i == 1)
		return json_null();
	i -= 2;
	if (i < _DRYRUN_VERDICT_MAX) {
		const char *name = dryrun_verdict_name((enum dryrun_verdict)i);
		return name ? json_pack("{s:s, s:I}", "verdict", name, "changes", (json_int_t)i)
			    : json_object(); /* NONE: no verdict */
	}
	switch (i - _DRYRUN_VERDICT_MAX) {
	case 0:
		return json_pack("{s:s}", "verdict", "BOGUS");
	case 1:
		return json_pack("{s:s}", "verdict", "dry_run_ok");
	case 2:
		return json_pack("{s:i}", "verdict", 1);
	case 3:
		return json_pack("{s:n}", "verdict");
	case 4:
		return json_string("DRY_RUN_OK");
	default:
		return json_pack("[s]", "DRY_RUN_OK");
	}
}
#define SUCCESS_DRYRUNS (2 + _DRYRUN_VERDICT_MAX + 6)

/* gate_prepare() decides on the struct (gate_receipt_struct_succeeded()),
 * a close's verification on the stored document
 * (gate_receipt_succeeded()): for every receipt over the fields either
 * reads (status, match_expected, host_code, dryrun; the exit code, signal
 * and timeout beside them), the document receipt_to_json() makes gets the
 * struct's answer. */
static void test_gate_success_struct_and_document(void)
{
	static const struct {
		bool has_exit_code;
		int exit_code, signal;
		bool timed_out;
	} ends[] = { { true, 0, 0, false },
		     { true, 3, 0, false },
		     { false, 0, 9, true },
		     { false, 0, 15, false } };
	char *argv[] = { (char *)"make", NULL };
	static const int expected[] = { 0, 3 };
	struct receipt_sandbox sandbox = { .profile = "default" };
	const size_t total = (size_t)_RECEIPT_STATUS_MAX * 2 * ARRAY_SIZE(ends) *
			     SUCCESS_HOST_CODES * SUCCESS_DRYRUNS;
	size_t succeeded = 0;

	for (size_t k = 0; k < total; k++) {
		size_t x = k;
		size_t dr = x % SUCCESS_DRYRUNS;
		x /= SUCCESS_DRYRUNS;
		size_t hc = x % SUCCESS_HOST_CODES;
		x /= SUCCESS_HOST_CODES;
		size_t end = x % ARRAY_SIZE(ends);
		x /= ARRAY_SIZE(ends);
		bool match = x % 2;
		int status = (int)(x / 2);
		json_t *dryrun = success_dryrun(dr);
		struct receipt r = { .id = 1,
				     .source = "run",
				     .argv = argv,
				     .cwd = "/w",
				     .status = (enum receipt_status)status,
				     .has_exit_code = ends[end].has_exit_code,
				     .exit_code = ends[end].exit_code,
				     .signal = ends[end].signal,
				     .timed_out = ends[end].timed_out,
				     .match_expected = match,
				     .expected = expected,
				     .n_expected = 2,
				     .sandbox = &sandbox,
				     .host_code = success_host_code(hc),
				     .dryrun = dryrun };
		json_t *doc = receipt_to_json(&r);
		if (!doc)
			printf("# no document: status %d match %d end %zu host_code %zu dryrun %zu\n",
			       status, match, end, hc, dr);
		ASSERT_TRUE(doc != NULL);
		bool of_struct = gate_receipt_struct_succeeded(&r);
		bool of_doc = gate_receipt_succeeded(doc);
		if (of_struct != of_doc)
			printf("# status %d match %d end %zu host_code %zu dryrun %zu: "
			       "struct %d, document %d\n",
			       status, match, end, hc, dr, of_struct, of_doc);
		ASSERT_TRUE(of_struct == of_doc);
		json_decref(doc);
		json_decref(dryrun);
		succeeded += of_struct;
	}
	/* Both answers were given, each many times over. */
	ASSERT_TRUE(succeeded > 100 && succeeded < total - 100);
}

static void test_approver_signs_only_with_its_passphrase(void)
{
	char dir[] = "/tmp/airlock-approver-XXXXXX";
	struct store *store = NULL;
	struct error err = { 0 };
	struct approver a = { 0 }, again = { 0 };
	json_t *approval = NULL;

	if (access(APPROVER_SYSTEM_PATH, F_OK) == 0)
		return; /* a system approver takes precedence on this host */
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ_INT(store_open(dir, true, &store, &err), 0);
	ASSERT_EQ_INT(approver_enroll(store, false, "short", NULL, &a, &err), -EINVAL);
	ASSERT_EQ_INT(approver_enroll(store, false, "correct horse", NULL, &a, &err), 0);
	ASSERT_EQ_INT(approver_sign(&a, "wrong horse", "m", &approval, &err), -EACCES);
	ASSERT_EQ_INT(approver_sign(&a, "correct horse", "message", &approval, &err), 0);
	ASSERT_TRUE(approver_verify(&a, approval));
	json_object_set_new(approval, "message", json_string("messagf"));
	ASSERT_TRUE(!approver_verify(&a, approval));
	json_decref(approval);
	/* Replacing needs the current passphrase. */
	ASSERT_EQ_INT(approver_enroll(store, false, "new passphrase", NULL, &again, &err), -EEXIST);
	ASSERT_EQ_INT(approver_enroll(store, false, "new passphrase", "wrong horse", &again, &err),
		      -EACCES);
	ASSERT_EQ_INT(approver_enroll(store, false, "new passphrase", "correct horse", &again, &err),
		      0);
	approver_release(&a);
	approver_release(&again);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

static void test_ed25519_rfc8032_vector(void)
{
	/* RFC 8032, section 7.1, TEST 1 (empty message). */
	uint8_t seed[32], pub[32], sig[64];
	char hex[129];

	ASSERT_TRUE(hex_decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			       seed, 32));
	ASSERT_EQ_INT(ed25519_public_key(seed, pub), 0);
	hex_encode(pub, 32, hex);
	ASSERT_EQ_STR(hex, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
	ASSERT_EQ_INT(ed25519_sign(seed, "", 0, sig), 0);
	hex_encode(sig, 64, hex);
	ASSERT_EQ_STR(hex, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
			   "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
	ASSERT_TRUE(ed25519_verify(pub, "", 0, sig));
}

/* A signature made while ed25519_preload()'s thread may still be loading
 * libcrypto (run first: nothing has loaded it yet) is the same; a second
 * preload starts nothing, and waiting twice is waiting once. */
static void test_ed25519_preload(void)
{
	uint8_t seed[32], sig[64];
	char hex[129];

	ed25519_preload();
	ASSERT_TRUE(hex_decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			       seed, 32));
	ASSERT_EQ_INT(ed25519_sign(seed, "", 0, sig), 0);
	hex_encode(sig, 64, hex);
	ASSERT_EQ_STR(hex, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
			   "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
	ed25519_preload();
	ed25519_preload_wait();
	ed25519_preload_wait();
}

static void test_changeset_patterns(void)
{
	static const struct {
		const char *pattern, *path;
		bool match;
	} cases[] = {
		{ "src/**", "src/a/b.c", true },
		{ "src/**", "src", true },
		{ "**/*.c", "a/b/c.c", true },
		{ "**/*.c", "top.c", true },
		{ "**/*.c", "a/b/c.h", false },
		{ "*.c", "a/top.c", false },
		{ "build", "build/x.o", true },
		{ "build", "builder", false },
		{ "./build/", "build/x.o", true },
		{ "sr?/[a-c].c", "src/b.c", true },
		{ "sr?/[a-c].c", "src/d.c", false },
		{ "[!a]*", "bcd", true },
		{ "[!a]*", "abc", false },
		{ "a/**/z", "a/z", true },
		{ "a/**/z", "a/b/c/z", true },
		{ "a/**/z", "a/b/c/y", false },
		{ "[", "[", true },
		{ "*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
		{ "", "x", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool m = changeset_path_matches(cases[i].pattern, cases[i].path);
		if (m != cases[i].match)
			printf("# %s vs %s\n", cases[i].pattern, cases[i].path);
		ASSERT_TRUE(m == cases[i].match);
	}
}

/* A gate/open entry as airlock writes it reads typed; a legacy entry's nulls
 * and missing keys read as absent; a key of another type is refused, and the
 * document is kept as it was for printing. */
static void test_gate_failure_from_json(void)
{
	struct error err = { 0 };
	struct gate_failure f;
	json_t *doc = json_loads("{\"schema\":\"airlock.gate-failure/1\",\"receipt\":7,"
				 "\"scope\":\"/w\",\"argv\":[\"make\",\"all\"],\"shell\":null,"
				 "\"cwd\":\"/w\",\"status\":\"exited\",\"exit_code\":2,"
				 "\"expected_exits\":[0,3],\"tail\":\"x\",\"started_ns\":5,"
				 "\"risk\":4,\"rule\":\"r\"}",
				 0, NULL);

	ASSERT_TRUE(doc != NULL);
	ASSERT_EQ_INT(gate_failure_from_json(doc, &f, &err), 0);
	ASSERT_EQ_INT(f.receipt, 7);
	ASSERT_EQ_STR(f.scope, "/w");
	ASSERT_EQ_STR(f.argv[0], "make");
	ASSERT_EQ_STR(f.argv[1], "all");
	ASSERT_TRUE(f.argv[2] == NULL);
	ASSERT_TRUE(f.shell == NULL && f.source == NULL && f.damaged == NULL);
	ASSERT_TRUE(f.has_exit_code);
	ASSERT_EQ_INT(f.exit_code, 2);
	ASSERT_EQ_INT(f.n_expected_exits, 2);
	ASSERT_EQ_INT(f.expected_exits[1], 3);
	ASSERT_EQ_INT(f.started_ns, 5);
	ASSERT_EQ_INT(f.risk, 4);
	json_t *out = gate_failure_to_json(&f);
	ASSERT_TRUE(json_equal(out, doc));
	json_decref(out);
	gate_failure_release(&f);

	json_object_set_new(doc, "exit_code", json_null());
	json_object_del(doc, "risk");
	ASSERT_EQ_INT(gate_failure_from_json(doc, &f, &err), 0);
	ASSERT_TRUE(!f.has_exit_code);
	ASSERT_EQ_INT(f.risk, 0);
	gate_failure_release(&f);

	json_object_set_new(doc, "exit_code", json_string("2"));
	ASSERT_EQ_INT(gate_failure_from_json(doc, &f, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "exit_code") != NULL);
	gate_failure_release(&f);
	json_object_set_new(doc, "exit_code", json_integer(2));
	json_array_append_new(json_object_get(doc, "argv"), json_integer(1));
	ASSERT_EQ_INT(gate_failure_from_json(doc, &f, &err), -EBADMSG);
	ASSERT_TRUE(strstr(err.msg, "argv") != NULL);
	gate_failure_release(&f);
	json_decref(doc);
}

/* A close record made in memory is written by its one writer, every key in
 * the order docs/close-format.md gives, null where it has no value; the
 * reader gives its fields back. */
static void test_gate_close_record_writer(void)
{
	struct gate_close_record made = {
		.schema = GATE_CLOSE_SCHEMA,
		.receipt = 3,
		.scope = "/w",
		.move = "ack-approved",
		.failed_sha256_null = true,
		.reason = "flaky",
		.closed_at = "2026-12-05T00:00:00.000Z",
		.approval_by = "/s/approver.json",
		.public_key = "k",
		.message = "m",
		.signature = "s",
	};
	struct gate_close_record read;
	struct error err = { 0 };

	json_t *doc = gate_close_record_to_json(&made);
	ASSERT_TRUE(doc != NULL);
	char *text = json_dumps(doc, JSON_COMPACT);
	ASSERT_EQ_STR(text, "{\"schema\":\"airlock.gate-close/2\",\"receipt\":3,\"scope\":\"/w\","
			    "\"move\":\"ack-approved\",\"failed_sha256\":null,\"by_receipt\":null,"
			    "\"by_sha256\":null,\"reason\":\"flaky\",\"approver\":null,"
			    "\"closed_at\":\"2026-12-05T00:00:00.000Z\",\"approval\":{\"approver\":"
			    "\"/s/approver.json\",\"public_key\":\"k\",\"message\":\"m\","
			    "\"signature\":\"s\"}}");
	free(text);
	ASSERT_EQ_INT(gate_close_record_from_json(doc, &read, &err), 0);
	ASSERT_EQ_INT(read.receipt, 3);
	ASSERT_TRUE(read.failed_sha256 == NULL && read.failed_sha256_null);
	ASSERT_EQ_INT(read.by_receipt, 0);
	ASSERT_EQ_STR(read.move, "ack-approved");
	ASSERT_EQ_STR(read.approval_by, "/s/approver.json");
	ASSERT_EQ_STR(read.signature, "s");
	gate_close_record_release(&read);
	json_decref(doc);
}

RUN_TESTS(T_(test_ed25519_preload), T_(test_changeset_patterns),
	  T_(test_shell_plain_commands_and_operators), T_(test_shell_masking_forms),
	  T_(test_shell_not_plain), T_(test_shell_assignment_prefix_is_kept),
	  T_(test_shell_redirection_target_is_not_an_argument), T_(test_rules_flag_vetoes),
	  T_(test_rules_errors_name_the_key), T_(test_rules_read_only_attacks),
	  T_(test_rules_shell_reason_names_as_text), T_(test_rules_read_only_commands),
	  T_(test_rules_embedded_as_parsed), T_(test_gate_trivial_successes),
	  T_(test_gate_opens_and_closes), T_(test_gate_cancelled_run),
	  T_(test_gate_failure_from_json), T_(test_gate_close_record_writer),
	  T_(test_gate_dry_run_verdicts), T_(test_gate_success_struct_and_document),
	  T_(test_approver_signs_only_with_its_passphrase), T_(test_ed25519_rfc8032_vector))
