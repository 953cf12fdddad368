#!/usr/bin/env python3
"""Writes default_policy.c from policy/default.json: the document's bytes as
`policy_default_json` (what scripts/embed.py writes), the same document
compact (`policy_default_compact_json`: what policy.c parses, a third
fewer bytes for jansson) and the SHA-256 of its bytes
(`policy_default_sha256`: what receipts record as the built-in policy's
digest, computed here once instead of at every start)."""
import hashlib
import json
import sys


def reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        sys.exit("embed-policy.py: duplicate key %r" % dups[0])
    return dict(pairs)


def reject_constant(name):
    sys.exit("embed-policy.py: %s is not JSON" % name)


def c_bytes(out, decl, data):
    out.write("%s = {\n" % decl)
    for i in range(0, len(data), 16):
        out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
    out.write("\t0x00\n};\n")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    doc = json.loads(data, object_pairs_hook=reject_duplicates,
                     parse_constant=reject_constant)
    compact = json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()
    with open(dst, "w") as out:
        out.write("/* generated from %s by scripts/embed-policy.py; do not edit */\n" %
                  src.split("/")[-1])
        out.write("#include \"core/policy/policy_embed.h\"\n\n")
        c_bytes(out, "const char policy_default_json[]", data)
        c_bytes(out, "const char policy_default_compact_json[]", compact)
        out.write("const char policy_default_sha256[] = \"%s\";\n" %
                  hashlib.sha256(data).hexdigest())


main()
