/* SPDX-License-Identifier: MIT */
/* Property: shell_script_parse() never crashes; every command it returns
 * has a non-empty argv; a plain script names no reason, a non-plain one
 * does; and the masking of a non-plain script says so. */
#include <stdint.h>
#include <stdlib.h>

#include "core/shellwords.h"

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
	return 0;
}
