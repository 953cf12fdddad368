/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/error.h"
#include "core/snapshot/changeset_json.h"

/* Attributes lost by a copy in the snapshot (docs/dryrun.md, "Directory
 * renames"). The overlay cannot rename a directory of the lower layer
 * (EXDEV), so `mv d e` copies it; the copy is the command's own, in the
 * quarantine, and cannot always take an attribute the real rename keeps (a
 * user.* attribute of a read-only file: setting one needs write access; an
 * ACL naming an id the quarantine does not map). Each lower directory that
 * is gone (a whiteout at its place, as mv's removal leaves, or now of
 * another type; or made again over its lower self, opaque, and lost
 * entries) and carried attributes somewhere below it is walked side by
 * side, by name, with each new directory of the upper (created, or of a
 * new type). An upper object of the same type, mode (write bits aside) and
 * content (a file's bytes; a directory holding every name the lower one
 * held, each of the same type and a file of the same size, save one that a
 * new object of its type, time and size in a directory that was there
 * before may stand for, moved out first; and the same modification time
 * when it held none) that lacks an attribute the lower
 * one carried, or holds it with another value, is a copy that lost it. A
 * directory made again is weaker evidence (refilled by `tar -x`, say): its
 * copy must hold every name it held, and each object its time.
 * ret_problems: [{attrs_lost: NEW PATH, from: OLD PATH, names: [NAME...]}]
 * (paths as changeset_set_bytes() stores them), at most 32, then
 * {attrs_lost: "...", dropped: N}; empty when nothing was lost. A copy
 * made on purpose without its attributes (`cp -r d e; rm -r d`) looks the
 * same, and is reported the same. */
int changeset_attrs_lost(const char *upper, const char *workspace, const struct changeset *cs,
			 json_t **ret_problems, struct error *err);
