/* SPDX-License-Identifier: MIT */
/* Landlock's uapi, spelled out: Debian 12's kernel headers stop at ABI 2,
 * and airlock uses what the running kernel offers, up to ABI 9. */
#pragma once

#include <stdint.h>

#define AL_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define AL_LANDLOCK_RULE_PATH_BENEATH	   1

#define AL_FS_EXECUTE	  (1ULL << 0)
#define AL_FS_WRITE_FILE  (1ULL << 1)
#define AL_FS_READ_FILE	  (1ULL << 2)
#define AL_FS_READ_DIR	  (1ULL << 3)
#define AL_FS_REMOVE_DIR  (1ULL << 4)
#define AL_FS_REMOVE_FILE (1ULL << 5)
#define AL_FS_MAKE_CHAR	  (1ULL << 6)
#define AL_FS_MAKE_DIR	  (1ULL << 7)
#define AL_FS_MAKE_REG	  (1ULL << 8)
#define AL_FS_MAKE_SOCK	  (1ULL << 9)
#define AL_FS_MAKE_FIFO	  (1ULL << 10)
#define AL_FS_MAKE_BLOCK  (1ULL << 11)
#define AL_FS_MAKE_SYM	  (1ULL << 12)
#define AL_FS_REFER	  (1ULL << 13) /* ABI 2 */
#define AL_FS_TRUNCATE	  (1ULL << 14) /* ABI 3 */
#define AL_FS_IOCTL_DEV	  (1ULL << 15) /* ABI 5 */
/* ABI 9 (Linux 7.1, commit "landlock: Control pathname UNIX domain socket
 * resolution by path"; ABI 8 was LANDLOCK_RESTRICT_SELF_TSYNC): connect()
 * and sendmsg() to a pathname Unix socket created outside the domain. The
 * bit is the one after IOCTL_DEV, as in the uapi header and the selftests;
 * no kernel here offers ABI 9 to test it on. */
#define AL_FS_RESOLVE_UNIX (1ULL << 16)

#define AL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define AL_SCOPE_SIGNAL		      (1ULL << 1) /* ABI 6 */

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule	     445
#define __NR_landlock_restrict_self  446
#endif

struct al_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped; /* ABI 6 */
};

struct al_landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));
