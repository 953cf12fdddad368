/* SPDX-License-Identifier: MIT */
/* Property: shell_script_parse() never crashes; every command it returns
 * has a non-empty argv; a plain script names no reason, a non-plain one
 * does; and the masking of a non-plain script says so. Classified by the
 * built-in rules, its reason is text: valid UTF-8, no control character
 * (it names the script's commands, issue 20). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/text.h"
#include "core/policy/rules.h"
#include "core/policy/shellwords.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shell_script s;
	int r = shell_script_parse((const char *)data, size, &s);

	if (r == 0) {
		for (size_t i = 0; i < s.n_commands; i++)
			if (!s.commands[i].argv || !s.commands[i].argv[0])
				abort();
		if (s.plain == (s.unparsed[0] != '\0'))
			abort();
		if (!s.plain && !(shell_script_masking(&s) & SHELL_MASK_UNPARSED))
			abort();
	}
	shell_script_release(&s);

	static struct rules *rules;
	struct error err = { 0 };
	if (!rules && rules_load_default(&rules, &err) < 0)
		abort();
	char *text = strndup((const char *)data, size);
	if (!text)
		return 0;
	struct rules_verdict v;
	rules_classify_shell(rules, text, &v);
	if (v.risk < 1 || v.risk > 5 || !v.rule[0] || !utf8_is_valid(v.reason, strlen(v.reason)))
		abort();
	for (const char *c = v.reason; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
	free(text);
	return 0;
}
