#!/usr/bin/env python3
"""Writes rules_json.c from policy/rules.json: the document's bytes as
`policy_rules_json` (what scripts/embed.py writes), and the same rules split
for loading on demand (src/core/policy/rules_embed.h): the document without
its wrappers and rules, each wrapper and each rule as its own compact JSON
text, and an index from every argv0 name to the wrappers and rules that
name it, in document order. A hook call then parses the few rules its
command names, not all of them. The split texts are jansson's to parse at
run time, like the document; a unit test (test_gate.c) holds the split form
to the document's verdicts."""
import json
import sys


def reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        sys.exit("embed-rules.py: duplicate key %r" % dups[0])
    return dict(pairs)


def c_bytes(out, name, data):
    out.write("static const char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
    out.write("\t0x00\n};\n")


def c_string(s):
    """A C string literal of s's UTF-8 bytes: every byte but a letter or
    digit as a 3-digit octal escape."""
    return '"' + "".join(chr(b) if chr(b).isascii() and chr(b).isalnum()
                         else "\\%03o" % b for b in s.encode()) + '"'


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode()


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    doc = json.loads(data, object_pairs_hook=reject_duplicates)
    wrappers = doc.get("wrappers", [])
    rules = doc.get("rules", [])
    head = {k: v for k, v in doc.items() if k not in ("wrappers", "rules")}
    index = {}
    for kind, items in ((0, wrappers), (1, rules)):
        for i, item in enumerate(items):
            names = item.get("argv0") if isinstance(item, dict) else None
            if not isinstance(names, list) or not names or \
                    not all(isinstance(n, str) and n for n in names):
                sys.exit("embed-rules.py: %s[%d].argv0 is not a list of names" %
                         (("wrappers", "rules")[kind], i))
            for n in dict.fromkeys(names):
                index.setdefault(n, ([], []))[kind].append(i)
    if len(wrappers) > 65535 or len(rules) > 65535:
        sys.exit("embed-rules.py: too many rules")

    with open(dst, "w") as out:
        out.write("/* generated from %s by scripts/embed-rules.py; do not edit */\n" %
                  src.split("/")[-1])
        out.write("#include <stddef.h>\n\n#include \"core/policy/rules_embed.h\"\n\n")
        out.write("const char policy_rules_json[] = {\n")
        for i in range(0, len(data), 16):
            out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
        out.write("\t0x00\n};\n\n")
        c_bytes(out, "rules_head", compact(head))
        for kind, items in (("wrapper", wrappers), ("rule", rules)):
            for i, item in enumerate(items):
                c_bytes(out, "rules_%s_%d" % (kind, i), compact(item))
            out.write("const char *const policy_rules_%ss[] = {\n" % kind)
            for i in range(len(items)):
                out.write("\trules_%s_%d,\n" % (kind, i))
            out.write("\tNULL\n};\n")
            out.write("const size_t policy_rules_n_%ss = %d;\n\n" % (kind, len(items)))
        # A rule with subcommands matches only a command with one of them
        # among its words: rules.c skips the others unparsed.
        for i, item in enumerate(rules):
            subs = item.get("subcommands")
            if isinstance(subs, list) and subs and all(isinstance(w, str) for w in subs):
                out.write("static const char *const rules_subcommands_%d[] = { %s, NULL };\n" %
                          (i, ", ".join(c_string(w) for w in subs)))
        out.write("const char *const *const policy_rules_subcommands[] = {\n")
        for i, item in enumerate(rules):
            subs = item.get("subcommands")
            ok = isinstance(subs, list) and subs and all(isinstance(w, str) for w in subs)
            out.write("\t%s,\n" % ("rules_subcommands_%d" % i if ok else "NULL"))
        out.write("\tNULL\n};\n\n")
        names = sorted(index, key=lambda s: s.encode())
        for k, n in enumerate(names):
            for kind, ids in zip(("wrappers", "rules"), index[n]):
                out.write("static const unsigned short rules_%s_of_%d[] = { %s };\n" %
                          (kind, k, ", ".join(str(i) for i in ids + [65535])))
        out.write("const char *const policy_rules_head_json = rules_head;\n")
        out.write("const struct rules_embed_name policy_rules_names[] = {\n")
        for k, n in enumerate(names):
            out.write("\t{ %s, rules_wrappers_of_%d, rules_rules_of_%d },\n" %
                      (c_string(n), k, k))
        out.write("};\n")
        out.write("const size_t policy_rules_n_names = %d;\n" % len(names))


main()
