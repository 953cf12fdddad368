/* SPDX-License-Identifier: MIT */
#pragma once

#include <linux/filter.h>
#include <stdint.h>

#include "basic/error.h"

/* The seccomp filter every quarantined command runs under, compiled to BPF
 * in the parent (libseccomp allocates; the child only loads it). Refused
 * system calls return to the supervisor as user notifications, which answers
 * EPERM and records each one; foreign architectures kill the process. */
struct syscall_filter {
	struct sock_filter *insns;
	unsigned short len;
	unsigned n_rules;
};

int syscall_filter_build(struct syscall_filter *ret, struct error *err);
void syscall_filter_release(struct syscall_filter *filter);
/* The name of a syscall for a receipt, or NULL; the string is static. */
const char *syscall_filter_name(int nr, uint32_t arch);
