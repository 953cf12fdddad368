#!/usr/bin/env python3
"""Mid-test `[ A ] && [ B ]` lists in the bats suites: bats runs a test under
`set -e`, which ignores a failure of any command of an && list but the last,
so `[ A ] && [ B ]` passes when A is false. Each assertion goes on a line of
its own. Reports every such line (exit 1); with --fix, splits them.
A list with `||` (`... || skip`, `... || { ...; return 1; }`) or one that ends
in continue/break/return is a condition, not an assertion, and is left alone.
"""
import glob
import re
import sys


def split_top(line, sep=" && "):
    """line split at sep outside quotes, $(...), [[ ]] nesting; None if unbalanced."""
    parts, cur, i, depth, quote = [], "", 0, 0, None
    while i < len(line):
        c = line[i]
        if quote:
            cur += c
            if c == "\\" and quote == '"' and i + 1 < len(line):
                cur += line[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if depth == 0 and line.startswith(sep, i):
            parts.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += c
        i += 1
    if quote or depth:
        return None
    parts.append(cur)
    return parts


def is_assertion(part):
    p = part.strip()
    return (p.startswith("[ ") and p.endswith(" ]")) or (p.startswith("[[ ") and p.endswith(" ]]"))


def check(path, fix):
    out, found, in_test = [], [], False
    for n, line in enumerate(open(path).read().split("\n"), 1):
        if line.startswith("@test "):
            in_test = True
        elif line == "}":
            in_test = False
        body = line.lstrip("\t")
        indent = line[: len(line) - len(body)]
        parts = split_top(body) if in_test and " && " in body and "||" not in body else None
        if parts and len(parts) > 1 and all(is_assertion(p) for p in parts):
            found.append(f"{path}:{n}: {body}")
            if fix:
                out.extend(indent + p.strip() for p in parts)
                continue
        out.append(line)
    if fix and found:
        open(path, "w").write("\n".join(out))
    return found


def main():
    fix = "--fix" in sys.argv[1:]
    files = [a for a in sys.argv[1:] if a != "--fix"] or sorted(glob.glob("tests/cli/*.bats") + glob.glob("tests/hosts/*.bats"))
    found = [f for path in files for f in check(path, fix)]
    for f in found:
        print(f)
    if found and not fix:
        print(f"check-andlists: {len(found)} assertion lists that set -e does not check whole; one assertion a line (scripts/check-andlists.py --fix)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
