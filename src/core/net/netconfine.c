/* SPDX-License-Identifier: MIT */
#include "core/net/netconfine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/landlock_abi.h"

#define NETCONFINE_NOBODY 65534

static int netconfine_landlock(bool *ret_applied, struct error *err)
{
	static const char *const readable[] = { "/etc", "/usr", "/lib", "/lib64", "/lib32", "/run" };
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, AL_LANDLOCK_CREATE_RULESET_VERSION);

	*ret_applied = false;
	if (abi < 1)
		return 0; /* no Landlock: reported, not fatal */
	uint64_t fs = (AL_FS_MAKE_SYM << 1) - 1; /* ABI 1's thirteen rights */
	if (abi >= 2)
		fs |= AL_FS_REFER;
	if (abi >= 3)
		fs |= AL_FS_TRUNCATE;
	if (abi >= 5)
		fs |= AL_FS_IOCTL_DEV;
	struct al_landlock_ruleset_attr attr = {
		.handled_access_fs = fs,
		.scoped = abi >= 6 ? AL_SCOPE_ABSTRACT_UNIX_SOCKET | AL_SCOPE_SIGNAL : 0,
	};
	int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0)
		return error_set(err, errno, "landlock_create_ruleset");
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof(readable) / sizeof(readable[0]); i++) {
		int fd = open(readable[i], O_PATH | O_CLOEXEC | O_DIRECTORY);
		if (fd < 0)
			continue; /* absent here (/lib32): nothing to allow */
		struct al_landlock_path_beneath_attr pb = {
			.allowed_access = AL_FS_EXECUTE | AL_FS_READ_FILE | AL_FS_READ_DIR,
			.parent_fd = fd,
		};
		if (syscall(__NR_landlock_add_rule, ruleset, AL_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			r = error_set(err, errno, "landlock_add_rule '%s'", readable[i]);
		close(fd);
	}
	if (r == 0 && syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		r = error_set(err, errno, "landlock_restrict_self");
	close(ruleset);
	if (r == 0)
		*ret_applied = true;
	return r;
}

int netconfine_apply(pid_t parent, bool *ret_landlock, struct error *err)
{
	if (geteuid() == 0 && (setgroups(0, NULL) < 0 ||
			       setresgid(NETCONFINE_NOBODY, NETCONFINE_NOBODY, NETCONFINE_NOBODY) < 0 ||
			       setresuid(NETCONFINE_NOBODY, NETCONFINE_NOBODY, NETCONFINE_NOBODY) < 0))
		return error_set(err, errno, "cannot become nobody");
	/* The bounding set, then the sets themselves: nothing comes back. */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return error_set(err, errno, "PR_CAPBSET_DROP %d", cap);
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	if (syscall(SYS_capset, &hdr, data) < 0)
		return error_set(err, errno, "capset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return error_set(err, errno, "PR_SET_NO_NEW_PRIVS");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return error_set(err, errno, "PR_SET_DUMPABLE");
	/* After the uid change, which clears it; then the parent may have
	 * died already. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return error_set(err, errno, "PR_SET_PDEATHSIG");
	if (parent > 0 && getppid() != parent)
		return error_set(err, ESRCH, "the supervisor is gone");
	return netconfine_landlock(ret_landlock, err);
}
