/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/error.h"

/* The paths a Codex apply_patch text names: every line that is, after its
 * leading and trailing whitespace, "*** Add File: P", "*** Update File: P",
 * "*** Delete File: P" or "*** Move to: P". Read over the whole text, not
 * only inside "*** Begin Patch" ... "*** End Patch": a shell command that
 * feeds a patch to apply_patch (a heredoc) is scanned the same way, and a
 * line read too many only refuses more. Paths are as written (relative to
 * the patch's cwd, or absolute). *ret is a NULL-terminated strv, empty when
 * there are none. */
int patchpaths_parse(const char *text, size_t n, char ***ret, struct error *err);
