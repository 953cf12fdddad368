/* SPDX-License-Identifier: MIT */
/* The only file that includes <seccomp.h>. */
#include "sandbox/syscall_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/netlink.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "sandbox/sandbox.h"

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Refused outright: debugging other processes, kernel keyrings, eBPF and
 * perf, userfaultfd, io_uring (it bypasses this filter), the mount API, new
 * or joined namespaces, kexec and modules, and a few host-wide knobs. */
static const char *const denied_syscalls[] = {
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"mount",
	"umount2",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"open_tree",
	"move_mount",
	"mount_setattr",
	"pivot_root",
	"chroot",
	"setns",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"reboot",
	"swapon",
	"swapoff",
	"syslog",
	"acct",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"quotactl",
	"lookup_dcookie",
	"name_to_handle_at",
	"open_by_handle_at",
	"iopl",
	"ioperm",
	"vhangup",
};

static const uint64_t namespace_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP,
};

/* System calls that create, change or remove what a path names. */
static const struct syscall_trace traced_syscalls[] = {
	{ "open", { 0, -1 }, { -1, -1 }, 1 },	       { "creat", { 0, -1 }, { -1, -1 }, -1 },
	{ "openat", { 1, -1 }, { 0, -1 }, 2 }, /* openat2 answers ENOSYS: see below */
	{ "mkdir", { 0, -1 }, { -1, -1 }, -1 },	       { "mkdirat", { 1, -1 }, { 0, -1 }, -1 },
	{ "mknod", { 0, -1 }, { -1, -1 }, -1 },	       { "mknodat", { 1, -1 }, { 0, -1 }, -1 },
	{ "unlink", { 0, -1 }, { -1, -1 }, -1 },       { "unlinkat", { 1, -1 }, { 0, -1 }, -1 },
	{ "rmdir", { 0, -1 }, { -1, -1 }, -1 },	       { "rename", { 0, 1 }, { -1, -1 }, -1 },
	{ "renameat", { 1, 3 }, { 0, 2 }, -1 },	       { "renameat2", { 1, 3 }, { 0, 2 }, -1 },
	{ "link", { 1, -1 }, { -1, -1 }, -1 },	       { "linkat", { 3, -1 }, { 2, -1 }, -1 },
	{ "symlink", { 1, -1 }, { -1, -1 }, -1 },      { "symlinkat", { 2, -1 }, { 1, -1 }, -1 },
	{ "truncate", { 0, -1 }, { -1, -1 }, -1 },     { "chmod", { 0, -1 }, { -1, -1 }, -1 },
	{ "fchmodat", { 1, -1 }, { 0, -1 }, -1 },      { "fchmodat2", { 1, -1 }, { 0, -1 }, -1 },
	{ "chown", { 0, -1 }, { -1, -1 }, -1 },	       { "lchown", { 0, -1 }, { -1, -1 }, -1 },
	{ "fchownat", { 1, -1 }, { 0, -1 }, -1 },      { "utimes", { 0, -1 }, { -1, -1 }, -1 },
	{ "utimensat", { 1, -1 }, { 0, -1 }, -1 },     { "setxattr", { 0, -1 }, { -1, -1 }, -1 },
	{ "lsetxattr", { 0, -1 }, { -1, -1 }, -1 },    { "removexattr", { 0, -1 }, { -1, -1 }, -1 },
	{ "lremovexattr", { 0, -1 }, { -1, -1 }, -1 },
};

const struct syscall_trace *syscall_filter_traced(int nr)
{
	for (size_t i = 0; i < ARRAY_SIZE(traced_syscalls); i++)
		if (seccomp_syscall_resolve_name(traced_syscalls[i].name) == nr)
			return &traced_syscalls[i];
	return NULL;
}

static int syscall_filter_add_traces(scmp_filter_ctx ctx, unsigned flags, unsigned *n_rules)
{
	for (size_t i = 0; i < ARRAY_SIZE(traced_syscalls); i++) {
		const struct syscall_trace *t = &traced_syscalls[i];
		int nr = seccomp_syscall_resolve_name(t->name);
		int r;
		if (nr == __NR_SCMP_ERROR)
			continue;
		if (t->flags_arg < 0) {
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
			if (r < 0)
				return r;
			(*n_rules)++;
			continue;
		}
		/* The opens that can write (write access, O_CREAT, O_TRUNC),
		 * to be recorded; with SYSCALL_FILTER_TRACE_READS those that
		 * only read too (the last rule), so that the supervisor can
		 * note a read of a hard-linked file of the workspace (a name
		 * whose snapshot view may be stale). */
		const struct {
			uint64_t mask, value;
		} writes[] = { { O_ACCMODE, O_WRONLY },
			       { O_ACCMODE, O_RDWR },
			       { O_CREAT, O_CREAT },
			       { O_TRUNC, O_TRUNC },
			       { O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY } };
		size_t n_writes = ARRAY_SIZE(writes) - ((flags & SYSCALL_FILTER_TRACE_READS) ? 0 : 1);
		for (size_t k = 0; k < n_writes; k++) {
			struct scmp_arg_cmp cmp = { .arg = (unsigned)t->flags_arg,
						    .op = SCMP_CMP_MASKED_EQ,
						    .datum_a = writes[k].mask,
						    .datum_b = writes[k].value };
			r = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, 1, &cmp);
			if (r < 0)
				return r;
			(*n_rules)++;
		}
	}
	return 0;
}

/* Set-user-ID and set-group-ID bits: any system call whose mode argument
 * asks for one is refused (docs/sandbox.md, "No set-id files"), whoever
 * calls airlock: the workspace is the host's, and a set-id file left there
 * runs with its owner's rights outside the quarantine, where nosuid no
 * longer holds. The opens count only with O_CREAT or O_TMPFILE, the
 * kernel's WILL_CREATE(): otherwise the mode is ignored (glibc passes 0).
 * mkdir ignores the bits too, but is refused alike so that one rule holds. */
static const struct {
	const char *name;
	signed char mode_arg, flags_arg; /* flags_arg -1: always a mode */
} setid_syscalls[] = {
	{ "chmod", 1, -1 },   { "fchmod", 1, -1 }, { "fchmodat", 2, -1 }, { "fchmodat2", 2, -1 },
	{ "open", 2, 1 },     { "openat", 3, 2 },  { "creat", 1, -1 },	  { "mkdir", 1, -1 },
	{ "mkdirat", 2, -1 }, { "mknod", 1, -1 },  { "mknodat", 2, -1 },
};
static const uint64_t setid_bits[] = { S_ISUID, S_ISGID };
/* __O_TMPFILE without O_DIRECTORY, as the kernel tests it. */
static const uint64_t setid_create_flags[] = { O_CREAT, O_TMPFILE & ~O_DIRECTORY };

bool syscall_filter_sets_id(int nr, const __u64 args[6])
{
	for (size_t i = 0; i < ARRAY_SIZE(setid_syscalls); i++) {
		if (seccomp_syscall_resolve_name(setid_syscalls[i].name) != nr)
			continue;
		int f = setid_syscalls[i].flags_arg; /* NOLINT(bugprone-signed-char-misuse): an argument index, -1 for none */
		bool creates = f < 0 || (args[f] & setid_create_flags[0]) ||
			       (args[f] & setid_create_flags[1]);
		return creates && (args[setid_syscalls[i].mode_arg] & (S_ISUID | S_ISGID));
	}
	return false;
}

/* One rule per bit (and per creating flag): a masked compare of the mode
 * argument, so no other bit of it matters. */
static int syscall_filter_add_setid(scmp_filter_ctx ctx, unsigned *n_rules)
{
	for (size_t i = 0; i < ARRAY_SIZE(setid_syscalls); i++) {
		int nr = seccomp_syscall_resolve_name(setid_syscalls[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue;
		for (size_t b = 0; b < ARRAY_SIZE(setid_bits); b++) {
			struct scmp_arg_cmp cmp[2] = {
				{ .arg = (unsigned)setid_syscalls[i].mode_arg,
				  .op = SCMP_CMP_MASKED_EQ,
				  .datum_a = setid_bits[b],
				  .datum_b = setid_bits[b] },
			};
			for (size_t c = 0; c < ARRAY_SIZE(setid_create_flags); c++) {
				unsigned n = 1;
				if (setid_syscalls[i].flags_arg >= 0) {
					cmp[1] = (struct scmp_arg_cmp){
						.arg = (unsigned)setid_syscalls[i].flags_arg,
						.op = SCMP_CMP_MASKED_EQ,
						.datum_a = setid_create_flags[c],
						.datum_b = setid_create_flags[c],
					};
					n = 2;
				}
				int r = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, n, cmp);
				if (r < 0)
					return r;
				(*n_rules)++;
				if (n == 1)
					break; /* no flags: one rule per bit */
			}
		}
	}
	/* openat2 passes its flags and mode in a struct the filter cannot read:
	 * report it missing, and callers fall back to openat (as glibc does
	 * for clone3 below). */
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	if (r < 0)
		return r;
	(*n_rules)++;
	return 0;
}

/* The socket families a command may create: Unix, IPv4, IPv6, and netlink
 * for its route protocol alone (getaddrinfo's AI_ADDRCONFIG and `ip` read
 * the quarantine's own addresses through it). Every other family is
 * refused in socket() and socketpair(): vsock reaches the host's hypervisor
 * and guests whatever the network namespace, packet and XDP sockets the
 * raw link layer, AF_ALG the kernel's crypto code, and the rest is code the
 * command has no need of (docs/sandbox.md, "Socket families"). The family
 * is compared on all 64 bits of the register: one whose high bits are set
 * (which the kernel, reading an int, ignores) is above the highest allowed
 * value and refused too. */
static const uint64_t allowed_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
#define FAMILY_MAX_ALLOWED AF_NETLINK

static bool syscall_filter_family_allowed(uint64_t family)
{
	for (size_t i = 0; i < ARRAY_SIZE(allowed_families); i++)
		if (family == allowed_families[i])
			return true;
	return false;
}

int syscall_filter_refusal_errno(int nr, const __u64 args[6])
{
	if (nr != seccomp_syscall_resolve_name("socket") &&
	    nr != seccomp_syscall_resolve_name("socketpair"))
		return EPERM;
	if (!syscall_filter_family_allowed(args[0]))
		return EAFNOSUPPORT; /* as from a kernel without the family */
	if (args[0] == AF_NETLINK && args[2] != NETLINK_ROUTE)
		return EPROTONOSUPPORT;
	return EPERM; /* an AF_UNIX datagram socket (SYSCALL_FILTER_MEDIATE_CONNECT) */
}

/* libseccomp takes one comparison per argument in a rule, so the refused
 * families are each value up to the highest allowed one, and everything
 * above it. */
static int syscall_filter_add_families(scmp_filter_ctx ctx, unsigned *n_rules)
{
	const int creators[] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
	for (size_t i = 0; i < ARRAY_SIZE(creators); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, creators[i], 1,
					 SCMP_A0_64(SCMP_CMP_GT, FAMILY_MAX_ALLOWED, 0));
		if (r < 0)
			return r;
		(*n_rules)++;
		for (uint64_t family = 0; family < FAMILY_MAX_ALLOWED; family++) {
			if (syscall_filter_family_allowed(family))
				continue;
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, creators[i], 1,
					     SCMP_A0_64(SCMP_CMP_EQ, family, 0));
			if (r < 0)
				return r;
			(*n_rules)++;
		}
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, creators[i], 2,
				     SCMP_A0_64(SCMP_CMP_EQ, AF_NETLINK, 0),
				     SCMP_A2_64(SCMP_CMP_NE, NETLINK_ROUTE, 0));
		if (r < 0)
			return r;
		(*n_rules)++;
	}
	return 0;
}

static void seccomp_ctx_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int syscall_filter_add_rules(scmp_filter_ctx ctx, unsigned *n_rules)
{
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(denied_syscalls); i++) {
		int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
		if (r < 0)
			return r;
		(*n_rules)++;
	}
	/* New namespaces: any namespace flag in clone() or unshare(). */
	for (size_t i = 0; i < ARRAY_SIZE(namespace_flags); i++) {
		uint64_t f = namespace_flags[i];
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(clone), 1,
				     SCMP_A0_64(SCMP_CMP_MASKED_EQ, f, f));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(unshare), 1,
					     SCMP_A0_64(SCMP_CMP_MASKED_EQ, f, f));
		if (r < 0)
			return r;
		*n_rules += 2;
	}
	/* clone3 passes its flags in memory the filter cannot read: report it
	 * missing, and libc falls back to clone(), which is checked above. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0)
		return r;
	(*n_rules)++;
	/* Typing into the terminal: TIOCSTI and TIOCLINUX, compared on the low
	 * 32 bits so high bits in the request cannot slip past (CVE-2019-10063). */
	const unsigned long ioctls[] = { TIOCSTI, TIOCLINUX };
	for (size_t i = 0; i < ARRAY_SIZE(ioctls); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
				     SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ioctls[i]));
		if (r < 0)
			return r;
		(*n_rules)++;
	}
	return 0;
}

/* The rules of SYSCALL_FILTER_MEDIATE_CONNECT. Arguments the kernel reads
 * as int are compared on their low 32 bits, so high bits cannot slip past. */
static int syscall_filter_add_socket_rules(scmp_filter_ctx ctx, unsigned *n_rules)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
	if (r < 0)
		return r;
	(*n_rules)++;
	const int creators[] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
	const uint64_t datagram_types[] = { SOCK_DGRAM, SOCK_RAW };
	for (size_t i = 0; i < ARRAY_SIZE(creators); i++)
		for (size_t k = 0; k < ARRAY_SIZE(datagram_types); k++) {
			/* the type's low four bits; the rest are SOCK_NONBLOCK/CLOEXEC */
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, creators[i], 2,
					     SCMP_A0_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, AF_UNIX),
					     SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xfULL, datagram_types[k]));
			if (r < 0)
				return r;
			(*n_rules)++;
		}
	return 0;
}

/* The rules of SYSCALL_FILTER_NO_COPY_OFFLOAD. Answered by the filter
 * (SCMP_ACT_ERRNO), never the supervisor: each is a plain errno a program
 * falls back from (coreutils' cat and cp on EXDEV and on any failed clone,
 * the kernel's own answer across file systems or on one without reflinks),
 * not a refusal for the receipt's denials. The ioctl requests are compared
 * on their low 32 bits, as the kernel reads them. */
static int syscall_filter_add_copy_offload(scmp_filter_ctx ctx, unsigned *n_rules)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EXDEV), SCMP_SYS(copy_file_range), 0);
	if (r < 0)
		return r;
	(*n_rules)++;
	const unsigned long ioctls[] = { FICLONE, FICLONERANGE, FIDEDUPERANGE };
	for (size_t i = 0; i < ARRAY_SIZE(ioctls); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), SCMP_SYS(ioctl), 1,
				     SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ioctls[i]));
		if (r < 0)
			return r;
		(*n_rules)++;
	}
	return 0;
}

unsigned syscall_filter_flags(bool trace_writes, bool trace_reads, bool mediate_connect,
			      bool no_copy_offload)
{
	return (trace_writes ? SYSCALL_FILTER_TRACE_WRITES : 0) |
	       (trace_writes && trace_reads ? SYSCALL_FILTER_TRACE_READS : 0) |
	       (mediate_connect ? SYSCALL_FILTER_MEDIATE_CONNECT : 0) |
	       (no_copy_offload ? SYSCALL_FILTER_NO_COPY_OFFLOAD : 0);
}

bool syscall_filter_flags_valid(unsigned flags)
{
	if (flags & ~(unsigned)_SYSCALL_FILTER_FLAGS_ALL)
		return false;
	/* Read tracing is a part of write tracing's notifications: alone it
	 * would build the program without it again. */
	return !(flags & SYSCALL_FILTER_TRACE_READS) || (flags & SYSCALL_FILTER_TRACE_WRITES);
}

int syscall_filter_compile(struct syscall_filter *ret, unsigned flags, struct error *err)
{
	if (!syscall_filter_flags_valid(flags))
		return error_set(err, EINVAL, "no seccomp filter is built for flags 0x%x", flags);
	cleanup_with(seccomp_ctx_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return error_set(err, ENOMEM, "cannot create seccomp filter");
	unsigned n_rules = 0;
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* the child sets it itself */
	if (r == 0)
		r = syscall_filter_add_rules(ctx, &n_rules);
	if (r == 0)
		r = syscall_filter_add_setid(ctx, &n_rules);
	if (r == 0)
		r = syscall_filter_add_families(ctx, &n_rules);
	if (r == 0 && (flags & SYSCALL_FILTER_TRACE_WRITES))
		r = syscall_filter_add_traces(ctx, flags, &n_rules);
	if (r == 0 && (flags & SYSCALL_FILTER_MEDIATE_CONNECT))
		r = syscall_filter_add_socket_rules(ctx, &n_rules);
	if (r == 0 && (flags & SYSCALL_FILTER_NO_COPY_OFFLOAD))
		r = syscall_filter_add_copy_offload(ctx, &n_rules);
	if (r < 0)
		return error_set_errno(err, -r, "cannot build seccomp filter");

	cleanup_close int fd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot create memfd for seccomp filter");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return error_set_errno(err, -r, "cannot export seccomp filter");
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > USHRT_MAX)
		return error_set(err, EINVAL, "seccomp filter has an odd size %lld", (long long)size);
	struct sock_filter *insns = malloc((size_t)size);
	if (!insns)
		return error_set(err, ENOMEM, "out of memory");
	if (pread(fd, insns, (size_t)size, 0) != size) {
		free(insns);
		return error_set_errno(err, errno ? errno : EIO, "cannot read seccomp filter");
	}
	*ret = (struct syscall_filter){
		.insns = insns,
		.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter)),
		.n_rules = n_rules,
		.owned = true,
	};
	return 0;
}

void syscall_filter_release(struct syscall_filter *filter)
{
	if (filter->owned)
		free((void *)filter->insns);
	filter->insns = NULL;
	filter->owned = false;
}

uint32_t syscall_filter_native_arch(void)
{
	return seccomp_arch_native();
}

const char *syscall_filter_name(int nr, uint32_t arch)
{
	static char name[64];
	char *resolved = seccomp_syscall_resolve_num_arch(arch, nr);

	if (!resolved)
		return NULL;
	snprintf(name, sizeof(name), "%s", resolved);
	free(resolved);
	return name;
}
