/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"

/* What the allowlist proxy process does to itself before it serves
 * (docs/network.md, "The proxy process"): as root it becomes
 * nobody:nogroup; it drops every capability (the bounding set too), sets
 * no-new-privileges, becomes undumpable, dies with `parent`, and under
 * Landlock may read only what name resolution and its libraries need
 * (/etc, /usr, /lib*, /run for a resolv.conf link) and write nowhere, so
 * airlock's state directory is out of its reach. *ret_landlock: whether
 * Landlock applied (false on a kernel without it: the receipt says so).
 * The process keeps its network: it is the one that connects. */
int netconfine_apply(pid_t parent, bool *ret_landlock, struct error *err);

/* Drops the capability bounding set (all of it): done by netconfine_apply()
 * before its uid change, and by the proxy at its start, before it waits
 * for a first connection. As root a refusal is an error. */
int netconfine_bounding(struct error *err);
