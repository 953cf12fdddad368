#!/usr/bin/env python3
"""Writes default_policy.c from policy/default.json: the document's bytes as
`policy_default_json` (what scripts/embed.py writes), the SHA-256 of those
bytes (`policy_default_sha256`: what receipts record as the built-in
policy's digest, computed here once instead of at every start), and
`policy_default_doc()`, which builds the same document as jansson values
without lexing it (a third of a hook call's file check went to lexing it);
policy.c reads it with the parser that reads a policy file."""
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


class Emitter:
    def __init__(self):
        self.lines = []
        self.n = 0

    def value(self, v):
        """A C expression for a scalar, or the variable of a container."""
        if isinstance(v, Obj):
            name = "v%d" % self.n
            self.n += 1
            self.lines.append("\tjson_t *%s = json_object();" % name)
            self.lines.append("\tok = %s != NULL && ok;" % name)
            for k, x in v.pairs:
                self.lines.append("\tok = json_object_set_new(%s, %s, %s) == 0 && ok;" %
                                  (name, c_string(k), self.value(x)))
            return name
        if isinstance(v, list):
            name = "v%d" % self.n
            self.n += 1
            self.lines.append("\tjson_t *%s = json_array();" % name)
            self.lines.append("\tok = %s != NULL && ok;" % name)
            for x in v:
                self.lines.append("\tok = json_array_append_new(%s, %s) == 0 && ok;" %
                                  (name, self.value(x)))
            return name
        if v is True:
            return "json_true()"
        if v is False:
            return "json_false()"
        if v is None:
            return "json_null()"
        if isinstance(v, int):
            if not -2**63 <= v < 2**63:
                sys.exit("embed-policy.py: %d does not fit a json_int_t" % v)
            return "json_integer(%dLL)" % v
        if isinstance(v, str):
            if "\0" in v:
                sys.exit("embed-policy.py: a string holds a NUL byte")
            return "json_string(%s)" % c_string(v)
        sys.exit("embed-policy.py: %r is not an object, array, string, integer, "
                 "boolean or null" % (v,))


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
    em = Emitter()
    root = em.value(doc)
    with open(dst, "w") as out:
        out.write("/* generated from %s by scripts/embed-policy.py; do not edit */\n" %
                  src.split("/")[-1])
        out.write("#include <jansson.h>\n#include <stdbool.h>\n#include <stddef.h>\n\n")
        out.write("#include \"core/policy/policy_embed.h\"\n\n")
        out.write("const char policy_default_json[] = {\n")
        for i in range(0, len(data), 16):
            out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
        out.write("\t0x00\n};\n\n")
        out.write("const char policy_default_sha256[] = \"%s\";\n\n" %
                  hashlib.sha256(data).hexdigest())
        out.write("json_t *policy_default_doc(void)\n{\n\tbool ok = true;\n\n")
        out.write("\n".join(em.lines) + "\n")
        out.write("\tif (!ok) {\n\t\tjson_decref(%s);\n\t\treturn NULL;\n\t}\n" % root)
        out.write("\treturn %s;\n}\n" % root)


main()
