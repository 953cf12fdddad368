#!/usr/bin/env python3
"""Forges ledger/index (docs/ledger.md, "The index") as an attacker who knows
its layout would: every slot and every open failure it lists is pointed at
the log line that starts at OFFSET, and the head's SHA-256 is made to match,
so only the confirmation against the log can tell. With "fill", every slot
is taken (none by a path of the log) while the head still counts what it did.
    forge-index.py INDEX OFFSET [fill]"""
import hashlib
import struct
import sys

HEAD = 8192
path, offset = sys.argv[1], int(sys.argv[2])
fill = sys.argv[3:] == ["fill"]
data = bytearray(open(path, "rb").read())
nslots, = struct.unpack_from("<Q", data, 80)
n_open, = struct.unpack_from("<I", data, 96)
for i in range(n_open):
    struct.pack_into("<Q", data, 168 + 16 * i, offset)
for i in range(nslots):
    at = HEAD + 16 * i
    if fill:
        struct.pack_into("<QQ", data, at, i + 1, offset + 1)
    elif struct.unpack_from("<Q", data, at + 8)[0]:
        struct.pack_into("<Q", data, at + 8, offset + 1)
# the head up to its last open failure listed (airlock-ledger-index/2)
head_size = 168 + 16 * min(n_open, 480)
head = bytearray(data[:head_size])
head[136:168] = bytes(32)
data[136:168] = hashlib.sha256(head).digest()
open(path, "wb").write(data)
