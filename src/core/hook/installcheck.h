/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/error.h"
#include "core/hook/install.h"

/* `airlock install --check` (docs/gate.md, "Installing"): every settings
 * file the host merges (the agenthost table: project, user, system), read
 * once each, and what is wrong with each. The front end prints the
 * findings. */

enum installcheck_kind {
	INSTALLCHECK_MISSING, /* the target does not exist: no airlock hooks */
	INSTALLCHECK_UNREADABLE, /* it cannot be read (detail: why): what it says is not known */
	INSTALLCHECK_NOT_JSON, /* not a JSON object (detail: the parser's words, at line) */
	INSTALLCHECK_FOUND, /* detail: one line of install_check() or install_check_toml(),
			     * or the "hooks" shape the host does not read either */
};

struct installcheck_finding {
	enum installcheck_kind kind;
	char *path;
	char *detail;
	int line; /* INSTALLCHECK_NOT_JSON: the parser's line */
};

struct installcheck_findings {
	struct installcheck_finding *items;
	size_t n;
};

void installcheck_findings_release(struct installcheck_findings *f);

/* The target file (where `install` writes), and every other settings file
 * host merges, for the project DIR (NULL: the current directory's, and its
 * parents up to the repository's root), read with the environment env
 * ($HOME, the host's home_env, the files' env). A file that does not exist
 * is nothing, but the target; one that cannot be read, or is not what the
 * host reads, is a finding: the host may read it all the same. Findings
 * are in the order the files are read, and kept in *ret on an error too
 * (those before it). */
int installcheck_run(const struct agent_host *host, const struct install_command *cmd,
		     char *const *env, const char *project, const char *target,
		     struct installcheck_findings *ret, struct error *err);
