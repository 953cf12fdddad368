#!/usr/bin/env python3
"""Writes default_policy.c from policy/default.json: the document's bytes as
`policy_default_json` (what scripts/embed.py writes), the SHA-256 of those
bytes (`policy_default_sha256`: what receipts record as the built-in
policy's digest, computed here once instead of at every start), and the
document as `struct policy` values: `policy_default_scalars` (numbers and
switches) and `policy_default_lists` (each list field's offset and strings),
which policy.c copies instead of parsing the document at every start; and
the whole policy as one read-only struct, `policy_default_builtin` (its
lists in read-only arrays), which policy_builtin() hands out to a reader
that changes nothing, with no copy to make and free.
FIELDS below maps each key of the document to its field; a key not in it
fails the build. tests/unit/test_core.c compares the result, field by field,
with the document parsed by policy.c's parser, so the two cannot drift."""
import hashlib
import json
import sys


def reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        sys.exit("embed-policy.py: duplicate key %r" % dups[0])
    return pairs


def reject_constant(name):
    sys.exit("embed-policy.py: %s is not JSON" % name)


def c_string(s):
    """A C string literal of s's UTF-8 bytes: every byte but a letter or
    digit as a 3-digit octal escape."""
    return '"' + "".join(chr(b) if chr(b).isascii() and chr(b).isalnum()
                         else "\\%03o" % b for b in s.encode()) + '"'


# key path -> (field, kind): "u64" a number, "list" strings, "set" an object
# of strings as "NAME=VALUE" entries, ("either", FIRST, SECOND) true when the
# string is SECOND, "bool" a JSON boolean. "schema" is checked, not stored.
FIELDS = {
    ("deny_argv0",): ("deny_argv0", "list"),
    ("timeout", "default_ms"): ("default_timeout_ms", "u64"),
    ("timeout", "max_ms"): ("max_timeout_ms", "u64"),
    ("timeout", "kill_after_ms"): ("kill_after_ms", "u64"),
    ("env", "allow"): ("env_allow", "list"),
    ("env", "secret_patterns"): ("secret_patterns", "list"),
    ("env", "set"): ("env_set", "set"),
    ("output", "keep_bytes"): ("keep_bytes", "u64"),
    ("output", "spill_max_bytes"): ("spill_max_bytes", "u64"),
    ("limits", "max_argv_bytes"): ("max_argv_bytes", "u64"),
    ("limits", "core_bytes"): ("core_bytes", "u64"),
    ("limits", "open_files"): ("open_files", "u64"),
    ("limits", "file_size_bytes"): ("file_size_bytes", "u64"),
    ("limits", "processes"): ("processes", "u64"),
    ("limits", "memory_bytes"): ("memory_bytes", "u64"),
    ("limits", "cpu_seconds"): ("cpu_seconds", "u64"),
    ("receipts", "fsync"): ("fsync_receipts", "bool"),
    ("sandbox", "profile"): ("sandbox_enabled", ("either", "none", "default")),
    ("sandbox", "hide"): ("hide", "list"),
    ("sandbox", "home"): ("home_hidden", ("either", "visible", "hidden")),
    ("sandbox", "home_allow"): ("home_allow", "list"),
    ("sandbox", "read_only"): ("read_only", "list"),
    ("sandbox", "tmp_bytes"): ("tmp_bytes", "u64"),
    ("sandbox", "net"): ("share_net", ("either", "loopback", "host")),
    ("sandbox", "writable"): ("writable", "list"),
    ("gate", "trivial"): ("gate_trivial", "list"),
    ("hooks", "unknown_opens_failure"): ("hooks_unknown_opens_failure", "bool"),
    ("gate", "cancelled_opens_failure"): ("gate_cancelled_opens_failure", "bool"),
}


def fail(msg):
    sys.exit("embed-policy.py: " + msg)


def string(v, where):
    if not isinstance(v, str) or "\0" in v:
        fail("%s must be a string without NUL bytes" % where)
    return c_string(v)


def fields(doc):
    """(scalars, lists): C initializers of the fields the document sets."""
    scalars, lists = [], []
    for k, v in doc.pairs:
        if k == "schema":
            continue
        items = v.pairs if isinstance(v, Obj) and (k,) not in FIELDS else [(None, v)]
        for sub, x in items:
            path = (k,) if sub is None else (k, sub)
            if path not in FIELDS:
                fail("%s is not a field embed-policy.py knows" % ".".join(path))
            field, kind = FIELDS[path]
            where = ".".join(path)
            if kind == "u64":
                if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 2**63:
                    fail("%s must be a non-negative integer" % where)
                scalars.append("\t.%s = %dULL," % (field, x))
            elif kind == "bool":
                if not isinstance(x, bool):
                    fail("%s must be true or false" % where)
                scalars.append("\t.%s = %s," % (field, "true" if x else "false"))
            elif kind == "list":
                if not isinstance(x, list):
                    fail("%s must be a list" % where)
                lists.append((field, [string(e, where) for e in x]))
            elif kind == "set":
                if not isinstance(x, Obj):
                    fail("%s must be an object" % where)
                lists.append((field, [c_string(n)[:-1] + "=" + string(e, where)[1:]
                                      for n, e in x.pairs]))
            else:
                if x not in kind[1:]:
                    fail("%s must be %r or %r" % (where, kind[1], kind[2]))
                scalars.append("\t.%s = %s," % (field, "true" if x == kind[2] else "false"))
    return scalars, lists


class Obj:
    def __init__(self, pairs):
        self.pairs = pairs


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    doc = json.loads(data, object_pairs_hook=lambda p: Obj(reject_duplicates(p)),
                     parse_constant=reject_constant)
    if not isinstance(doc, Obj):
        sys.exit("embed-policy.py: the document is not an object")
    scalars, lists = fields(doc)
    with open(dst, "w") as out:
        out.write("/* generated from %s by scripts/embed-policy.py; do not edit */\n" %
                  src.split("/")[-1])
        out.write("#include <stdbool.h>\n#include <stddef.h>\n\n")
        out.write("#include \"core/policy/policy.h\"\n#include \"core/policy/policy_embed.h\"\n\n")
        out.write("const char policy_default_json[] = {\n")
        for i in range(0, len(data), 16):
            out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
        out.write("\t0x00\n};\n\n")
        out.write("const char policy_default_sha256[] = \"%s\";\n\n" %
                  hashlib.sha256(data).hexdigest())
        out.write("const struct policy policy_default_scalars = {\n%s\n};\n\n" %
                  "\n".join(scalars))
        out.write("const struct policy_embed_list policy_default_lists[] = {\n")
        for field, items in lists:
            out.write("\t{ offsetof(struct policy, %s), (const char *const[]){\n" % field)
            for e in items:
                out.write("\t\t%s,\n" % e)
            out.write("\t\tNULL } },\n")
        out.write("\t{ 0, NULL },\n};\n\n")
        # The lists' arrays are const (a write through the char ** faults);
        # the casts only fit them to struct policy's field types.
        out.write("const struct policy policy_default_builtin = {\n")
        out.write("\t.origin = (char *)\"default\",\n")
        out.write("\t.sha256 = \"%s\",\n" % hashlib.sha256(data).hexdigest())
        for line in scalars:
            out.write(line + "\n")
        for field, items in lists:
            out.write("\t.%s = (char **)(const char *const[]){\n" % field)
            for e in items:
                out.write("\t\t%s,\n" % e)
            out.write("\t\tNULL },\n")
        out.write("};\n")


main()
