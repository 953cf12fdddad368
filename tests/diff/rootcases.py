#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Root's cases of issue 20, measured (docs/dryrun.md, "Root"). Each case is
a starting tree and a script. The script runs directly as root (no airlock:
root's real run) in one copy, and through `airlock dryrun` + `airlock apply`
in another; the manifests (owners included) are
compared. Each case is

  reproduces  the verdict is DRY_RUN_OK (or NO_EFFECT) and apply gives the
              real run's tree exactly
  named       a verdict that names what the dry run cannot do
              (PRIVILEGED_FILE, NEEDS_PRIVILEGE): nothing is applied
  refused     DRY_RUN_FAILED where the real run succeeded
  silent      DRY_RUN_OK, yet apply's tree differs from the real run's

  rootcases.py [-v]      (as root; AIRLOCK names the binary)

prints one line per case and the shares. Exit status: the number of silent
cases (the one outcome that must never happen)."""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import airlock, binary as airlock_binary, dryrun, remove, sh  # noqa: E402
from manifest import manifest  # noqa: E402

# (name, starting tree, script): run with sh in the tree's copy.
CASES = [
    ("rm -rf of a tree with a 000 directory",
     "mkdir -p t/locked/in && echo x > t/locked/in/f && chmod 000 t/locked", "rm -rf t"),
    ("chmod 000 dir; rm -rf dir",
     "mkdir -p d/sub && echo x > d/sub/f", "chmod 000 d/sub && rm -rf d"),
    ("write into a foreign-owned file",
     "echo x > f && chown 1234:1234 f && chmod 644 f", "echo y >> f"),
    ("tar -x of foreign-owned members",
     "mkdir s && echo a > s/a && chown -R 1234:4321 s && tar -cf a.tar s && rm -rf s",
     "tar -xf a.tar"),
    ("rename of a read-only directory",
     "mkdir ro && echo a > ro/a && chmod 555 ro", "mv ro rw"),
    ("chown 1234 f || true",
     "echo x > f", "chown 1234 f || true"),
    ("chgrp 4321 f",
     "echo x > f", "chgrp 4321 f"),
    ("append to a set-user-ID file",
     "echo x > tool && chmod 4755 tool", "echo y >> tool"),
    ("cp -a of a foreign-owned tree",
     "mkdir s && echo a > s/a && chown -R 1234:4321 s && chmod 750 s", "cp -a s c"),
    ("install -o 1234 -g 4321",
     "echo x > src", "install -o 1234 -g 4321 -m 640 src dst"),
    ("append to a file of an unmapped group",
     "echo x > g && chown 0:1000 g && chmod 664 g", "echo y >> g"),
    ("mknod of a device, failure ignored",
     "", "mknod dev c 1 3 || true; echo ok > f"),
    ("a trusted.* attribute, failure ignored",
     "echo x > f", "setfattr -n trusted.note -v x f || true"),
    ("chmod u+s, failure ignored",
     "echo x > t && chmod 755 t", "chmod u+s t || true"),
    ("write below a foreign-owned 700 directory",
     "mkdir p && chown 1234:1234 p && chmod 700 p", "echo x > p/new"),
]

NAMED = ("PRIVILEGED_FILE", "NEEDS_PRIVILEGE")


def one(binary, tmp, base, script):
    """(outcome, detail)"""
    real, dry, state = (os.path.join(tmp, n) for n in ("real", "dry", "state"))
    for d in (real, dry, state):
        remove(d)
    os.mkdir(dry)
    sh(base, dry)
    subprocess.run(["cp", "-a", dry, real], check=True)
    original = manifest(dry)
    p = sh(script, real)
    if p.returncode != 0:
        return "real-run-failed", p.stderr.decode(errors="replace")[:200]
    want = manifest(real)
    doc, verdict, rid, p = dryrun(binary, state, dry, script)
    if doc is None:
        return "refused", "dryrun: status %d: %s" % (p.returncode, p.stderr[:200])
    if verdict == "NO_EFFECT":
        return ("reproduces", verdict) if want == original else ("silent", "NO_EFFECT, yet the real run changed the tree")
    if verdict in NAMED:
        return "named", verdict
    if verdict != "DRY_RUN_OK":
        return "refused", "%s %s" % (verdict, json.dumps(doc["dryrun"].get("problems"))[:200])
    p = airlock(binary, state, tmp, "apply", rid)
    if p.returncode != 0:
        return "refused", "apply: status %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[:200])
    got = manifest(dry)
    if got != want:
        return "silent", "apply differs: want %r got %r" % (
            sorted(set(want.splitlines()) - set(got.splitlines()))[:3],
            sorted(set(got.splitlines()) - set(want.splitlines()))[:3])
    return "reproduces", verdict


def main():
    if os.geteuid() != 0:
        sys.stderr.write("rootcases.py: root's cases need root\n")
        return 125
    verbose = "-v" in sys.argv[1:]
    binary = airlock_binary()
    tmp = tempfile.mkdtemp(prefix="airlock-rootcases.")
    counts = {}
    for name, base, script in CASES:
        outcome, detail = one(binary, tmp, base, script)
        counts[outcome] = counts.get(outcome, 0) + 1
        print("%-12s %s%s" % (outcome, name, (": " + detail) if verbose or outcome != "reproduces" else ""))
    n = len(CASES)
    print("%d cases: %s" % (n, ", ".join("%s %d (%d%%)" % (k, v, 100 * v // n) for k, v in sorted(counts.items()))))
    remove(tmp)
    return min(counts.get("silent", 0), 100)


if __name__ == "__main__":
    sys.exit(main())
