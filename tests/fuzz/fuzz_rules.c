/* SPDX-License-Identifier: MIT */
/* Property: rules_parse() never crashes, fails with a message, and accepted
 * rules classify anything (here: a few fixed commands and a shell string)
 * into a level 1-5 with a named rule. */
#include <stdint.h>
#include <stdlib.h>

#include "core/policy/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const argvs[][8] = {
		{ "git", "-C", "x", "status", NULL },
		{ "sh", "-c", "ls | wc", NULL },
		{ "env", "A=1", "timeout", "5", NULL },
		{ "sed", "-n", "1p", "f", NULL },
		{ "nohup", "git", "-Cx", "status", "-sn5", "--porc", "--", NULL },
		{ "env", "-S", "x", NULL },
		{ "sort", "--outp=F", "-k", NULL },
		{ "find", ".", "-name", "x", "-print", "--", "-delete", NULL },
		{ "command", "-v", "rm", NULL },
		{ "env", "-i", "LANG=C", NULL },
	};
	struct rules *rules = NULL;
	struct error err = { 0 };

	if (rules_parse((const char *)data, size, &rules, &err) < 0) {
		if (!err.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; i < sizeof(argvs) / sizeof(argvs[0]); i++) {
		struct rules_verdict v;
		rules_classify(rules, (char *const *)argvs[i], &v);
		if (v.risk < 1 || v.risk > 5 || !v.rule[0] || !v.level)
			abort();
	}
	struct rules_verdict v;
	rules_classify_shell(rules, "make && echo $X > f", &v);
	if (v.risk < 1 || v.risk > 5)
		abort();
	rules_classify_shell(rules, "LC_ALL=C X=1 ls -la && Y=2; exec -a x rm", &v);
	if (v.risk < 1 || v.risk > 5)
		abort();
	rules_free(rules);
	return 0;
}
