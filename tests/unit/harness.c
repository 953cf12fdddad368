/* SPDX-License-Identifier: MIT */
#include "harness.h"

int harness_run(const struct harness_test *tests, size_t n)
{
	size_t failed = 0;

	printf("1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		harness_failed = false;
		tests[i].fn();
		printf("%sok %zu - %s\n", harness_failed ? "not " : "", i + 1, tests[i].name);
		failed += harness_failed;
	}
	printf("# %zu passed, %zu failed\n", n - failed, failed);
	return failed ? 1 : 0;
}
