/* SPDX-License-Identifier: MIT */
/* A small TAP harness: each test is a function; a failed ASSERT_* reports
 * file:line and returns from the test. Output ends with "# N passed, N failed". */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct harness_test {
	const char *name;
	void (*fn)(void);
};

extern bool harness_failed;

#define T_(fn)          \
	{               \
#fn, fn \
	}

#define ASSERT_TRUE(cond)                                                            \
	do {                                                                         \
		if (!(cond)) {                                                       \
			printf("# %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
			harness_failed = true;                                       \
			return;                                                      \
		}                                                                    \
	} while (0)

#define ASSERT_EQ_INT(a, b)                                                                        \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_) {                                                                    \
			printf("# %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, \
			       b_);                                                                \
			harness_failed = true;                                                     \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define ASSERT_EQ_STR(a, b)                                                                        \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                           \
			printf("# %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
			       a_ ? a_ : "(null)", b_ ? b_ : "(null)");                            \
			harness_failed = true;                                                     \
			return;                                                                    \
		}                                                                                  \
	} while (0)

int harness_run(const struct harness_test *tests, size_t n);

#define RUN_TESTS(...)                                                       \
	bool harness_failed;                                                 \
	int main(void)                                                       \
	{                                                                    \
		static const struct harness_test tests[] = { __VA_ARGS__ };  \
		return harness_run(tests, sizeof(tests) / sizeof(tests[0])); \
	}
