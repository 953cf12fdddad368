/* SPDX-License-Identifier: MIT */
#pragma once

#include <linux/filter.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

/* The seccomp filter every quarantined command runs under. Refused system
 * calls return to the supervisor as user notifications, which answers EPERM
 * and records each one; foreign architectures kill the process.
 *
 * The rules are compiled to BPF with libseccomp when airlock is built
 * (tools/gen_syscall_filter.c), not at every run: that cost 0.5 ms and a
 * dozen page faults per start. syscall_filter_build() hands out the compiled
 * program; syscall_filter_compile() is the compiler behind it, which the
 * build tool and the unit tests call. */
struct syscall_filter {
	const struct sock_filter *insns;
	unsigned short len;
	unsigned n_rules;
	bool owned; /* insns is malloc()ed (compiled here, not embedded) */
};

/* What a program adds to the refusals every run has (flags may be or-ed).
 *
 * SYSCALL_FILTER_TRACE_WRITES: the system calls that write to a path also
 * come to the supervisor, which records the paths and lets each call go on
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): for a record of what was attempted,
 * never for a decision, since the path can change after it is read.
 *
 * SYSCALL_FILTER_TRACE_READS (with SYSCALL_FILTER_TRACE_WRITES): the opens
 * that only read come to the supervisor too, for the reads of a
 * hard-linked file of the workspace (docs/sandbox.md, "Read tracing"); a
 * round trip per open, which a dry run of a workspace that held no such
 * file leaves out.
 *
 * SYSCALL_FILTER_MEDIATE_CONNECT: for kernels whose Landlock cannot scope
 * pathname Unix sockets (ABI < 9). Every connect() comes to the supervisor,
 * which performs it on the command's behalf (src/sandbox/sockbroker.c), and
 * AF_UNIX datagram sockets (SOCK_DGRAM, and SOCK_RAW, which the kernel makes
 * a datagram socket) are refused in socket() and socketpair(): a datagram's
 * destination is in sendmsg()'s memory, which the filter cannot read.
 *
 * SYSCALL_FILTER_NO_COPY_OFFLOAD: for a workspace that is a dry run's
 * overlay. copy_file_range() answers EXDEV and the FICLONE, FICLONERANGE
 * and FIDEDUPERANGE ioctls EOPNOTSUPP, in the filter itself (no
 * notification, nothing recorded: what a copy across file systems gets),
 * so that programs copy with read() and write(): the overlay checks a
 * copy's range against its own inode's size, which is stale for a name
 * whose other name was written (docs/sandbox.md, "Read tracing"). */
enum {
	SYSCALL_FILTER_TRACE_WRITES = 1U << 0,
	SYSCALL_FILTER_MEDIATE_CONNECT = 1U << 1,
	SYSCALL_FILTER_TRACE_READS = 1U << 2,
	SYSCALL_FILTER_NO_COPY_OFFLOAD = 1U << 3,
	_SYSCALL_FILTER_FLAGS_ALL = (1U << 4) - 1,
};
/* The flags of the program a run loads: the one selector (isolate.c asks
 * it for a run's program and, when reads may go untraced, for the one
 * without read tracing). Read tracing comes only with write tracing. */
unsigned syscall_filter_flags(bool trace_writes, bool trace_reads, bool mediate_connect,
			      bool no_copy_offload);
/* Whether flags are a combination syscall_filter_flags() gives: the
 * programs tools/gen_syscall_filter.c embeds, and no other. */
bool syscall_filter_flags_valid(unsigned flags);
/* Whether a program for flags is embedded (syscall_filter_bpf.c). */
bool syscall_filter_embedded(unsigned flags);
/* The embedded program for flags, handed out without a copy; -EINVAL for
 * flags none is embedded for. */
int syscall_filter_build(struct syscall_filter *ret, unsigned flags, struct error *err);
/* The program for flags compiled now with libseccomp (the generator's,
 * and the unit tests'); -EINVAL for flags syscall_filter_flags_valid()
 * refuses. */
int syscall_filter_compile(struct syscall_filter *ret, unsigned flags, struct error *err);

/* A traced system call: which arguments are paths, and the directory
 * descriptor each is relative to (-1: the cwd). */
struct syscall_trace {
	const char *name;
	signed char path_arg[2], dirfd_arg[2]; /* -1: none */
	signed char flags_arg; /* open flags: traced only when they write */
};
/* Whether a call with these arguments asks for a set-user-ID or
 * set-group-ID bit (a chmod, or a create with such a mode): the filter
 * refuses those in every run, and the supervisor refuses them in a traced
 * run too, where the same system calls also come to it to be recorded. */
bool syscall_filter_sets_id(int nr, const __u64 args[6]);
/* The errno a refused call gets: EAFNOSUPPORT for a socket family the
 * filter refuses, EPROTONOSUPPORT for a netlink protocol other than route
 * (what a kernel without them answers, so programs fall back as they
 * would there), EPERM for everything else. Decided on the caller's
 * registers, as the filter's rules are. */
int syscall_filter_refusal_errno(int nr, const __u64 args[6]);
/* The trace entry for a syscall number of the native architecture, or NULL. */
const struct syscall_trace *syscall_filter_traced(int nr);
void syscall_filter_release(struct syscall_filter *filter);
/* The name of a syscall for a receipt, or NULL; the string is static. */
const char *syscall_filter_name(int nr, uint32_t arch);
/* The AUDIT_ARCH_* value of the architecture airlock runs on. */
uint32_t syscall_filter_native_arch(void);
