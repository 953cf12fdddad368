/* SPDX-License-Identifier: MIT */
#include "core/net/netconfine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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

/* What a proxy never does, refused (EPERM): run a program, make a
 * process (threads only: clone3, whose flags a filter cannot read, answers
 * ENOSYS and glibc falls back to clone), trace or read another process,
 * mount, change namespaces, load code into the kernel; and sockets of
 * other families than Unix (nscd), IPv4, IPv6 and netlink (getaddrinfo's
 * AI_ADDRCONFIG), EAFNOSUPPORT. A list of refusals, not of permissions:
 * what getaddrinfo and the C library call differs between versions, and a
 * proxy killed by a call it needed would refuse every connection. Other
 * architectures' calls kill (libseccomp's default for them). */
static int netconfine_seccomp(struct error *err)
{
	static const int refused[] = {
		SCMP_SYS(execve),
		SCMP_SYS(execveat),
		SCMP_SYS(fork),
		SCMP_SYS(vfork),
		SCMP_SYS(ptrace),
		SCMP_SYS(process_vm_readv),
		SCMP_SYS(process_vm_writev),
		SCMP_SYS(pidfd_getfd),
		SCMP_SYS(kcmp),
		SCMP_SYS(mount),
		SCMP_SYS(umount2),
		SCMP_SYS(pivot_root),
		SCMP_SYS(chroot),
		SCMP_SYS(unshare),
		SCMP_SYS(setns),
		SCMP_SYS(fsopen),
		SCMP_SYS(fsmount),
		SCMP_SYS(move_mount),
		SCMP_SYS(open_tree),
		SCMP_SYS(bpf),
		SCMP_SYS(perf_event_open),
		SCMP_SYS(userfaultfd),
		SCMP_SYS(keyctl),
		SCMP_SYS(add_key),
		SCMP_SYS(request_key),
		SCMP_SYS(init_module),
		SCMP_SYS(finit_module),
		SCMP_SYS(delete_module),
		SCMP_SYS(kexec_load),
		SCMP_SYS(open_by_handle_at),
		SCMP_SYS(personality),
		SCMP_SYS(io_uring_setup),
	};
	static const int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < sizeof(refused) / sizeof(refused[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), refused[i], 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0) /* a clone without CLONE_THREAD is a new process */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	/* Families: every number below the largest kept that is not kept,
	 * then every one above it. */
	for (int f = 0; r == 0 && f <= AF_NETLINK; f++) {
		bool kept = false;
		for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
			kept = kept || families[i] == f;
		if (!kept)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)f, 0));
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_GT, (scmp_datum_t)AF_NETLINK, 0));
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? error_set(err, -r, "the proxy's seccomp filter") : 0;
}

int netconfine_bounding(struct error *err)
{
	bool root = geteuid() == 0;

	/* While CAP_SETPCAP is still held (a uid change from root clears
	 * it): as root an EPERM is an error; unprivileged (no CAP_SETPCAP,
	 * EPERM) the set gives nothing without a setuid program, which
	 * NO_NEW_PRIVS and the seccomp filter refuse. EINVAL: past the
	 * kernel's last capability. */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL &&
		    (errno != EPERM || root))
			return error_set(err, errno, "PR_CAPBSET_DROP %d", cap);
	return 0;
}

int netconfine_apply(pid_t parent, bool *ret_landlock, struct error *err)
{
	bool root = geteuid() == 0;
	/* The bounding set first, before the uid change. */
	int b = netconfine_bounding(err);
	if (b < 0)
		return b;
	if (root && (setgroups(0, NULL) < 0 ||
		     setresgid(NETCONFINE_NOBODY, NETCONFINE_NOBODY, NETCONFINE_NOBODY) < 0 ||
		     setresuid(NETCONFINE_NOBODY, NETCONFINE_NOBODY, NETCONFINE_NOBODY) < 0))
		return error_set(err, errno, "cannot become nobody");
	/* Then the sets themselves: nothing comes back. */
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
	int r = netconfine_landlock(ret_landlock, err);
	return r < 0 ? r : netconfine_seccomp(err);
}
