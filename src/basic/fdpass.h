/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

/* Passing one descriptor over a Unix socket (SCM_RIGHTS) with a one-byte
 * message. fdpass_send() makes a single raw syscall and allocates nothing,
 * so a child between clone() and execve() may call it. */
bool fdpass_send(int sock, int fd);
/* Returns the received descriptor (close-on-exec), or -1; never blocks. */
int fdpass_receive(int sock);
