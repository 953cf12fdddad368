/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/strv.h"
#include "core/snapshot/apply.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/run/env.h"
#include "core/host/hostview.h"
#include "core/run/job.h"
#include "basic/sha256.h"
#include "core/policy/netallow.h"
#include "core/policy/policy.h"
#include "core/policy/policy_embed.h"
#include "core/record/receipt.h"
#include "core/permit/record.h"
#include "core/store/exedigest.h"
#include "core/store/store.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "core/fleet/fleetlog.h"
#include "core/store/ledger.h"
#include "harness.h"

static void test_default_policy_loads(void)
{
	struct policy *p = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_load_default(&p, &err), 0);
	ASSERT_EQ_INT(p->max_timeout_ms, 60000);
	ASSERT_EQ_INT(p->default_timeout_ms, 30000);
	ASSERT_EQ_INT(p->keep_bytes, 8192);
	ASSERT_EQ_INT(p->kill_after_ms, 2000);
	ASSERT_EQ_INT(p->spill_max_bytes, 64 << 20);
	ASSERT_EQ_INT(p->max_argv_bytes, 256 << 10);
	ASSERT_EQ_INT(p->open_files, 1024);
	ASSERT_EQ_INT(p->file_size_bytes, 4ULL << 30);
	ASSERT_TRUE(p->fsync_receipts);
	ASSERT_TRUE(strv_contains(p->deny_argv0, "sudo"));
	ASSERT_TRUE(strv_contains(p->deny_argv0, "pip3"));
	ASSERT_TRUE(strv_contains(p->env_allow, "PATH"));
	ASSERT_TRUE(strv_contains(p->env_set, "CI=1"));
	policy_free(p);
}

static void test_policy_partial_document_keeps_floor(void)
{
	static const char doc[] =
		"{\"schema\":\"airlock.policy/1\",\"timeout\":{\"max_ms\":5000,\"default_ms\":1000}}";
	struct policy *p = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_parse(doc, strlen(doc), "t", &p, &err), 0);
	ASSERT_EQ_INT(p->max_timeout_ms, 5000);
	ASSERT_EQ_INT(p->keep_bytes, 8192);
	ASSERT_TRUE(strv_contains(p->deny_argv0, "sudo"));
	ASSERT_TRUE(strv_contains(p->env_allow, "PATH"));
	policy_free(p);
}

static void test_policy_errors_name_the_key(void)
{
	static const struct {
		const char *doc, *needle;
	} cases[] = {
		{ "{\"schema\":\"airlock.policy/1\",\"bogus\":1}", "'bogus'" },
		{ "{\"schema\":\"airlock.policy/1\",\"timeout\":{\"max\":1}}", "'timeout.max'" },
		{ "{\"schema\":\"airlock.policy/1\",\"timeout\":{\"max_ms\":\"x\"}}",
		  "'timeout.max_ms'" },
		{ "{\"schema\":\"airlock.policy/2\"}", "'schema'" },
		{ "{\"schema\":\"airlock.policy/1\",\"env\":{\"allow\":[\"A=B\"]}}", "'env.allow'" },
		{ "{\"schema\":\"airlock.policy/1\",\"deny_argv0\":[1]}", "'deny_argv0[0]'" },
		{ "{\"schema\":\"airlock.policy/1\",\"timeout\":{\"default_ms\":90000}}", "exceeds" },
		{ "[1]", "object" },
		{ "{", "invalid JSON" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy *p = NULL;
		struct error err = { 0 };
		ASSERT_TRUE(policy_parse(cases[i].doc, strlen(cases[i].doc), "t", &p, &err) < 0);
		ASSERT_TRUE(p == NULL);
		if (!strstr(err.msg, cases[i].needle)) {
			printf("# case %zu: '%s' lacks '%s'\n", i, err.msg, cases[i].needle);
			ASSERT_TRUE(false);
		}
	}
}

static void test_policy_empty_list_clears_default(void)
{
	static const char doc[] = "{\"schema\":\"airlock.policy/1\",\"deny_argv0\":[]}";
	struct policy *p = NULL;
	struct error err = { 0 };
	struct policy_denial d;

	ASSERT_EQ_INT(policy_parse(doc, strlen(doc), "t", &p, &err), 0);
	ASSERT_TRUE(!policy_denies_argv0(p, "sudo", &d));
	policy_free(p);
}

/* issue 22: the built-in policy, built as jansson values at build time with
 * its digest, is the document itself: the digest of its bytes, and the
 * fields of the document parsed as a file's. */
static void test_default_policy_compact_is_the_document(void)
{
	struct policy *builtin = NULL, *parsed = NULL;
	struct error err = { 0 };
	char hex[SHA256_HEX_SIZE];
	char *copy = strdup(policy_default_json);
	struct policy_widening w[POLICY_MAX_WIDENINGS];

	ASSERT_TRUE(copy != NULL);
	sha256_hex(policy_default_json, strlen(policy_default_json), hex);
	ASSERT_EQ_INT(policy_load_default(&builtin, &err), 0);
	ASSERT_EQ_STR(builtin->sha256, hex);
	ASSERT_EQ_STR(builtin->origin, "default");
	ASSERT_EQ_INT(policy_parse(copy, strlen(copy), "copy", &parsed, &err), 0);
	ASSERT_EQ_STR(parsed->sha256, hex);
	ASSERT_EQ_INT(policy_widenings(builtin, parsed, w, POLICY_MAX_WIDENINGS), 0);
	ASSERT_EQ_INT(policy_widenings(parsed, builtin, w, POLICY_MAX_WIDENINGS), 0);
	char **const a[] = { builtin->deny_argv0, builtin->env_allow, builtin->secret_patterns,
			     builtin->env_set,	  builtin->hide,      builtin->home_allow,
			     builtin->read_only,  builtin->writable,  builtin->gate_trivial };
	char **const b[] = { parsed->deny_argv0, parsed->env_allow, parsed->secret_patterns,
			     parsed->env_set,	 parsed->hide,	    parsed->home_allow,
			     parsed->read_only,	 parsed->writable,  parsed->gate_trivial };
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		ASSERT_EQ_INT(strv_length(a[i]), strv_length(b[i]));
		for (size_t k = 0; a[i] && a[i][k]; k++)
			ASSERT_EQ_STR(a[i][k], b[i][k]);
	}
	ASSERT_TRUE(builtin->keep_bytes == parsed->keep_bytes &&
		    builtin->spill_max_bytes == parsed->spill_max_bytes &&
		    builtin->max_argv_bytes == parsed->max_argv_bytes &&
		    builtin->default_timeout_ms == parsed->default_timeout_ms &&
		    builtin->kill_after_ms == parsed->kill_after_ms &&
		    builtin->tmp_bytes == parsed->tmp_bytes &&
		    builtin->fsync_receipts == parsed->fsync_receipts &&
		    builtin->home_hidden == parsed->home_hidden &&
		    builtin->hooks_unknown_opens_failure == parsed->hooks_unknown_opens_failure);
	policy_free(builtin);
	policy_free(parsed);
	free(copy);
}

/* issue 22: the built-in policy is compiled in as struct policy values
 * (scripts/embed-policy.py); they are the document parsed by policy.c's
 * parser over an empty policy, every field of struct policy compared (a
 * field added to it belongs here). The strings lists compare NULL and
 * empty apart. */
static void policy_assert_strv_eq(char **a, char **b)
{
	ASSERT_TRUE((a == NULL) == (b == NULL));
	ASSERT_EQ_INT(strv_length(a), strv_length(b));
	for (size_t k = 0; a && a[k]; k++)
		ASSERT_EQ_STR(a[k], b[k]);
}

/* Every field of a and b, the strings lists by value (NULL and empty
 * apart), and the widenings table seeing no difference either way. */
static void policy_assert_eq(const struct policy *builtin, const struct policy *parsed)
{
	ASSERT_EQ_STR(builtin->sha256, parsed->sha256);
	policy_assert_strv_eq(builtin->deny_argv0, parsed->deny_argv0);
	policy_assert_strv_eq(builtin->env_allow, parsed->env_allow);
	policy_assert_strv_eq(builtin->secret_patterns, parsed->secret_patterns);
	policy_assert_strv_eq(builtin->env_set, parsed->env_set);
	policy_assert_strv_eq(builtin->hide, parsed->hide);
	policy_assert_strv_eq(builtin->home_allow, parsed->home_allow);
	policy_assert_strv_eq(builtin->read_only, parsed->read_only);
	policy_assert_strv_eq(builtin->writable, parsed->writable);
	policy_assert_strv_eq(builtin->gate_trivial, parsed->gate_trivial);
	ASSERT_TRUE(builtin->default_timeout_ms == parsed->default_timeout_ms);
	ASSERT_TRUE(builtin->max_timeout_ms == parsed->max_timeout_ms);
	ASSERT_TRUE(builtin->kill_after_ms == parsed->kill_after_ms);
	ASSERT_TRUE(builtin->keep_bytes == parsed->keep_bytes);
	ASSERT_TRUE(builtin->spill_max_bytes == parsed->spill_max_bytes);
	ASSERT_TRUE(builtin->max_argv_bytes == parsed->max_argv_bytes);
	ASSERT_TRUE(builtin->core_bytes == parsed->core_bytes);
	ASSERT_TRUE(builtin->open_files == parsed->open_files);
	ASSERT_TRUE(builtin->file_size_bytes == parsed->file_size_bytes);
	ASSERT_TRUE(builtin->processes == parsed->processes);
	ASSERT_TRUE(builtin->memory_bytes == parsed->memory_bytes);
	ASSERT_TRUE(builtin->cpu_seconds == parsed->cpu_seconds);
	ASSERT_TRUE(builtin->fsync_receipts == parsed->fsync_receipts);
	ASSERT_TRUE(builtin->sandbox_enabled == parsed->sandbox_enabled);
	ASSERT_TRUE(builtin->home_hidden == parsed->home_hidden);
	ASSERT_TRUE(builtin->tmp_bytes == parsed->tmp_bytes);
	ASSERT_TRUE(builtin->share_net == parsed->share_net);
	ASSERT_TRUE(builtin->net_allowlist == parsed->net_allowlist);
	policy_assert_strv_eq(builtin->net_allow, parsed->net_allow);
	policy_assert_strv_eq(builtin->net_deny, parsed->net_deny);
	ASSERT_TRUE(builtin->hooks_unknown_opens_failure == parsed->hooks_unknown_opens_failure);
	ASSERT_TRUE(builtin->gate_cancelled_opens_failure == parsed->gate_cancelled_opens_failure);
	/* The last field compared is the struct's last: one appended to it
	 * fails here until it is compared above. */
	ASSERT_TRUE(sizeof(struct policy) <=
		    offsetof(struct policy, gate_cancelled_opens_failure) + sizeof(uint64_t));
	/* the widenings table sees no difference either way */
	struct policy_widening w[POLICY_MAX_WIDENINGS];
	ASSERT_EQ_INT(policy_widenings(builtin, parsed, w, POLICY_MAX_WIDENINGS), 0);
	ASSERT_EQ_INT(policy_widenings(parsed, builtin, w, POLICY_MAX_WIDENINGS), 0);
}

static void test_default_policy_struct_is_the_parsed_document(void)
{
	struct policy *builtin = NULL, *parsed = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_load_default(&builtin, &err), 0);
	ASSERT_EQ_INT(policy_parse_alone(policy_default_json, strlen(policy_default_json), &parsed,
					 &err),
		      0);
	policy_assert_eq(builtin, parsed);
	/* The one read-only built-in (policy_builtin(), what a session without
	 * --policy hands out) is the same document, under the same name. */
	policy_assert_eq(policy_builtin(), parsed);
	ASSERT_EQ_STR(policy_builtin()->origin, builtin->origin);
	ASSERT_TRUE(policy_builtin() == policy_builtin());
	policy_free(builtin);
	policy_free(parsed);
}

static void test_policy_denials(void)
{
	struct policy *p = NULL;
	struct error err = { 0 };
	struct policy_denial d;

	ASSERT_EQ_INT(policy_load_default(&p, &err), 0);
	ASSERT_TRUE(policy_denies_argv0(p, "/usr/bin/sudo", &d));
	ASSERT_EQ_STR(d.rule, "deny_argv0");
	ASSERT_EQ_STR(d.value, "sudo");
	ASSERT_TRUE(policy_denies_argv0(p, "CURL", &d));
	ASSERT_TRUE(!policy_denies_argv0(p, "sudoku", &d));
	uint64_t grace = 7, asked;
	ASSERT_TRUE(policy_denies_timeout(p, 60001, NULL, &grace, &d));
	ASSERT_EQ_STR(d.rule, "max_timeout");
	ASSERT_TRUE(grace == 7);
	/* the policy's grace (2 s) is cut to what the timeout leaves */
	ASSERT_TRUE(!policy_denies_timeout(p, 60000, NULL, &grace, &d));
	ASSERT_TRUE(grace == 0);
	ASSERT_TRUE(!policy_denies_timeout(p, 59000, NULL, &grace, &d));
	ASSERT_TRUE(grace == 1000);
	ASSERT_TRUE(!policy_denies_timeout(p, 30000, NULL, &grace, &d));
	ASSERT_TRUE(grace == 2000);
	/* a grace the caller asked for fits whole, or is denied */
	asked = 30000;
	ASSERT_TRUE(policy_denies_timeout(p, 50000, &asked, &grace, &d));
	ASSERT_EQ_STR(d.rule, "max_timeout");
	ASSERT_EQ_STR(d.value, "80000");
	asked = 10000;
	ASSERT_TRUE(!policy_denies_timeout(p, 50000, &asked, &grace, &d));
	ASSERT_TRUE(grace == 10000);
	asked = UINT64_MAX;
	ASSERT_TRUE(policy_denies_timeout(p, 1, &asked, &grace, &d));
	ASSERT_EQ_STR(d.value, "18446744073709551615");
	ASSERT_TRUE(policy_is_secret_name(p, "GITHUB_TOKEN"));
	ASSERT_TRUE(policy_is_secret_name(p, "aws_secret_access_key"));
	ASSERT_TRUE(policy_is_secret_name(p, "SSH_AUTH_SOCK"));
	ASSERT_TRUE(!policy_is_secret_name(p, "PATH"));
	policy_free(p);
}

/* policy_widenings(): each field widens one way only, named as the document
 * spells it; narrowing, or a field that gives no reach, is never counted. */
static void test_policy_widenings(void)
{
	static const struct {
		const char *doc; /* the object's members after "schema" */
		const char *field; /* NULL: nothing widens */
		bool never;
	} cases[] = {
		{ "", NULL, false },
		{ ",\"deny_argv0\":[\"SUDO\",\"su\",\"doas\",\"ssh\",\"scp\",\"sftp\",\"curl\",\"wget\",\"dd\",\"mkfs\",\"reboot\",\"shutdown\",\"halt\",\"poweroff\",\"pip\",\"pip3\",\"nc\"]",
		  NULL, false },
		{ ",\"deny_argv0\":[\"sudo\"]", "deny_argv0", false },
		{ ",\"timeout\":{\"default_ms\":1000,\"max_ms\":2000,\"kill_after_ms\":10}", NULL,
		  false },
		{ ",\"timeout\":{\"max_ms\":60001}", "timeout.max_ms", false },
		{ ",\"timeout\":{\"kill_after_ms\":2001}", "timeout.kill_after_ms", false },
		{ ",\"env\":{\"allow\":[\"PATH\"],\"set\":{\"LD_PRELOAD\":\"x\"}}", NULL, false },
		{ ",\"env\":{\"allow\":[\"PATH\",\"AWS_PROFILE\"]}", "env.allow", false },
		{ ",\"env\":{\"secret_patterns\":[]}", "env.secret_patterns", false },
		{ ",\"output\":{\"keep_bytes\":1048576},\"receipts\":{\"fsync\":false},\"gate\":{\"trivial\":[]}",
		  NULL, false },
		{ ",\"limits\":{\"processes\":64,\"memory_bytes\":16777216}", NULL, false },
		{ ",\"limits\":{\"open_files\":1025}", "limits.open_files", false },
		{ ",\"limits\":{\"core_bytes\":1}", "limits.core_bytes", false },
		{ ",\"sandbox\":{\"profile\":\"none\"}", "sandbox.profile", true },
		{ ",\"sandbox\":{\"profile\":\"default\",\"net\":\"loopback\",\"home\":\"hidden\",\"home_allow\":[\"~/.cache\"]}",
		  NULL, false },
		{ ",\"sandbox\":{\"net\":\"host\"}", "sandbox.net", false },
		{ ",\"sandbox\":{\"hide\":[\"~/.ssh\"]}", "sandbox.hide", false },
		{ ",\"sandbox\":{\"home_allow\":[\"/home\"]}", "sandbox.home_allow", false },
		{ ",\"sandbox\":{\"read_only\":[\".git/hooks\",\".git/config\",\".envrc\"]}",
		  "sandbox.read_only", false },
		{ ",\"sandbox\":{\"read_only\":[\".git/hooks\",\".git/config\",\".airlock\",\".envrc\",\"x\"]}",
		  NULL, false },
		{ ",\"sandbox\":{\"tmp_bytes\":268435457}", "sandbox.tmp_bytes", false },
		{ ",\"sandbox\":{\"writable\":[\"/srv\"]}", "sandbox.writable", false },
		/* issue 25: the allowlist form widens by its allow patterns only */
		{ ",\"sandbox\":{\"net\":{}}", NULL, false },
		{ ",\"sandbox\":{\"net\":{\"allow\":[],\"deny\":[\"*.example.org\"]}}", NULL, false },
		{ ",\"sandbox\":{\"net\":{\"allow\":[\"registry.npmjs.org\"]}}",
		  "sandbox.net.allow", false },
	};
	struct policy *base = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_load_default(&base, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char doc[2048];
		struct policy *p = NULL;
		struct policy_widening w[POLICY_MAX_WIDENINGS];
		snprintf(doc, sizeof(doc), "{\"schema\":\"airlock.policy/1\"%s}", cases[i].doc);
		ASSERT_EQ_INT(policy_parse(doc, strlen(doc), "t", &p, &err), 0);
		size_t n = policy_widenings(p, base, w, ARRAY_SIZE(w));
		if (!cases[i].field) {
			ASSERT_EQ_INT((int)n, 0);
		} else {
			ASSERT_EQ_INT((int)n, 1);
			ASSERT_EQ_STR(w[0].field, cases[i].field);
			ASSERT_TRUE(w[0].never == cases[i].never);
			ASSERT_TRUE(w[0].detail[0] != '\0');
		}
		policy_free(p);
	}
	/* Every widening is counted, in document order; max bounds what is filled. */
	static const char all[] =
		"{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"writable\":[\"/srv\"],\"net\":\"host\"},\"limits\":{\"cpu_seconds\":301}}";
	struct policy *p = NULL;
	struct policy_widening one[1];
	ASSERT_EQ_INT(policy_parse(all, strlen(all), "t", &p, &err), 0);
	ASSERT_EQ_INT((int)policy_widenings(p, base, one, 1), 3);
	ASSERT_EQ_STR(one[0].field, "limits.cpu_seconds");
	ASSERT_EQ_STR(one[0].detail, "301, built-in 300");
	policy_free(p);
	policy_free(base);
}

static void test_job_seed_format(void)
{
	static const char doc[] =
		"{\"job_id\":\"j1\",\"argv\":[\"python3\",\"-m\",\"compileall\"],\"cwd\":\"/tmp\","
		"\"timeout_sec\":30,\"expected_exit\":0,\"env_allowlist\":[\"PATH\",\"HOME\"],"
		"\"rationale\":\"compile\"}";
	struct run_request req;
	struct error err = { 0 };

	run_request_init(&req);
	ASSERT_EQ_INT(job_parse(doc, strlen(doc), &req, &err), 0);
	ASSERT_EQ_STR(req.job_id, "j1");
	ASSERT_EQ_INT(strv_length(req.argv), 3);
	ASSERT_EQ_STR(req.cwd, "/tmp");
	ASSERT_EQ_INT(req.timeout_ms, 30000);
	ASSERT_EQ_INT(req.n_expected, 1);
	ASSERT_EQ_INT(req.expected[0], 0);
	ASSERT_TRUE(req.env_replace);
	ASSERT_EQ_STR(req.rationale, "compile");
	ASSERT_EQ_STR(req.source, "job");
	ASSERT_EQ_INT(strlen(req.job_sha256), 64);
	run_request_release(&req);
}

/* A fractional timeout_sec is rounded up to the millisecond, as ceil() did
 * (the values computed with glibc's ceil()). */
static void test_job_timeout_sec_rounds_up(void)
{
	static const struct {
		const char *sec;
		uint64_t ms;
	} cases[] = {
		{ "0.0001", 1 },
		{ "0.001", 1 },
		{ "0.0015", 2 },
		{ "1.5", 1500 },
		{ "2", 2000 },
		{ "0.1", 100 },
		{ "0.7", 700 },
		{ "1.0005", 1001 },
		{ "123.4567891", 123457 },
		{ "1e-300", 1 },
		{ "31535999.999", 31535999999 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char doc[128];
		struct run_request req;
		struct error err = { 0 };

		snprintf(doc, sizeof(doc), "{\"argv\":[\"ls\"],\"timeout_sec\":%s}", cases[i].sec);
		run_request_init(&req);
		ASSERT_EQ_INT(job_parse(doc, strlen(doc), &req, &err), 0);
		ASSERT_TRUE(req.timeout_ms == cases[i].ms);
		run_request_release(&req);
	}
}

static void test_job_codex_format(void)
{
	static const char doc[] = "{\"command\":[\"ls\",\"-l\"],\"workdir\":\"/\",\"timeout_ms\":1500,"
				  "\"justification\":\"look\",\"with_escalated_permissions\":false}";
	struct run_request req;
	struct error err = { 0 };

	run_request_init(&req);
	ASSERT_EQ_INT(job_parse(doc, strlen(doc), &req, &err), 0);
	ASSERT_EQ_STR(req.argv[1], "-l");
	ASSERT_EQ_STR(req.cwd, "/");
	ASSERT_EQ_INT(req.timeout_ms, 1500);
	ASSERT_EQ_STR(req.rationale, "look");
	run_request_release(&req);
}

static void test_job_errors_name_the_key(void)
{
	static const struct {
		const char *doc, *needle;
	} cases[] = {
		{ "{\"argv\":[\"ls\"],\"extra\":1}", "'extra'" },
		{ "{\"argv\":[]}", "'argv' is empty" },
		{ "{\"argv\":[\"\"]}", "'argv[0]' is an empty string" },
		{ "{\"argv\":\"ls -l\"}", "'argv' must be an array" },
		{ "{\"argv\":[\"ls\",3]}", "'argv[1]' must be a string" },
		{ "{\"argv\":[\"ls\"],\"cwd\":\"rel\"}", "'cwd' must be an absolute path" },
		{ "{\"argv\":[\"ls\"],\"timeout_sec\":-1}", "'timeout_sec'" },
		{ "{\"argv\":[\"ls\"],\"timeout_sec\":\"5\"}", "'timeout_sec' must be a number" },
		{ "{\"argv\":[\"ls\"],\"expected_exit\":256}", "'expected_exit'" },
		{ "{\"argv\":[\"ls\"],\"command\":[\"ls\"]}", "'argv' and 'command'" },
		{ "{\"cwd\":\"/\"}", "missing 'argv'" },
		{ "{\"argv\":[\"ls\"],\"argv\":[\"ls\"]}", "duplicate" },
		{ "{\"argv\":[\"a\\u0000b\"]}", "invalid JSON" },
		{ "{\"argv\":[\"ls\"],\"timeout_ms\":99999999999999999999}", "invalid JSON" },
		{ "{\"argv\":[\"ls\"],\"with_escalated_permissions\":true}", "not supported" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run_request req;
		struct error err = { 0 };
		run_request_init(&req);
		ASSERT_TRUE(job_parse(cases[i].doc, strlen(cases[i].doc), &req, &err) < 0);
		run_request_release(&req);
		if (!strstr(err.msg, cases[i].needle)) {
			printf("# case %zu: '%s' lacks '%s'\n", i, err.msg, cases[i].needle);
			ASSERT_TRUE(false);
		}
	}
}

static void test_env_allowlist_and_fixed_settings(void)
{
	struct policy *p = NULL;
	struct error err = { 0 };
	struct run_request req;
	struct run_env env;
	struct policy_denial d;
	char *environ_[] = { (char *)"PATH=/bin", (char *)"HOME=", (char *)"GITHUB_TOKEN=x",
			     (char *)"FOO=bar",	  (char *)"CI=0",  NULL };

	ASSERT_EQ_INT(policy_load_default(&p, &err), 0);
	run_request_init(&req);
	strv_push(&req.env_allow, "FOO");
	ASSERT_EQ_INT(run_env_build(p, &req, environ_, "7", &env, &d, &err), 0);
	ASSERT_TRUE(strv_contains(env.envp, "PATH=/bin"));
	ASSERT_TRUE(strv_contains(env.envp, "FOO=bar"));
	ASSERT_TRUE(strv_contains(env.envp, "CI=1"));
	ASSERT_TRUE(strv_contains(env.envp, "AIRLOCK_RECEIPT_ID=7"));
	ASSERT_TRUE(!strv_contains(env.keys, "HOME")); /* empty: not passed, like the seed */
	ASSERT_TRUE(!strv_contains(env.keys, "GITHUB_TOKEN"));
	for (size_t i = 0; env.envp[i]; i++)
		ASSERT_TRUE(strstr(env.envp[i], "CI=0") == NULL);
	run_env_release(&env);
	run_request_release(&req);
	policy_free(p);
}

static void test_env_refuses_secret_unless_forced(void)
{
	struct policy *p = NULL;
	struct error err = { 0 };
	struct run_request req;
	struct run_env env;
	struct policy_denial d;
	char *environ_[] = { (char *)"GITHUB_TOKEN=x", NULL };

	ASSERT_EQ_INT(policy_load_default(&p, &err), 0);
	run_request_init(&req);
	strv_push(&req.env_allow, "GITHUB_TOKEN");
	ASSERT_EQ_INT(run_env_build(p, &req, environ_, "1", &env, &d, &err), 1);
	ASSERT_EQ_STR(d.rule, "secret_env");
	ASSERT_EQ_STR(d.value, "GITHUB_TOKEN");
	strv_push(&req.env_force, "GITHUB_TOKEN");
	ASSERT_EQ_INT(run_env_build(p, &req, environ_, "1", &env, &d, &err), 0);
	ASSERT_TRUE(strv_contains(env.envp, "GITHUB_TOKEN=x"));
	run_env_release(&env);
	run_request_release(&req);
	policy_free(p);
}

static void make_state_dir(char *dir)
{
	strcpy(dir, "/tmp/airlock-unit-XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

static void remove_state_dir(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		abort();
}

static void test_store_ids_increase_and_skip_existing(void)
{
	char dir[64];
	struct store *s = NULL;
	struct error err = { 0 };
	uint64_t a, b, c;

	make_state_dir(dir);
	ASSERT_EQ_INT(store_open(dir, true, &s, &err), 0);
	ASSERT_EQ_INT(store_allocate_id(s, &a, &err), 0);
	ASSERT_EQ_INT(store_allocate_id(s, &b, &err), 0);
	ASSERT_EQ_INT(a, 1);
	ASSERT_EQ_INT(b, 2);
	/* A counter that lost updates (crash) never reissues a written id. */
	ASSERT_EQ_INT(store_write_receipt(s, 3, "{}\n", 3, &err), 0);
	ASSERT_EQ_INT(store_write_receipt(s, 3, "{}\n", 3, &err), -EEXIST);
	ASSERT_EQ_INT(store_allocate_id(s, &c, &err), 0);
	ASSERT_EQ_INT(c, 4);
	int fd = openat(store_dir_fd(s), "seq", O_WRONLY | O_TRUNC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, "garbage", 7), 7);
	close(fd);
	ASSERT_EQ_INT(store_allocate_id(s, &c, &err), 0);
	ASSERT_TRUE(c != 3);
	store_free(s);
	remove_state_dir(dir);
}

/* The names in dir_fd's directory other than . and .., joined by ' '. */
static void list_dir(int dir_fd, char *ret, size_t size)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	ret[0] = '\0';
	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
			snprintf(ret + strlen(ret), size - strlen(ret), "%s%s", ret[0] ? " " : "",
				 de->d_name);
	closedir(d);
}

/* A receipt's cache made ahead (store_prepare_receipt(), while the command
 * runs) ends as the committed bytes under receipts/<id>.json, as one written
 * at the commit; one never committed, or prepared for another id, leaves no
 * file behind; the commit never replaces a file already there. */
static void test_store_prepared_receipt_cache(void)
{
	char dir[64], names[512];
	struct store *s = NULL;
	struct error err = { 0 };
	cleanup_free char *text = NULL;
	size_t n;

	make_state_dir(dir);
	ASSERT_EQ_INT(store_open(dir, true, &s, &err), 0);
	int rfd = store_receipts_fd(s);
	store_prepare_receipt(s, 1);
	ASSERT_EQ_INT(store_write_receipt(s, 1, "{\"id\":1}\n", 9, &err), 0);
	ASSERT_EQ_INT(file_read_capped(rfd, "1.json", 1024, &text, &n, &err), 0);
	ASSERT_TRUE(n == 9 && memcmp(text, "{\"id\":1}\n", 9) == 0);
	list_dir(rfd, names, sizeof(names));
	ASSERT_TRUE(strcmp(names, "1.json .pre") == 0 || strcmp(names, ".pre 1.json") == 0);
	int pre = openat(rfd, ".pre", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(pre >= 0);
	list_dir(pre, names, sizeof(names));
	ASSERT_EQ_STR(names, "");
	/* Prepared for 2, committed 3: 3 as usual, 2's temporary gone with the store. */
	store_prepare_receipt(s, 2);
	ASSERT_EQ_INT(store_write_receipt(s, 3, "{}\n", 3, &err), 0);
	/* Prepared twice: the first is let go. */
	store_prepare_receipt(s, 4);
	store_prepare_receipt(s, 5);
	/* Never over a file already there, prepared or not. */
	int fd = openat(rfd, "5.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, "x", 1), 1);
	close(fd);
	ASSERT_EQ_INT(store_write_receipt(s, 5, "{}\n", 3, &err), -EEXIST);
	store_free(s);
	s = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(dfd >= 0);
	int r2 = openat(dfd, "receipts", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(r2 >= 0);
	list_dir(r2, names, sizeof(names));
	/* readdir's order is the file system's: each name looked up. */
	static const char *const want[] = { "1.json", "3.json", "5.json", ".pre" };
	int listed = 0, known = 0;
	for (char *tok = strtok(names, " "); tok; tok = strtok(NULL, " ")) {
		listed++;
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			known += strcmp(tok, want[i]) == 0;
	}
	ASSERT_EQ_INT(listed, 4);
	ASSERT_EQ_INT(known, 4);
	list_dir(pre, names, sizeof(names)); /* every made-ahead file let go */
	ASSERT_EQ_STR(names, "");
	close(pre);
	free(TAKE_PTR(text));
	ASSERT_EQ_INT(file_read_capped(r2, "5.json", 1024, &text, &n, &err), 0);
	ASSERT_TRUE(n == 1 && text[0] == 'x');
	close(r2);
	close(dfd);
	remove_state_dir(dir);
}

static void test_exedigest_fs_allowlist(void)
{
	/* The local kernel's own, tried here: ext2/3/4 (one magic). */
	ASSERT_TRUE(exedigest_fs_cacheable(EXT4_SUPER_MAGIC));
	ASSERT_TRUE(exedigest_fs_cacheable(EXT2_SUPER_MAGIC));
	/* btrfs: a snapshot keeps inode and times, a deleted subvolume's
	 * device number is reused; xfs: not tried. */
	ASSERT_TRUE(!exedigest_fs_cacheable(BTRFS_SUPER_MAGIC));
	ASSERT_TRUE(!exedigest_fs_cacheable(XFS_SUPER_MAGIC));
	/* A server's or a lower layer's times, or none kept for a mapping's
	 * writes: FUSE, NFS, 9p, CIFS and SMB2, overlay, tmpfs, and the rest. */
	static const int64_t refused[] = {
		FUSE_SUPER_MAGIC, NFS_SUPER_MAGIC,	 V9FS_MAGIC,  CIFS_SUPER_MAGIC,
		SMB2_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC, TMPFS_MAGIC, RAMFS_MAGIC,
		SQUASHFS_MAGIC,	  PROC_SUPER_MAGIC,	 0,	      -1
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ASSERT_TRUE(!exedigest_fs_cacheable(refused[i]));
}

static struct exedigest_entry exedigest_test_entry(uint64_t ino)
{
	struct exedigest_entry e = { .key = { .dev = 65024,
					      .ino = ino,
					      .size = 4 << 20,
					      .mnt_id = 0x100000000ULL + ino % 3,
					      .mtime_sec = 1700000000,
					      .ctime_sec = 1700000001,
					      .mtime_nsec = 5,
					      .ctime_nsec = 999999999 } };
	memset(e.sha256, (int)(ino & 0xff), sizeof(e.sha256));
	return e;
}

static void test_exedigest_table_bounded_newest_first(void)
{
	static struct exedigest_table t, back;
	static uint8_t buf[EXEDIGEST_FILE_MAX + 1];

	memset(&t, 0, sizeof(t));
	memcpy(t.boot, "0123456789abcdef0123456789abcdef0123", EXEDIGEST_BOOT_SIZE);
	size_t n = exedigest_format(&t, buf);
	ASSERT_EQ_INT(n, EXEDIGEST_HEADER_SIZE + SHA256_DIGEST_BYTES);
	ASSERT_EQ_INT(exedigest_parse(buf, n, &back), 0);
	ASSERT_EQ_INT(back.n, 0);
	for (uint64_t ino = 1; ino <= EXEDIGEST_MAX_ENTRIES + 6; ino++) {
		struct exedigest_entry e = exedigest_test_entry(ino);
		exedigest_insert(&t, &e);
	}
	ASSERT_EQ_INT(t.n, EXEDIGEST_MAX_ENTRIES);
	ASSERT_EQ_INT(t.entries[0].key.ino, EXEDIGEST_MAX_ENTRIES + 6);
	ASSERT_EQ_INT(t.entries[EXEDIGEST_MAX_ENTRIES - 1].key.ino, 7); /* 1..6 dropped */
	/* The same file again, with a new key: its old entry goes, the new one first. */
	struct exedigest_entry again = exedigest_test_entry(30);
	again.key.ctime_nsec = 1;
	exedigest_insert(&t, &again);
	ASSERT_EQ_INT(t.n, EXEDIGEST_MAX_ENTRIES);
	ASSERT_EQ_INT(t.entries[0].key.ino, 30);
	ASSERT_EQ_INT(t.entries[EXEDIGEST_MAX_ENTRIES - 1].key.ino, 7);
	struct exedigest_entry old = exedigest_test_entry(30);
	ASSERT_TRUE(exedigest_find(&t, &old.key) == NULL);
	ASSERT_TRUE(exedigest_find(&t, &again.key) == &t.entries[0]);
	/* Every field is in the key. */
	struct exedigest_entry probe = exedigest_test_entry(50);
	ASSERT_TRUE(exedigest_find(&t, &probe.key) != NULL);
	uint64_t *u64[] = { &probe.key.dev, &probe.key.ino, &probe.key.size, &probe.key.mnt_id };
	for (size_t i = 0; i < 4; i++) {
		(*u64[i])++;
		ASSERT_TRUE(exedigest_find(&t, &probe.key) == NULL);
		(*u64[i])--;
	}
	int64_t *s64[] = { &probe.key.mtime_sec, &probe.key.ctime_sec };
	uint32_t *u32[] = { &probe.key.mtime_nsec, &probe.key.ctime_nsec };
	for (size_t i = 0; i < 2; i++) {
		(*s64[i])++;
		ASSERT_TRUE(exedigest_find(&t, &probe.key) == NULL);
		(*s64[i])--;
		(*u32[i])--;
		ASSERT_TRUE(exedigest_find(&t, &probe.key) == NULL);
		(*u32[i])++;
	}
	ASSERT_TRUE(exedigest_find(&t, &probe.key) != NULL);

	/* The file: read back as written; any cut, any flipped byte, any
	 * byte more is not a file. */
	n = exedigest_format(&t, buf);
	ASSERT_EQ_INT(n, EXEDIGEST_FILE_MAX);
	ASSERT_EQ_INT(exedigest_parse(buf, n, &back), 0);
	ASSERT_EQ_INT(back.n, t.n);
	ASSERT_TRUE(memcmp(back.boot, t.boot, EXEDIGEST_BOOT_SIZE) == 0);
	ASSERT_TRUE(memcmp(back.entries, t.entries, t.n * sizeof(t.entries[0])) == 0);
	for (size_t cut = 0; cut < n; cut += 7)
		ASSERT_EQ_INT(exedigest_parse(buf, cut, &back), -EBADMSG);
	ASSERT_EQ_INT(exedigest_parse(buf, n + 1, &back), -EBADMSG);
	for (size_t at = 0; at < n; at += 5) {
		buf[at] ^= 0x40;
		ASSERT_EQ_INT(exedigest_parse(buf, n, &back), -EBADMSG);
		buf[at] ^= 0x40;
	}
	ASSERT_EQ_INT(exedigest_parse(buf, n, &back), 0);
}

/* A file written just now is hashed, never stored: a write in the same
 * clock tick would leave its times as they are. Small or large. */
static void test_exedigest_fresh_file_not_stored(void)
{
	char dir[64], path[128];
	uint8_t chunk[65536];
	char hex[SHA256_HEX_SIZE], want[SHA256_HEX_SIZE];

	make_state_dir(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(dfd >= 0);
	snprintf(path, sizeof(path), "%s/exe", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	ASSERT_TRUE(fd >= 0);
	struct sha256 *h = sha256_new();
	ASSERT_TRUE(h != NULL);
	for (int i = 0; i < 32; i++) {
		memset(chunk, 'a' + i, sizeof(chunk));
		ASSERT_EQ_INT(write(fd, chunk, sizeof(chunk)), (long long)sizeof(chunk));
		sha256_update(h, chunk, sizeof(chunk));
	}
	sha256_final_hex(h, want);
	sha256_free(h);
	ASSERT_EQ_INT(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_EQ_INT(exedigest_sha256_fd(dfd, fd, hex), 0);
	ASSERT_EQ_STR(hex, want);
	struct stat sb;
	ASSERT_TRUE(fstatat(dfd, "cache", &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
	close(fd);
	close(dfd);
	remove_state_dir(dir);
}

static void test_store_ids_unique_across_processes(void)
{
	char dir[64];
	int pipefd[2];

	make_state_dir(dir);
	ASSERT_EQ_INT(pipe(pipefd), 0);
	for (int p = 0; p < 4; p++) {
		if (fork() == 0) {
			struct store *s = NULL;
			struct error err = { 0 };
			if (store_open(dir, true, &s, &err) < 0)
				_exit(1);
			for (int i = 0; i < 50; i++) {
				uint64_t id;
				if (store_allocate_id(s, &id, &err) < 0 ||
				    write(pipefd[1], &id, sizeof(id)) != sizeof(id))
					_exit(1);
			}
			_exit(0);
		}
	}
	close(pipefd[1]);
	bool seen[201] = { false };
	uint64_t id;
	int n = 0;
	while (read(pipefd[0], &id, sizeof(id)) == sizeof(id)) {
		ASSERT_TRUE(id >= 1 && id <= 200);
		ASSERT_TRUE(!seen[id]);
		seen[id] = true;
		n++;
	}
	close(pipefd[0]);
	while (wait(NULL) > 0)
		;
	ASSERT_EQ_INT(n, 200);
	remove_state_dir(dir);
}

static void test_receipt_keeps_non_utf8_argv(void)
{
	char *argv[] = { (char *)"echo", (char *)"caf\xe9", NULL };
	struct receipt r = { .id = 9, .source = "run", .argv = argv, .status = RECEIPT_EXITED };

	json_t *doc = receipt_to_json(&r);
	ASSERT_TRUE(doc != NULL);
	ASSERT_EQ_STR(json_string_value(json_array_get(json_object_get(doc, "argv"), 1)),
		      "caf\xef\xbf\xbd");
	json_t *b64 = json_object_get(doc, "argv_b64");
	ASSERT_EQ_STR(json_string_value(json_array_get(b64, 1)), "Y2Fm6Q==");
	ASSERT_EQ_STR(json_string_value(json_object_get(doc, "schema")), RECEIPT_SCHEMA);
	json_decref(doc);
}

static void test_receipt_reads_back(void)
{
	char *argv[] = { (char *)"echo", (char *)"caf\xe9", NULL };
	static const int expected[] = { 0, 3 };
	struct receipt_sandbox sandbox = { .profile = "none" };
	struct receipt_host host = { .agent = "claude", .exit_status = "reported", .verified = true };
	struct receipt_gate gate = {
		.scope = "/w", .opened = true, .n_closes = 1, .closes = { 4 }, .moves = { "rerun" }
	};
	struct receipt r = { .id = 9,
			     .source = "claude-hook",
			     .argv = argv,
			     .cwd = "/w",
			     .expected = expected,
			     .n_expected = 2,
			     .status = RECEIPT_SIGNALED,
			     .signal = 9,
			     .started_ns = 1700000000123000000ULL,
			     .ended_ns = 1700000001456000000ULL,
			     .sandbox = &sandbox,
			     .shell = "echo hi",
			     .host = &host,
			     .gate = &gate };
	struct receipt_parsed p;
	struct error err = { 0 };

	json_t *doc = receipt_to_json(&r);
	ASSERT_EQ_INT(receipt_from_json(doc, &p, &err), 0);
	ASSERT_EQ_STR(p.receipt.argv[1], "caf\xe9"); /* the bytes, by argv_b64 */
	ASSERT_EQ_INT(p.receipt.n_expected, 2);
	ASSERT_EQ_INT(p.receipt.expected[1], 3);
	ASSERT_EQ_INT(p.receipt.status, RECEIPT_SIGNALED);
	ASSERT_EQ_INT(p.receipt.signal, 9);
	ASSERT_TRUE(p.receipt.started_ns == r.started_ns && p.receipt.ended_ns == r.ended_ns);
	ASSERT_EQ_STR(p.receipt.shell, "echo hi");
	ASSERT_EQ_STR(p.receipt.host->agent, "claude");
	ASSERT_TRUE(p.receipt.host->verified);
	ASSERT_EQ_INT(p.receipt.gate->n_closes, 1);
	ASSERT_EQ_STR(p.receipt.gate->moves[0], "rerun");
	ASSERT_TRUE(p.receipt.host_code == NULL && p.receipt.dryrun == NULL);
	receipt_parsed_release(&p);
	/* Strict about types, naming the key. */
	json_object_set_new(doc, "exit_code", json_string("0"));
	ASSERT_EQ_INT(receipt_from_json(doc, &p, &err), -EINVAL);
	ASSERT_TRUE(strstr(err.msg, "exit_code") != NULL);
	json_object_set_new(doc, "exit_code", json_null());
	json_object_set_new(json_object_get(doc, "sandbox"), "denials", json_pack("[i]", 1));
	ASSERT_EQ_INT(receipt_from_json(doc, &p, &err), -EINVAL);
	ASSERT_TRUE(strstr(err.msg, "sandbox.denials") != NULL);
	json_decref(doc);
}

static void test_receipt_clips_long_output(void)
{
	struct capture c;
	char *argv[] = { (char *)"x", NULL };

	ASSERT_EQ_INT(capture_init(&c, 8), 0);
	capture_feed(&c, "abcdefghijklmnopqrstuvwxyz", 26);
	capture_finish(&c);
	struct receipt r = { .id = 1, .source = "run", .argv = argv, .out = { .capture = &c } };
	json_t *doc = receipt_to_json(&r);
	ASSERT_TRUE(doc != NULL);
	ASSERT_EQ_STR(json_string_value(json_object_get(doc, "stdout")),
		      "abcd\n...[airlock: 18 bytes omitted]...\nwxyz");
	json_t *meta = json_object_get(json_object_get(doc, "output"), "stdout");
	ASSERT_EQ_INT(json_integer_value(json_object_get(meta, "bytes")), 26);
	ASSERT_TRUE(json_is_true(json_object_get(meta, "truncated")));
	ASSERT_TRUE(json_is_null(json_object_get(doc, "argv_b64")) ||
		    !json_object_get(doc, "argv_b64"));
	json_t *entry = receipt_index_entry(doc);
	ASSERT_EQ_INT(json_integer_value(json_object_get(entry, "id")), 1);
	json_decref(entry);
	json_decref(doc);
	capture_release(&c);
}

static void test_hostview_parse_allow(void)
{
	unsigned f = 0;

	ASSERT_EQ_INT(hostview_parse_allow("home", &f), 0);
	ASSERT_EQ_INT(f, HOSTVIEW_ALLOW_HOME);
	ASSERT_EQ_INT(hostview_parse_allow("system,home", &f), 0);
	ASSERT_EQ_INT(f, HOSTVIEW_ALLOW_HOME | HOSTVIEW_ALLOW_SYSTEM);
	ASSERT_EQ_INT(hostview_parse_allow("state", &f), -EINVAL);
	ASSERT_EQ_INT(hostview_parse_allow(",", &f), -EINVAL);
	const char *names[3];
	hostview_allow_names(HOSTVIEW_ALLOW_SYSTEM, names);
	ASSERT_EQ_STR(names[0], "system");
	ASSERT_TRUE(names[1] == NULL);
}

/* A path that does not exist yet is resolved through the links on its way. */
static void test_hostview_resolve_follows_links_to_missing_paths(void)
{
	char dir[] = "/tmp/airlock-unit-XXXXXX";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	char real[64], link[64], want[128];
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link/state/airlock", dir);
	ASSERT_EQ_INT(mkdir(real, 0700), 0);
	char at[64];
	snprintf(at, sizeof(at), "%s/link", dir);
	ASSERT_EQ_INT(symlink("real", at), 0);
	char *got = hostview_resolve(link);
	snprintf(want, sizeof(want), "%s/real/state/airlock", dir);
	ASSERT_EQ_STR(got, want);
	free(got);
	got = hostview_resolve("/etc/../etc");
	ASSERT_EQ_STR(got, "/etc");
	free(got);
	unlink(at);
	rmdir(real);
	rmdir(dir);
}

static void test_hostview_check_workspace(void)
{
	struct hostview_caller caller = { .home = "/nonexistent-home", .uid = 12345 };
	char *state[] = { (char *)"/srv/x/state", NULL };
	struct error err = { 0 };

	ASSERT_EQ_INT(hostview_check_workspace("/etc", 0, state, &caller, &err), -EPERM);
	ASSERT_TRUE(strstr(err.msg, "--allow-workspace=system") != NULL);
	ASSERT_EQ_INT(hostview_check_workspace("/usr/lib", HOSTVIEW_ALLOW_SYSTEM, state, &caller, &err),
		      0);
	ASSERT_EQ_INT(hostview_check_workspace("/usr/lib", HOSTVIEW_ALLOW_HOME, state, &caller, &err),
		      -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/nonexistent-home", 0, state, &caller, &err), -EPERM);
	ASSERT_TRUE(strstr(err.msg, "--allow-workspace=home") != NULL);
	ASSERT_EQ_INT(hostview_check_workspace("/home", 0, state, &caller, &err), -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/srv/x", HOSTVIEW_ALLOW_HOME | HOSTVIEW_ALLOW_SYSTEM,
					       state, &caller, &err),
		      -EPERM);
	ASSERT_TRUE(strstr(err.msg, "no option allows this") != NULL);
	ASSERT_EQ_INT(hostview_check_workspace("/srv/x/state/receipts", 0, state, &caller, &err),
		      -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/srv/y", 0, state, &caller, &err), -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/var/lib/dpkg/info", 0, state, &caller, &err), -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/opt/x", 0, state, &caller, &err), -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/var/tmp", 0, state, &caller, &err), -EPERM);
	ASSERT_EQ_INT(hostview_check_workspace("/var/tmp/y", 0, state, &caller, &err), 0);
	ASSERT_EQ_INT(hostview_check_workspace("/tmp/y", 0, state, &caller, &err), 0);
	ASSERT_EQ_INT(hostview_check_workspace("/tmp", 0, state, &caller, &err), -EPERM);
}

static void test_policy_home_mode(void)
{
	static const char hidden[] =
		"{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"home\":\"hidden\",\"home_allow\":[\"~/.cache\"]}}";
	static const char bad[] =
		"{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"home_allow\":[\"rel\"]}}";
	struct policy *p = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_load_default(&p, &err), 0);
	ASSERT_TRUE(!p->home_hidden);
	ASSERT_TRUE(strv_contains(p->home_allow, "~/.cargo/bin"));
	ASSERT_TRUE(strv_contains(p->hide, "~/.codex/auth.json"));
	ASSERT_TRUE(strv_contains(p->hide, "/etc/shadow-"));
	policy_free(p);
	ASSERT_EQ_INT(policy_parse(hidden, strlen(hidden), "t", &p, &err), 0);
	ASSERT_TRUE(p->home_hidden);
	ASSERT_EQ_INT(strv_length(p->home_allow), 1);
	policy_free(p);
	ASSERT_EQ_INT(policy_parse(bad, strlen(bad), "t", &p, &err), -EINVAL);
	ASSERT_TRUE(strstr(err.msg, "sandbox.home_allow") != NULL);
}

/* Version 3 of the change set carries POSIX ACLs; an older one lists none,
 * so one that names an ACL is damaged, and apply leaves ACLs alone. */
static void test_changeset_acls_by_version(void)
{
	static const char fmt[] =
		"{\"schema\":\"airlock.changeset/%d\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\","
		"\"changes\":[{\"change\":\"xattrs_changed\",\"type\":\"file\",\"path\":\"f\","
		"\"xattrs\":[{\"name\":\"%s\",\"base64\":\"AgAAAA==\"}],\"old_xattrs\":[]}]}";
	char text[512];
	struct error err = { 0 };
	json_t *doc = NULL;
	enum dryrun_verdict verdict;

	ASSERT_TRUE(changeset_xattr_carried("system.posix_acl_access", CHANGESET_XATTRS_ALL));
	ASSERT_TRUE(changeset_xattr_carried("system.posix_acl_default", CHANGESET_XATTRS_ALL));
	ASSERT_TRUE(!changeset_xattr_carried("system.posix_acl_access", CHANGESET_XATTRS_USER));
	ASSERT_TRUE(!changeset_xattr_carried("system.other", CHANGESET_XATTRS_ALL));
	ASSERT_TRUE(!changeset_xattr_carried("user.overlay.origin", CHANGESET_XATTRS_ALL));
	ASSERT_TRUE(changeset_xattrs_of(CHANGESET_SCHEMA) == CHANGESET_XATTRS_ALL);
	ASSERT_TRUE(changeset_xattrs_of("airlock.changeset/2") == CHANGESET_XATTRS_USER);
	ASSERT_TRUE(changeset_xattrs_of(NULL) == CHANGESET_XATTRS_USER);
	snprintf(text, sizeof(text), fmt, 3, "system.posix_acl_access");
	ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
	json_decref(doc);
	doc = NULL;
	snprintf(text, sizeof(text), fmt, 2, "system.posix_acl_access");
	ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), -EINVAL);
	snprintf(text, sizeof(text), fmt, 2, "user.note");
	ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
	json_decref(doc);
}

/* Version 4 of the change set gives every entry but a deletion the whole
 * identity of its object (mode, xattrs, a file's size and SHA-256, a
 * symlink's target); one that lacks any of it is damaged. Older versions
 * are read as they were written. */
#define IDENTITY_HASH \
	"\"sha256\":\"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\""
static void test_changeset_identity_by_version(void)
{
	static const char *const good[] = {
		"{\"change\":\"modified\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0755\",\"old_mode\":\"0644\",\"size\":4," IDENTITY_HASH
		",\"xattrs\":[]}",
		"{\"change\":\"created\",\"type\":\"symlink\",\"path\":\"l\",\"mode\":\"0777\",\"target\":\"f\",\"xattrs\":[]}",
		"{\"change\":\"mode_changed\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0600\",\"old_mode\":\"0644\",\"size\":4," IDENTITY_HASH
		",\"xattrs\":[]}",
		"{\"change\":\"deleted\",\"type\":\"file\",\"path\":\"f\"}",
		"{\"change\":\"mode_changed\",\"type\":\"dir\",\"path\":\".\",\"mode\":\"0700\",\"old_mode\":\"0755\",\"xattrs\":[]}",
	};
	static const char *const bad[] = {
		"{\"change\":\"modified\",\"type\":\"file\",\"path\":\"f\",\"size\":4," IDENTITY_HASH
		",\"xattrs\":[]}",
		"{\"change\":\"modified\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0644\",\"size\":4," IDENTITY_HASH
		"}",
		"{\"change\":\"created\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0644\",\"xattrs\":[]," IDENTITY_HASH
		"}",
		"{\"change\":\"created\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0644\",\"size\":4,\"sha256\":\"xyz\",\"xattrs\":[]}",
		"{\"change\":\"created\",\"type\":\"symlink\",\"path\":\"l\",\"mode\":\"0777\",\"xattrs\":[]}",
		"{\"change\":\"type_changed\",\"type\":\"dir\",\"path\":\"d\",\"mode\":\"755\",\"xattrs\":[]}",
		"{\"change\":\"xattrs_changed\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0644\",\"size\":4," IDENTITY_HASH
		",\"xattrs\":[]}",
	};
	char text[1024];
	struct error err = { 0 };
	json_t *doc = NULL;
	enum dryrun_verdict verdict;

	ASSERT_TRUE(changeset_carries_identity(CHANGESET_SCHEMA));
	ASSERT_TRUE(!changeset_carries_identity("airlock.changeset/3"));
	ASSERT_TRUE(!changeset_carries_identity(NULL));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[%s]}",
			 good[i]);
		ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
		json_decref(doc);
		doc = NULL;
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[%s]}",
			 bad[i]);
		ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), -EINVAL);
		ASSERT_TRUE(strstr(err.msg, "damaged") != NULL);
		err = (struct error){ 0 };
	}
	/* Written before version 4: a modified entry without mode or xattrs. */
	snprintf(text, sizeof(text),
		 "{\"schema\":\"airlock.changeset/3\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[%s]}",
		 bad[0]);
	ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
	json_decref(doc);
}

/* also_names (a mode or attributes changed in place on one name of a
 * hard-link group: the group's other names) is an optional list of names
 * stored like `path`, on a mode, attribute or owner change only; anything
 * else there is a damaged change set. */
static void test_changeset_also_names(void)
{
	static const char entry[] =
		"{\"change\":\"%s\",\"type\":\"file\",\"path\":\"f\",\"mode\":\"0600\","
		"\"old_mode\":\"0644\",\"size\":4," IDENTITY_HASH ",\"xattrs\":[]%s}";
	static const char *const good[] = {
		"",
		",\"also_names\":[]",
		",\"also_names\":[{\"path\":\"g\"},{\"path\":\"d/h\"}]",
		",\"also_names\":[{\"path\":\"g\\ufffd\",\"path_b64\":\"Zv8=\"}]",
	};
	static const char *const bad[] = {
		",\"also_names\":\"g\"",
		",\"also_names\":[\"g\"]",
		",\"also_names\":[7]",
		",\"also_names\":[{}]",
		",\"also_names\":[{\"path\":\"../g\"}]",
		",\"also_names\":[{\"path\":\"/etc/passwd\"}]",
		",\"also_names\":[{\"path\":\".\"}]",
		",\"also_names\":[{\"path\":\"g\",\"path_b64\":\"!!\"}]",
		",\"also_names\":null",
	};
	char text[1024], c[768];
	struct error err = { 0 };
	json_t *doc = NULL;
	enum dryrun_verdict verdict;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(c, sizeof(c), entry, "mode_changed", good[i]);
		snprintf(text, sizeof(text),
			 "{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[%s]}",
			 c);
		ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
		json_decref(doc);
		doc = NULL;
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		/* the last: a list of names on a change that is no mode,
		 * attribute or owner change */
		if (i < sizeof(bad) / sizeof(bad[0]))
			snprintf(c, sizeof(c), entry, "mode_changed", bad[i]);
		else
			snprintf(c, sizeof(c), entry, "modified", good[2]);
		snprintf(text, sizeof(text),
			 "{\"schema\":\"airlock.changeset/4\",\"workspace\":\"/w\",\"verdict\":\"DRY_RUN_OK\",\"changes\":[%s]}",
			 c);
		err = (struct error){ 0 };
		ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), -EINVAL);
		ASSERT_TRUE(strstr(err.msg, "damaged") != NULL);
	}
}

/* The names are the format (receipts, change sets, permit records): each
 * verdict has its own, it reads back as itself, and nothing else reads. */
static void test_dryrun_verdict_names(void)
{
	static const char *const names[_DRYRUN_VERDICT_MAX] = {
		[DRYRUN_VERDICT_DRY_RUN_OK] = "DRY_RUN_OK",
		[DRYRUN_VERDICT_DRY_RUN_FAILED] = "DRY_RUN_FAILED",
		[DRYRUN_VERDICT_NO_EFFECT] = "NO_EFFECT",
		[DRYRUN_VERDICT_PRIVILEGED_FILE] = "PRIVILEGED_FILE",
		[DRYRUN_VERDICT_UNEXPECTED_PATH] = "UNEXPECTED_PATH",
		[DRYRUN_VERDICT_EXPECTED_PATH_MISSING] = "EXPECTED_PATH_MISSING",
		[DRYRUN_VERDICT_OUTSIDE_WRITE] = "OUTSIDE_WRITE",
		[DRYRUN_VERDICT_HOST_CODE] = "HOST_CODE",
		[DRYRUN_VERDICT_NEEDS_PRIVILEGE] = "NEEDS_PRIVILEGE",
		[DRYRUN_VERDICT_ATTRS_LOST] = "ATTRS_LOST",
		[DRYRUN_VERDICT_LINK_GROUP] = "LINK_GROUP",
		[DRYRUN_VERDICT_RENAME_INCOMPLETE] = "RENAME_INCOMPLETE",
	};
	static const char *const unknown[] = { "",	     "NONE",	     "INVALID",
					       "dry_run_ok", "DRY_RUN_OK ",  " DRY_RUN_OK",
					       "DRY_RUN",    "DRY_RUN_OKAY", "REJECTED",
					       "?" };

	ASSERT_TRUE(dryrun_verdict_name(DRYRUN_VERDICT_NONE) == NULL);
	ASSERT_TRUE(dryrun_verdict_name(_DRYRUN_VERDICT_MAX) == NULL);
	ASSERT_TRUE(dryrun_verdict_name((enum dryrun_verdict) - 1) == NULL);
	for (int v = DRYRUN_VERDICT_NONE + 1; v < _DRYRUN_VERDICT_MAX; v++) {
		const char *name = dryrun_verdict_name((enum dryrun_verdict)v);
		ASSERT_TRUE(name != NULL);
		ASSERT_EQ_STR(name, names[v]);
		ASSERT_EQ_INT(dryrun_verdict_from_name(name), v);
	}
	ASSERT_EQ_INT(dryrun_verdict_from_name(NULL), -EINVAL);
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		ASSERT_EQ_INT(dryrun_verdict_from_name(unknown[i]), -EINVAL);
}

/* A change set is read with its verdict, and one it does not know, or
 * none, is a damaged change set: apply and permit refuse it. */
static void test_changeset_verdict_read_back(void)
{
	static const char fmt[] = "{\"schema\":\"airlock.changeset/3\",\"workspace\":\"/w\",%s"
				  "\"changes\":[]}";
	char text[256];
	struct error err = { 0 };
	json_t *doc = NULL;
	enum dryrun_verdict verdict = DRYRUN_VERDICT_NONE;

	snprintf(text, sizeof(text), fmt, "\"verdict\":\"OUTSIDE_WRITE\",");
	ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), 0);
	ASSERT_TRUE(verdict == DRYRUN_VERDICT_OUTSIDE_WRITE);
	json_decref(doc);
	const char *bad[] = { "\"verdict\":\"BOGUS\",", "\"verdict\":\"dry_run_ok\",",
			      "\"verdict\":1,", "\"verdict\":null,", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		doc = NULL;
		err = (struct error){ 0 };
		snprintf(text, sizeof(text), fmt, bad[i]);
		ASSERT_EQ_INT(apply_parse_changeset(text, strlen(text), &doc, &verdict, &err), -EINVAL);
		ASSERT_TRUE(doc == NULL);
		ASSERT_TRUE(strstr(err.msg, "damaged") != NULL);
	}
}

/* issue 25: the network allowlist's patterns (docs/network.md): what
 * parses, to which canonical spelling, and what is refused. */
static void test_netallow_pattern_parse(void)
{
	static const struct {
		const char *in, *canon; /* canon NULL: refused */
	} cases[] = {
		{ "registry.npmjs.org", "registry.npmjs.org" },
		{ "Registry.NPMjs.ORG:443", "registry.npmjs.org:443" },
		{ "*.debian.org", "*.debian.org" },
		{ "*.Debian.org:8080", "*.debian.org:8080" },
		{ "xn--bcher-kva.example", "xn--bcher-kva.example" },
		{ "192.0.2.7", "192.0.2.7" },
		{ "10.0.0.0/8:443", "10.0.0.0/8:443" },
		{ "[2001:DB8::1]", "[2001:db8::1]" },
		{ "[fd00::/8]:443", "[fd00::/8]:443" },
		{ "127.0.0.2", "127.0.0.2" },
		{ "", NULL },
		{ "localhost", NULL },
		{ "example", NULL },
		{ "*", NULL },
		{ "*.com", NULL },
		{ "*.", NULL },
		{ "foo*.org", NULL },
		{ "*foo.org", NULL },
		{ "a.*.org", NULL },
		{ "**.example.org", NULL },
		{ "example.org.", NULL },
		{ ".example.org", NULL },
		{ "a..example.org", NULL },
		{ "-a.example.org", NULL },
		{ "a-.example.org", NULL },
		{ "a_b.example.org", NULL },
		{ "example.org:0", NULL },
		{ "example.org:65536", NULL },
		{ "example.org:080", NULL },
		{ "example.org:", NULL },
		{ "example.org:+1", NULL },
		{ "example.org:1:2", NULL },
		{ "2130706433", NULL },
		{ "0x7f.1", NULL },
		{ "1.2.3", NULL },
		{ "127.1", NULL },
		{ "010.0.0.1", NULL },
		{ "10.1.0.0/8", NULL },
		{ "10.0.0.0/33", NULL },
		{ "10.0.0.0/", NULL },
		{ "example.org/8", NULL },
		{ "::1", NULL },
		{ "[::1", NULL },
		{ "[::1]x", NULL },
		{ "[10.0.0.1]", NULL },
		{ "[::/129]", NULL },
		{ "[fd00::1/8]", NULL },
		{ "exa mple.org", NULL },
		{ "https://example.org", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct netallow_pattern p, again;
		struct error err = { 0 };
		char buf[NETALLOW_PATTERN_MAX + 1];
		int r = netallow_pattern_parse(cases[i].in, &p, &err);
		if (!cases[i].canon) {
			if (r == 0)
				printf("# accepted '%s'\n", cases[i].in);
			ASSERT_EQ_INT(r, -EINVAL);
			ASSERT_TRUE(err.msg[0] != '\0');
			continue;
		}
		if (r != 0)
			printf("# refused '%s': %s\n", cases[i].in, err.msg);
		ASSERT_EQ_INT(r, 0);
		ASSERT_TRUE(netallow_pattern_format(&p, buf, sizeof(buf)) > 0);
		ASSERT_EQ_STR(buf, cases[i].canon);
		ASSERT_EQ_INT(netallow_pattern_parse(buf, &again, &err), 0);
		ASSERT_TRUE(memcmp(&p, &again, sizeof(p)) == 0);
	}
	/* 63-byte labels and 253 bytes in all; one more is refused. */
	char name[300];
	memset(name, 'a', 63);
	strcpy(name + 63, ".example.org");
	struct netallow_pattern p;
	struct error err = { 0 };
	ASSERT_EQ_INT(netallow_pattern_parse(name, &p, &err), 0);
	memset(name, 'a', 64);
	strcpy(name + 64, ".example.org");
	ASSERT_EQ_INT(netallow_pattern_parse(name, &p, &err), -EINVAL);
	name[0] = '\0';
	while (strlen(name) + 4 <= 253)
		strcat(name, "abc.");
	strcat(name, "org");
	name[253] = '\0';
	ASSERT_EQ_INT(strlen(name), 253);
	ASSERT_EQ_INT(netallow_pattern_parse(name, &p, &err), 0);
	strcat(name, "r");
	ASSERT_EQ_INT(netallow_pattern_parse(name, &p, &err), -EINVAL);
}

static enum netallow_verdict netallow_check(const struct netallow *n, const char *host,
					    uint16_t port, size_t *ret_index)
{
	struct netallow_request req;
	size_t ignored;

	if (netallow_request_parse(host, port, &req) < 0)
		return (enum netallow_verdict) - 1;
	return netallow_match(n, &req, ret_index ? ret_index : &ignored);
}

/* Matching: exact names, "*." below the domain only, ports (none: 80 and
 * 443 to allow, every port to deny), deny over allow, literals only by
 * ranges; requests that are neither names nor literals are refused. */
static void test_netallow_match(void)
{
	static const char *const allow[] = { "registry.npmjs.org",
					     "*.debian.org",
					     "github.com:22",
					     "github.com:443",
					     "192.0.2.0/24:8080",
					     "[2001:db8::/32]",
					     NULL };
	static const char *const deny[] = { "evil.debian.org", "192.0.2.66", NULL };
	struct netallow n;
	struct error err = { 0 };
	size_t idx = 99;

	ASSERT_EQ_INT(netallow_compile((char *const *)allow, (char *const *)deny, &n, &err), 0);
	ASSERT_EQ_INT(netallow_check(&n, "registry.npmjs.org", 443, &idx), NETALLOW_ALLOWED);
	ASSERT_EQ_INT((int)idx, 0);
	ASSERT_EQ_INT(netallow_check(&n, "REGISTRY.npmjs.org.", 80, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "registry.npmjs.org", 8443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "x.registry.npmjs.org", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "npmjs.org", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "deb.debian.org", 443, &idx), NETALLOW_ALLOWED);
	ASSERT_EQ_INT((int)idx, 1);
	ASSERT_EQ_INT(netallow_check(&n, "a.b.debian.org", 80, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "debian.org", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "xdebian.org", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "debian.org.evil.com", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "evil.debian.org", 443, &idx), NETALLOW_DENIED);
	ASSERT_EQ_INT((int)idx, 0);
	ASSERT_EQ_INT(netallow_check(&n, "evil.debian.org", 9999, NULL), NETALLOW_DENIED);
	ASSERT_EQ_INT(netallow_check(&n, "github.com", 22, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "github.com", 443, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "github.com", 80, NULL), NETALLOW_NOT_ALLOWED);
	/* literals: only by ranges, with their ports */
	ASSERT_EQ_INT(netallow_check(&n, "192.0.2.7", 8080, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "192.0.2.7", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "192.0.2.66", 8080, NULL), NETALLOW_DENIED);
	ASSERT_EQ_INT(netallow_check(&n, "[::ffff:192.0.2.7]", 8080, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "[::ffff:192.0.2.66]", 8080, NULL), NETALLOW_DENIED);
	ASSERT_EQ_INT(netallow_check(&n, "[2001:db8::5]", 443, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "2001:db8::5", 80, NULL), NETALLOW_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "[2001:db9::5]", 443, NULL), NETALLOW_NOT_ALLOWED);
	ASSERT_EQ_INT(netallow_check(&n, "104.16.0.35", 443, NULL), NETALLOW_NOT_ALLOWED);
	/* neither a name nor a literal */
	static const char *const bad[] = { "2130706433",     "0x7f.1",	   "127.1",
					   "a_b.debian.org", "",	   ".",
					   "[::1",	     "10.0.0.0/8", "deb.debian.org..",
					   "*.debian.org",   "localhost" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct netallow_request req;
		ASSERT_EQ_INT(netallow_request_parse(bad[i], 443, &req), -EINVAL);
	}
	struct netallow_request req;
	ASSERT_EQ_INT(netallow_request_parse("deb.debian.org", 0, &req), -EINVAL);
	netallow_release(&n);
	/* an error names the list and index */
	static const char *const broken[] = { "ok.example.org", "*", NULL };
	ASSERT_EQ_INT(netallow_compile(NULL, (char *const *)broken, &n, &err), -EINVAL);
	ASSERT_TRUE(strstr(err.msg, "deny[1]") != NULL);
}

static void netallow_addr(const char *s, int *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	*family = strchr(s, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*family, s, addr) != 1)
		abort();
}

/* Resolved addresses: loopback, link-local (the metadata endpoint),
 * private and special ones only when an allow range names them, in every
 * IPv6 spelling of an IPv4 address; a deny range refuses even public ones. */
static void test_netallow_addresses(void)
{
	static const struct {
		const char *addr;
		enum netallow_class cls;
	} classes[] = {
		{ "127.0.0.1", NETALLOW_LOOPBACK },
		{ "127.255.0.2", NETALLOW_LOOPBACK },
		{ "::1", NETALLOW_LOOPBACK },
		{ "::ffff:127.0.0.1", NETALLOW_LOOPBACK },
		{ "64:ff9b::7f00:1", NETALLOW_LOOPBACK },
		{ "2002:7f00:1::", NETALLOW_LOOPBACK },
		{ "169.254.169.254", NETALLOW_LINK_LOCAL },
		{ "::ffff:169.254.169.254", NETALLOW_LINK_LOCAL },
		{ "fe80::1", NETALLOW_LINK_LOCAL },
		{ "10.0.0.1", NETALLOW_PRIVATE },
		{ "172.16.0.1", NETALLOW_PRIVATE },
		{ "172.31.255.255", NETALLOW_PRIVATE },
		{ "192.168.1.1", NETALLOW_PRIVATE },
		{ "100.64.0.1", NETALLOW_PRIVATE },
		{ "fd00::1", NETALLOW_PRIVATE },
		{ "fc00::1", NETALLOW_PRIVATE },
		{ "0.0.0.0", NETALLOW_SPECIAL },
		{ "::", NETALLOW_SPECIAL },
		{ "224.0.0.1", NETALLOW_SPECIAL },
		{ "255.255.255.255", NETALLOW_SPECIAL },
		{ "ff02::1", NETALLOW_SPECIAL },
		{ "::2", NETALLOW_SPECIAL },
		{ "172.32.0.1", NETALLOW_PUBLIC },
		{ "104.16.0.35", NETALLOW_PUBLIC },
		{ "2606:4700::1", NETALLOW_PUBLIC },
		{ "::ffff:104.16.0.35", NETALLOW_PUBLIC },
	};
	for (size_t i = 0; i < ARRAY_SIZE(classes); i++) {
		int family;
		uint8_t a[16];
		netallow_addr(classes[i].addr, &family, a);
		if (netallow_address_class(family, a) != classes[i].cls)
			printf("# %s is %s\n", classes[i].addr,
			       netallow_class_name(netallow_address_class(family, a)));
		ASSERT_EQ_INT(netallow_address_class(family, a), classes[i].cls);
	}
	static const char *const allow[] = { "registry.test", "127.0.0.2", "10.1.0.0/16:8443", NULL };
	static const char *const deny[] = { "104.16.0.0/16", NULL };
	struct netallow n;
	struct error err = { 0 };
	int family;
	uint8_t a[16];
	ASSERT_EQ_INT(netallow_compile((char *const *)allow, (char *const *)deny, &n, &err), 0);
	netallow_addr("127.0.0.2", &family, a);
	ASSERT_TRUE(netallow_address_allowed(&n, family, a, 443));
	netallow_addr("::ffff:127.0.0.2", &family, a);
	ASSERT_TRUE(netallow_address_allowed(&n, family, a, 443));
	netallow_addr("127.0.0.3", &family, a);
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 443));
	netallow_addr("169.254.169.254", &family, a);
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 80));
	netallow_addr("10.1.2.3", &family, a);
	ASSERT_TRUE(netallow_address_allowed(&n, family, a, 8443));
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 443));
	netallow_addr("10.2.0.1", &family, a);
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 8443));
	netallow_addr("2606:4700::1", &family, a);
	ASSERT_TRUE(netallow_address_allowed(&n, family, a, 443));
	netallow_addr("104.16.0.35", &family, a);
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 443));
	netallow_addr("::1", &family, a);
	ASSERT_TRUE(!netallow_address_allowed(&n, family, a, 443));
	netallow_release(&n);
}

/* sandbox.net's object form in a policy: patterns kept canonical, lists
 * bounded, errors naming the key; a string form after it clears it. */
static void test_policy_net_allowlist(void)
{
	static const char doc[] =
		"{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":{\"allow\":[\"Registry.NPMjs.org\",\"*.debian.org:443\"]}}}";
	struct policy *p = NULL;
	struct error err = { 0 };

	ASSERT_EQ_INT(policy_parse(doc, strlen(doc), "t", &p, &err), 0);
	ASSERT_TRUE(p->net_allowlist && !p->share_net);
	ASSERT_EQ_INT(strv_length(p->net_allow), 2);
	ASSERT_EQ_STR(p->net_allow[0], "registry.npmjs.org");
	ASSERT_TRUE(p->net_deny != NULL && p->net_deny[0] == NULL);
	policy_free(p);
	static const struct {
		const char *doc, *needle;
	} bad[] = {
		{ "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":{\"allow\":[\"*\"]}}}",
		  "'sandbox.net.allow[0]'" },
		{ "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":{\"deny\":[1]}}}",
		  "'sandbox.net.deny[0]'" },
		{ "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":{\"allow\":[],\"ports\":[]}}}",
		  "'sandbox.net.ports'" },
		{ "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":\"all\"}}", "'sandbox.net'" },
		{ "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":[]}}", "'sandbox.net'" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err = (struct error){ 0 };
		p = NULL;
		ASSERT_TRUE(policy_parse(bad[i].doc, strlen(bad[i].doc), "t", &p, &err) < 0);
		if (!strstr(err.msg, bad[i].needle))
			printf("# %s\n", err.msg);
		ASSERT_TRUE(strstr(err.msg, bad[i].needle) != NULL);
	}
	/* 256 patterns at most */
	size_t cap = 300 * 24 + 200;
	char *big = malloc(cap);
	ASSERT_TRUE(big != NULL);
	strcpy(big, "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"net\":{\"allow\":[");
	for (int i = 0; i < 257; i++)
		snprintf(big + strlen(big), cap - strlen(big), "%s\"h%d.example.org\"",
			 i ? "," : "", i);
	strcat(big, "]}}}");
	err = (struct error){ 0 };
	ASSERT_TRUE(policy_parse(big, strlen(big), "t", &p, &err) < 0);
	ASSERT_TRUE(strstr(err.msg, "at most 256") != NULL);
	free(big);
}

/* The origin line of an approval made through the mirror: last, one line,
 * never in permit_message()'s own form. */
static void test_permit_message_origin(void)
{
	struct permit p = { .id = 7, .risk = 4 };
	struct error err = { 0 };
	char *local = NULL, *with = NULL;
	size_t n = 0;
	p.workspace = (char *)"/w\norigin=x";
	memset(p.changeset_sha256, 'a', SHA256_HEX_SIZE - 1);
	ASSERT_EQ_INT(permit_message(&p, &local, &err), 0);
	ASSERT_TRUE(permit_message_origin(local, &n) == NULL); /* its last line is the digest */
	ASSERT_EQ_INT(permit_message_for_origin(&p, "airlock.local/ledger/ab", &with, &err), 0);
	ASSERT_TRUE(strncmp(with, local, strlen(local)) == 0);
	ASSERT_EQ_STR(with + strlen(local), "origin=airlock.local/ledger/ab\n");
	const char *o = permit_message_origin(with, &n);
	ASSERT_TRUE(o != NULL && n == strlen("airlock.local/ledger/ab"));
	ASSERT_TRUE(strncmp(o, "airlock.local/ledger/ab", n) == 0);
	free(with);
	with = NULL;
	ASSERT_EQ_INT(permit_message_for_origin(&p, "a\nb", &with, &err), -EINVAL);
	ASSERT_EQ_INT(permit_message_for_origin(&p, "", &with, &err), -EINVAL);
	ASSERT_TRUE(permit_message_origin("origin=x\n", &n) == NULL);
	ASSERT_TRUE(permit_message_origin("a\norigin=x", &n) == NULL);
	free(local);
}

/* The fleet console's check of a host's mirrored lines (core/fleet/fleetlog.h)
 * against a real ledger's signed checkpoint: each line's state, and what a
 * database superuser's edits turn them into. */
struct fleet_rows {
	char *lines[8];
	size_t n_lines[8];
	char leaves[8][2 * MERKLE_HASH_BYTES + 1];
	size_t n;
};

static void fleet_rows_leaf(struct fleet_rows *r, size_t i, const char *line, size_t n)
{
	merkle_hash h;
	merkle_leaf_hash(line, n, h);
	hex_encode(h, sizeof(h), r->leaves[i]);
}

/* Adds every row (seq from first_seq, one skipped at skip when not -1) and
 * finishes; states into out. */
static void fleet_rows_check(struct fleet_log *l, const struct fleet_rows *r, long skip,
			     enum fleet_line_state *out)
{
	for (size_t i = 0; i < r->n; i++) {
		char seq[24];
		snprintf(seq, sizeof(seq), "%zu", (long)i >= skip && skip >= 0 ? i + 1 : i);
		out[i] = fleet_log_add(l, seq, r->leaves[i], r->lines[i], r->n_lines[i]);
	}
	fleet_log_finish(l);
	for (size_t i = 0; i < r->n; i++)
		out[i] = fleet_log_state(l, out[i]);
}

static void test_fleet_log_checks_lines(void)
{
	char dir[] = "/tmp/test-fleetlog-XXXXXX";
	struct ledger *ledger = NULL;
	struct error err = { 0 };
	char *cp = NULL, *vkey = NULL, *log = NULL;
	size_t cp_n = 0, log_n = 0;
	ASSERT_TRUE(mkdtemp(dir));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(ledger_open(fd, dir, &ledger_state_schema, &ledger, &err), 0);
	for (unsigned i = 0; i < 6; i++) {
		char id[16], path[64], hex[SHA256_HEX_SIZE];
		snprintf(id, sizeof(id), "%u", i + 1);
		snprintf(path, sizeof(path), "receipts/%u.json", i + 1);
		sha256_hex(id, strlen(id), hex);
		/* the checkpoint signs 5: the sixth line is beyond it */
		ASSERT_EQ_INT(ledger_append(ledger, LEDGER_RECEIPT, id, path, hex, i == 4, NULL, &err),
			      0);
		if (i == 4)
			ASSERT_EQ_INT(ledger_checkpoint_text(ledger, &cp, &cp_n, &err), 0);
	}
	ASSERT_EQ_INT(ledger_public_key(ledger, false, &vkey, &err), 0);
	ASSERT_EQ_INT(file_read_capped(fd, "ledger/log", 1 << 20, &log, &log_n, &err), 0);
	struct fleet_rows r = { 0 };
	for (char *p = log, *nl; r.n < 8 && (nl = strchr(p, '\n')); p = nl + 1) {
		r.lines[r.n] = p;
		r.n_lines[r.n] = (size_t)(nl - p);
		fleet_rows_leaf(&r, r.n, p, r.n_lines[r.n]);
		r.n++;
	}
	ASSERT_EQ_INT(r.n, 6);
	char *origin = strndup(vkey, strcspn(vkey, "+"));
	ASSERT_TRUE(origin);
	struct fleet_log l;
	enum fleet_line_state st[8];

	/* Genuine: five verified, the sixth not covered; the mirror's key. */
	fleet_log_begin(&l, origin, cp, vkey, NULL, NULL);
	ASSERT_EQ_INT(l.key_source, FLEET_KEY_MIRROR);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_TRUE(l.tree_ok);
	for (size_t i = 0; i < 5; i++)
		ASSERT_EQ_INT(st[i], FLEET_LINE_VERIFIED);
	ASSERT_EQ_INT(st[5], FLEET_LINE_UNCOVERED);
	fleet_log_release(&l);

	/* Pinned by --keys: the same; --keys naming no key of this log: none. */
	struct fleet_keys keys = { 0 };
	ASSERT_EQ_INT(fleet_keys_parse(vkey, strlen(vkey), &keys, &err), 0);
	fleet_log_begin(&l, origin, cp, NULL, &keys, NULL);
	ASSERT_EQ_INT(l.key_source, FLEET_KEY_PINNED);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_EQ_INT(st[0], FLEET_LINE_VERIFIED);
	fleet_log_release(&l);
	struct fleet_keys none = { 0 };
	fleet_log_begin(&l, origin, cp, vkey, &none, NULL);
	ASSERT_EQ_INT(l.key_source, FLEET_KEY_UNPINNED);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_EQ_INT(st[0], FLEET_LINE_UNVERIFIED);
	ASSERT_EQ_INT(st[5], FLEET_LINE_UNVERIFIED);
	fleet_log_release(&l);

	/* A line altered, its stored leaf as pushed: that line forged. */
	char *orig = r.lines[2];
	size_t orig_n = r.n_lines[2];
	char *altered = strndup(orig, orig_n);
	ASSERT_TRUE(altered);
	altered[orig_n - 3] ^= 1;
	r.lines[2] = altered;
	fleet_log_begin(&l, origin, cp, vkey, NULL, NULL);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_TRUE(l.tree_ok);
	ASSERT_EQ_INT(l.n_mismatched, 1);
	ASSERT_EQ_INT(st[1], FLEET_LINE_VERIFIED);
	ASSERT_EQ_INT(st[2], FLEET_LINE_FORGED);
	fleet_log_release(&l);
	/* ... and its leaf too: the root breaks, nothing verifies. */
	fleet_rows_leaf(&r, 2, altered, orig_n);
	fleet_log_begin(&l, origin, cp, vkey, NULL, NULL);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_TRUE(!l.tree_ok);
	ASSERT_TRUE(strstr(l.failure, "do not make the root") != NULL);
	for (size_t i = 0; i < 5; i++)
		ASSERT_EQ_INT(st[i], FLEET_LINE_UNVERIFIED);
	fleet_log_release(&l);
	r.lines[2] = orig;
	fleet_rows_leaf(&r, 2, orig, orig_n);

	/* A row missing (a gap in the sequence): nothing verifies. */
	fleet_log_begin(&l, origin, cp, vkey, NULL, NULL);
	fleet_rows_check(&l, &r, 3, st);
	ASSERT_TRUE(!l.tree_ok);
	ASSERT_EQ_INT(st[0], FLEET_LINE_UNVERIFIED);
	fleet_log_release(&l);

	/* The checkpoint's signature altered, or another origin's name. */
	cp[cp_n - 4] = cp[cp_n - 4] == 'A' ? 'B' : 'A';
	fleet_log_begin(&l, origin, cp, vkey, NULL, NULL);
	fleet_rows_check(&l, &r, -1, st);
	ASSERT_TRUE(!l.checkpoint_ok);
	ASSERT_EQ_INT(st[0], FLEET_LINE_UNVERIFIED);
	fleet_log_release(&l);
	fleet_log_begin(&l, "another", NULL, vkey, NULL, NULL);
	ASSERT_TRUE(!l.checkpoint_ok);
	fleet_log_release(&l);

	/* A keys file: comments, blank lines; a line that is not a key. */
	ASSERT_TRUE(fleet_keys_parse("# pins\n\nnot a key\n", 18, &none, &err) < 0);
	ASSERT_TRUE(strstr(err.msg, "line 3") != NULL);

	fleet_keys_release(&keys);
	free(altered);
	free(origin);
	free(cp);
	free(vkey);
	free(log);
	ledger_free(ledger);
	close(fd);
	(void)remove_tree_at(AT_FDCWD, dir);
}

RUN_TESTS(T_(test_fleet_log_checks_lines), T_(test_permit_message_origin),
	  T_(test_netallow_pattern_parse), T_(test_netallow_match), T_(test_netallow_addresses),
	  T_(test_policy_net_allowlist), T_(test_default_policy_loads),
	  T_(test_default_policy_compact_is_the_document),
	  T_(test_default_policy_struct_is_the_parsed_document), T_(test_hostview_parse_allow),
	  T_(test_hostview_resolve_follows_links_to_missing_paths),
	  T_(test_hostview_check_workspace), T_(test_policy_home_mode),
	  T_(test_policy_partial_document_keeps_floor), T_(test_policy_errors_name_the_key),
	  T_(test_policy_empty_list_clears_default), T_(test_policy_denials),
	  T_(test_policy_widenings), T_(test_job_seed_format), T_(test_job_codex_format),
	  T_(test_job_timeout_sec_rounds_up), T_(test_job_errors_name_the_key),
	  T_(test_env_allowlist_and_fixed_settings), T_(test_env_refuses_secret_unless_forced),
	  T_(test_store_ids_increase_and_skip_existing), T_(test_store_ids_unique_across_processes),
	  T_(test_store_prepared_receipt_cache), T_(test_receipt_keeps_non_utf8_argv),
	  T_(test_receipt_clips_long_output), T_(test_receipt_reads_back),
	  T_(test_changeset_acls_by_version), T_(test_changeset_identity_by_version),
	  T_(test_changeset_also_names), T_(test_dryrun_verdict_names),
	  T_(test_changeset_verdict_read_back), T_(test_exedigest_fs_allowlist),
	  T_(test_exedigest_table_bounded_newest_first), T_(test_exedigest_fresh_file_not_stored))
