/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/error.h"

/* The server name a TLS client asks for in its ClientHello: what the
 * allowlist proxy compares with a tunnel's CONNECT host before it forwards
 * a byte (docs/network.md). OpenSSL's libssl reads it (loaded with
 * dlopen() on first use): the bytes go to a server-side SSL object over a
 * memory BIO whose servername callback records the name and aborts the
 * handshake, so no TLS is parsed by hand and no handshake is completed. */

#define NETSNI_NAME_MAX 255

int netsni_load(struct error *err);

/* data: the first bytes the client sent in the tunnel. Returns 0 with
 * name[] the SNI (lower-cased; "" when the ClientHello has none), -EAGAIN
 * when the ClientHello is not complete yet, -EPROTO when it carries
 * encrypted_client_hello (the real name is hidden), -EINVAL when the bytes
 * are not a ClientHello OpenSSL accepts. */
int netsni_parse(const void *data, size_t n, char name[NETSNI_NAME_MAX + 1], struct error *err);
