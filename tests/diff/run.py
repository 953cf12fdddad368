#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The differential test of dryrun + apply (issues 11 and 20). For each seed,
a random file-system script (gen.py) runs for real in one copy of a tree and
through `airlock dryrun` + `airlock apply` in another; their manifests
(manifest.py: type, mode, owner and group, content hash, link target,
device numbers, hard-link groups, xattrs and ACLs) must be equal. Then
`rollback` must give back the original tree, and a second `apply` the real
run's tree again.

  run.py [--all] [--wide] [--real=direct|airlock] [--strict] [--review] [--minimize[=N]]
         [--minimize-for=SYM[,SYM...]] FIRST LAST

The real run (--real):
  airlock  `airlock run`, the same quarantine as the dry run (the default
           for an unprivileged caller);
  direct   `sh` straight in the copy, with every capability the caller has
           (the default as root: root's real run is what issue 20 compares
           against). It runs in a mount namespace of its own where only the
           copy and a scratch tmpfs ($TMPDIR) are writable, so a write
           through a symlink out of the tree fails as it does in the dry
           run (EROFS), and the host is never written.

Each seed lands in one category:
  reproduced         the manifests match (a NO_EFFECT whose real run changed
                     nothing too);
  named verdict      the dry run ended in a verdict other than DRY_RUN_OK,
                     NO_EFFECT and OUTSIDE_WRITE (which is applied with
                     --allow-outside-writes), or apply refused with a status
                     of its own, and the tree was left as it was: a named
                     refusal, counted by name;
  silent difference  DRY_RUN_OK, NO_EFFECT or OUTSIDE_WRITE, and what apply
                     left (or the tree, for NO_EFFECT) differs from the real
                     run. Each is counted by symptom, from the manifests'
                     difference: presence (a path on one side only), type,
                     device, owner, mode, setid, content, hardlinks, xattr
                     (a seed may have several);
  mode not shown     (--review, implied by --wide) the result is right, but
                     a path whose mode the real run changed has no mode in
                     its change set entry, nor is it in the also_names of
                     an entry with that mode (the other names of a
                     hard-link group whose shared inode's mode changed): a
                     change no reviewer was shown;
  error              anything else: the real run or the dry run did not
                     finish, rollback or a second apply differs, a named
                     refusal changed the tree.
Exit status: the silent differences, unshown modes and errors (plus the named
verdicts with --strict), at most 100. The summary's "N differ" counts the
same seeds.

--wide adds issue 20's steps (gen.py: link groups, mode + content, read-only
files with attributes under renamed directories, chowns, set-id files,
mknod). --minimize shrinks the script, then the base tree, of a silent
difference (at most N per symptom, default 3; --minimize-for=SYM[,SYM...]
only for those) by dropping lines, chunks
first, while the seed stays a silent difference with that symptom, and
keeps the result, names spelled out, as min.SYMPTOM.sh with the seed.

AIRLOCK names the binary; DIFF_PROGRESS=1 prints a line per seed. A failing
seed is kept under $DIFF_KEEP (default: a temporary directory that is then
left in place) with its scripts and manifests."""
import base64
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402
from common import airlock, binary as airlock_binary, dryrun, remove, sh  # noqa: E402
from manifest import esc, manifest  # noqa: E402

APPLIED = ("DRY_RUN_OK", "OUTSIDE_WRITE")

# The real run with --real=direct: $1 the copy, $2 the scratch directory,
# $3 the script. Only the copy and the scratch tmpfs stay writable.
DIRECT = ('mount --bind "$1" "$1" && mount -t tmpfs scratch "$2" && '
          'mount -o remount,bind,ro / && cd "$1" && TMPDIR="$2" exec sh -c "$3"')


def symptoms(want, got):
    """What differs between two manifests: sorted words joined by "+"."""
    a, b = set(want.splitlines()), set(got.splitlines())
    out = set()

    def entries(lines):
        d = {}
        for line in lines:
            f = line.split(" ")
            if f[0] not in ("hardlinks", "xattr"):
                d[f[0]] = f
        return d
    ea, eb = entries(a - b), entries(b - a)
    for path in set(ea) | set(eb):
        x, y = ea.get(path), eb.get(path)
        kinds = {z[1] for z in (x, y) if z}
        if kinds & {"chr", "blk"}:
            out.add("device")
            continue
        if x is None or y is None or x[1] != y[1]:
            out.add("presence" if x is None or y is None else "type")
            continue
        if x[1] == "symlink":  # path symlink "" uid:gid target
            out.add("owner" if x[3] != y[3] else "content")
            continue
        mx, my = int(x[2], 8), int(y[2], 8)
        if (mx ^ my) & 0o6000:
            out.add("setid")
        if (mx ^ my) & 0o1777:
            out.add("mode")
        if x[3] != y[3]:
            out.add("owner")
        if x[4:] != y[4:]:
            out.add("content")
    if {line for line in a ^ b if line.startswith("hardlinks ")}:
        out.add("hardlinks")
    if {line for line in a ^ b if line.startswith("xattr ")}:
        out.add("xattr")
    return "+".join(sorted(out)) or "other"


def unshown_modes(original, want, changes):
    """Paths whose mode the real run changed (same path, same type) and
    whose change set entry shows no mode: a mode change no reviewer saw. A
    name of a hard-link group is shown by the entry of the name whose mode
    changed in place when it lists it in also_names with the mode the real
    run left (one inode: docs/dryrun.md, "Hard links of the tree")."""
    def modes(text):
        d = {}
        for line in text.splitlines():
            f = line.split(" ")
            if f[0] not in ("hardlinks", "xattr") and f[1] != "symlink":
                d[f[0]] = (f[1], f[2])
        return d
    a, b = modes(original), modes(want)
    changed = {p for p in a if p in b and a[p][0] == b[p][0] and a[p][1] != b[p][1]}
    def name(o):
        return esc(base64.b64decode(o["path_b64"]) if "path_b64" in o else o.get("path", "").encode()) or "."
    shown = set()
    for c in changes:
        if "mode" in c:
            shown.add(name(c))
            shown |= {p for p in map(name, c.get("also_names", [])) if p in b and int(b[p][1], 8) == int(c["mode"], 8)}
    return sorted(changed - shown)


def diff_text(tmp, want, got, lines=8):
    with open(os.path.join(tmp, "want.manifest"), "w") as f:
        f.write(want)
    with open(os.path.join(tmp, "got.manifest"), "w") as f:
        f.write(got)
    d = subprocess.run(["diff", os.path.join(tmp, "want.manifest"), os.path.join(tmp, "got.manifest")],
                       capture_output=True, text=True, errors="replace", check=False).stdout
    return "\n".join(d.splitlines()[:lines])


def clean(tmp):
    for n in ("real", "dry", "state", "state.real", "scratch"):
        remove(os.path.join(tmp, n))


def one(base, script, real_mode, binary, tmp, quick=False, review=False):
    """(category, detail): category is "same", "named VERDICT", "silent" (the
    detail then starts with the symptoms), "unshown" (review: the result is
    right, but a mode change is missing from the change set) or "error".
    quick: no rollback and no second apply."""
    real, dry, state = (os.path.join(tmp, n) for n in ("real", "dry", "state"))
    clean(tmp)
    os.mkdir(dry)
    os.mkdir(real)
    with open(os.path.join(tmp, "base.sh"), "w") as f:
        f.write("\n".join(base) + "\n")
    with open(os.path.join(tmp, "script.sh"), "w") as f:
        f.write("\n".join(script) + "\n")
    # built twice rather than copied: an unprivileged cp -a cannot read a
    # directory with mode 000
    sh("\n".join(base), dry)
    sh("\n".join(base), real)
    original = manifest(dry)
    if real_mode == "direct":
        scratch = os.path.join(tmp, "scratch")
        os.mkdir(scratch)
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", DIRECT, "sh",
                            real, scratch, "\n".join(script)], capture_output=True, check=False)
    else:
        p = airlock(binary, state + ".real", real, "run", "--", "sh", "-c", "\n".join(script))
    # An unprivileged real run that left a directory it cannot read (mode
    # 000) ends in 14, the workspace not checked for code for the host
    # (docs/exit-codes.md): the command finished, nothing was moved aside,
    # and the tree is what it left.
    unchecked = (real_mode != "direct" and p.returncode == 14 and
                 b"could not be checked for code left for the host" in p.stderr)
    if p.returncode != 0 and not unchecked:
        return "error", "run: status %d: %s" % (p.returncode, p.stderr[:300])
    want = manifest(real)
    doc, verdict, rid, p = dryrun(binary, state, dry, "\n".join(script))
    if doc is None:
        return "error", "dryrun: status %d: %s" % (p.returncode, p.stderr[:300])
    if verdict == "NO_EFFECT":
        if want == original:
            return "same", None
        return "silent", "%s NO_EFFECT, yet the real run changed the tree:\n%s" % (
            symptoms(want, original), diff_text(tmp, want, original))
    if verdict not in APPLIED:
        got = manifest(dry)
        if got != original:
            return "error", "verdict %s, yet the tree changed:\n%s" % (verdict, diff_text(tmp, original, got))
        return "named " + verdict, json.dumps(doc["dryrun"].get("problems"))[:300]
    allow = ["--allow-outside-writes"] if verdict == "OUTSIDE_WRITE" else []
    steps = [(["apply", *allow], want, "apply differs from the real run"),
             (["rollback"], original, "rollback differs from the original"),
             (["apply", *allow], want, "a second apply differs from the real run")][:1 if quick else 3]
    for n, (cmd, expected, what) in enumerate(steps):
        p = airlock(binary, state, tmp, *cmd, rid)
        got = manifest(dry)
        if p.returncode != 0:
            if n == 0 and got == original and p.returncode in (20, 21):
                return "named apply-exit-%d" % p.returncode, p.stderr.decode(errors="replace")[:300]
            return "error", "%s: status %d: %s" % (cmd[0], p.returncode, p.stderr[:300])
        if got != expected:
            if n == 0:
                return "silent", "%s %s:\n%s" % (symptoms(expected, got), what,
                                                 diff_text(tmp, expected, got))
            return "error", "%s:\n%s" % (what, diff_text(tmp, expected, got))
    if review and not doc["dryrun"].get("truncated"):
        hidden = unshown_modes(original, want, doc["dryrun"].get("changes", []))
        if hidden:
            return "unshown", "mode changes the change set does not show: %s" % " ".join(hidden[:8])
    return "same", None


def minimize(base, script, real_mode, binary, tmp, symptom):
    """The base and script with lines dropped, chunks first, while the seed
    stays a silent difference that shows symptom."""
    def still(b, s):
        cat, detail = one(b, s, real_mode, binary, tmp, quick=True)
        return cat == "silent" and symptom in detail.split(" ", 1)[0].split("+")

    def shrink(lines, test):
        n = max(len(lines) // 2, 1)
        while True:
            i = 0
            while i < len(lines):
                trial = lines[:i] + lines[i + n:]
                if test(trial):
                    lines = trial
                else:
                    i += n
            if n == 1:
                return lines
            n //= 2

    # the script's frame (set +e, TMPDIR=..., rm -rf "$TMPDIR", true) stays
    body = shrink(script[2:-2], lambda t: still(base, script[:2] + t + script[-2:]))
    script = script[:2] + body + script[-2:]
    return shrink(base, lambda t: still(t, script)), script


_PRINTF = re.compile(r"\"\$\(printf '((?:\\[0-7]{3})*)'\)\"|printf '((?:\\[0-7]{3})*)'")


def readable(line):
    """A generated line with its octal-escaped names and data spelled out
    where they are printable, for a person to read."""
    def sub(m):
        octal = m.group(1) if m.group(1) is not None else m.group(2)
        data = bytes(int(o, 8) for o in re.findall(r"[0-7]{3}", octal))
        if m.group(1) is not None:  # a name: one sh word
            text = data.decode("utf-8", "replace")
            if data.isascii() and all(0x20 <= c < 0x7f and c != 0x27 for c in data):
                return "'%s'" % text
            return m.group(0)
        out = "".join(chr(c) if 0x20 <= c < 0x7f and chr(c) not in "\\'%" else
                      {10: "\\n"}.get(c, "\\%03o" % c) for c in data)
        return "printf '%s'" % out
    return _PRINTF.sub(sub, line).replace(" 2>/dev/null", "")


def main():
    args = sys.argv[1:]
    include_all = "--all" in args
    wide = "--wide" in args
    strict = "--strict" in args
    review = "--review" in args or wide
    real_mode = "direct" if os.geteuid() == 0 else "airlock"
    min_per, only = 0, None
    rest = []
    for a in args:
        if a.startswith("--real="):
            real_mode = a.split("=", 1)[1]
        elif a == "--minimize":
            min_per = 3
        elif a.startswith("--minimize-for="):
            only = a.split("=", 1)[1].split(",")
            min_per = min_per or 3
        elif a.startswith("--minimize="):
            min_per = int(a.split("=", 1)[1])
        elif a not in ("--all", "--wide", "--strict", "--review"):
            rest.append(a)
    if len(rest) != 2 or real_mode not in ("direct", "airlock"):
        sys.stderr.write("usage: run.py [--all] [--wide] [--real=direct|airlock] [--strict] [--review] [--minimize[=N]] "
                         "FIRST LAST\n")
        return 125
    first, last = int(rest[0]), int(rest[1])
    binary = airlock_binary()
    tmp = tempfile.mkdtemp(prefix="airlock-diff.")
    keep = os.environ.get("DIFF_KEEP", os.path.join(tmp, "failures"))
    progress = bool(os.environ.get("DIFF_PROGRESS"))
    reproduced, named, silent, errors, unshown = 0, {}, [], [], []
    by_symptom, minimized = {}, {}
    for seed in range(first, last + 1):
        base = gen.generate(seed, "base", include_all, wide)
        script = gen.generate(seed, "script", include_all, wide)
        cat, detail = one(base, script, real_mode, binary, tmp, review=review)
        if progress:  # one line per seed, for a long run cut short
            print("seed %d: %s%s" % (seed, cat, " " + detail.split("\n", 1)[0] if cat == "silent" else ""),
                  flush=True)
        if cat == "same":
            reproduced += 1
            continue
        failing = cat in ("silent", "error", "unshown") or strict
        syms = []
        if cat.startswith("named "):
            named.setdefault(cat[6:], []).append(seed)
        elif cat == "silent":
            silent.append(seed)
            syms = detail.split(" ", 1)[0].split("+")
            for sym in syms:
                by_symptom.setdefault(sym, []).append(seed)
        elif cat == "unshown":
            unshown.append(seed)
        else:
            errors.append(seed)
        if not failing:
            continue
        sys.stderr.write("seed %d: %s: %s\n" % (seed, cat, detail))
        dest = os.path.join(keep, str(seed))
        os.makedirs(dest, exist_ok=True)
        for name in ("base.sh", "script.sh", "want.manifest", "got.manifest"):
            if os.path.exists(os.path.join(tmp, name)):
                shutil.copy(os.path.join(tmp, name), dest)
        # one minimization a seed, for the first of its symptoms still short
        sym = next((x for x in syms if minimized.get(x, 0) < min_per and x in (only or syms)), None)
        if sym:
            minimized[sym] = minimized.get(sym, 0) + 1
            b, s = minimize(base, script, real_mode, binary, tmp, sym)
            _, detail = one(b, s, real_mode, binary, tmp)
            with open(os.path.join(dest, "min.%s.sh" % sym), "w") as f:
                f.write("# seed %d, %s, real run: %s\n# base\n%s\n# script\n%s\n# %s\n" % (
                    seed, sym, real_mode, "\n".join(map(readable, b)), "\n".join(map(readable, s[2:-2])),
                    detail.replace("\n", "\n# ")))
            sys.stderr.write("seed %d: minimized for %s: %s\n" % (seed, sym, os.path.join(dest, "min.%s.sh" % sym)))
    failed = len(silent) + len(errors) + len(unshown)
    if strict:
        failed += sum(len(v) for v in named.values())
    total = last - first + 1
    flags = " ".join(f for f, on in (("--all", include_all), ("--wide", wide)) if on)
    print("seeds %d..%d (real run: %s%s): %d scripts, %d differ" % (first, last, real_mode,
                                                                   ", " + flags if flags else "", total, failed))
    print("reproduced %d" % reproduced)
    print("named verdict %d%s" % (sum(len(v) for v in named.values()), "".join(
        "\n  %s %d: seeds %s" % (k, len(v), " ".join(map(str, v))) for k, v in sorted(named.items()))))
    print("silent difference %d%s" % (len(silent), ": seeds " + " ".join(map(str, silent)) if silent else ""))
    for k, v in sorted(by_symptom.items()):
        print("  symptom %s %d: seeds %s" % (k, len(v), " ".join(map(str, v))))
    if review:
        print("mode change not shown %d%s" % (len(unshown), ": seeds " + " ".join(map(str, unshown)) if unshown else ""))
    print("error %d%s" % (len(errors), ": seeds " + " ".join(map(str, errors)) if errors else ""))
    if failed or minimized:
        sys.stderr.write("failures kept in %s\n" % keep)
    else:
        remove(tmp)
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main())
