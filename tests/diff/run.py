#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The differential test of dryrun + apply (issue 11). For each seed, a
random file-system script (gen.py) runs for real (`airlock run`, the same
quarantine) in one copy of a tree and through `airlock dryrun` + `airlock apply` in another; their manifests
(manifest.py: type, mode, content hash, link target, hard-link groups,
xattrs) must be equal. Then `rollback` must give back the original tree, and
a second `apply` the real run's tree again.

  run.py [--all] FIRST LAST

AIRLOCK names the binary; DIFF_PROGRESS=1 prints a line per seed. A failing seed is kept under $DIFF_KEEP (default:
a temporary directory that is then left in place) with its scripts and
manifests. Exit status: the number of failing seeds (at most 100)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402
from manifest import manifest  # noqa: E402


def sh(lines, cwd):
    subprocess.run(["sh", "-c", "\n".join(lines)], cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def airlock(binary, state, cwd, *args):
    env = dict(os.environ, AIRLOCK_STATE_DIR=state)
    return subprocess.run([binary, *args], cwd=cwd, env=env, capture_output=True, check=False)


def real_run(binary, state, real, script):
    """The real run: in the same quarantine (`airlock run`); as root, the
    script run by root, which a dry run as root reproduces (every id mapped,
    the capabilities root's run uses inside the workspace: docs/dryrun.md,
    "Root"), with the host read-only all the same (a private mount namespace
    where only the copy and an empty /tmp are writable)."""
    if os.geteuid() != 0:
        return airlock(binary, state, real, "run", "--", "sh", "-c", script)
    # cwd is taken on the copy's own mount before /tmp is covered by an
    # empty one, as the quarantine's private /tmp is.
    wrap = ('mount --bind "$0" "$0" && cd "$0" && mount -o remount,bind,ro / && '
            'mount -t tmpfs tmpfs /tmp && exec sh -c "$1"')
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", wrap, real,
                           script], capture_output=True, check=False)


def one(seed, include_all, binary, tmp):
    """None when dryrun + apply did what the real run did, else why not."""
    real, dry, state = (os.path.join(tmp, n) for n in ("real", "dry", "state"))
    for d in (real, dry, state, state + ".real"):
        if os.path.lexists(d):
            subprocess.run(["chmod", "-R", "u+rwX", d], check=False)
            shutil.rmtree(d)
    os.mkdir(dry)
    base = gen.generate(seed, "base", include_all)
    script = gen.generate(seed, "script", include_all)
    with open(os.path.join(tmp, "base.sh"), "w") as f:
        f.write("\n".join(base) + "\n")
    with open(os.path.join(tmp, "script.sh"), "w") as f:
        f.write("\n".join(script) + "\n")
    sh(base, dry)
    subprocess.run(["cp", "-a", dry, real], check=True)
    owners = os.geteuid() == 0  # a dry run as root carries owners
    original = manifest(dry, owners)
    p = real_run(binary, state + ".real", real, "\n".join(script))
    if p.returncode != 0:
        return "run: status %d: %s" % (p.returncode, p.stderr[:300])
    want = manifest(real, owners)
    p = airlock(binary, state, dry, "dryrun", "--json", "--expect", "**", "--expect-delete", "**",
                "--", "sh", "-c", "\n".join(script))
    try:
        doc = json.loads(p.stdout)
        verdict, rid = doc["dryrun"]["verdict"], str(doc["id"])
    except (ValueError, KeyError, TypeError):
        return "dryrun: status %d: %s" % (p.returncode, p.stderr[:300])
    if verdict == "NO_EFFECT":
        return None if want == original else "NO_EFFECT, yet the real run changed the tree"
    if verdict != "DRY_RUN_OK":
        return "dryrun: verdict %s, problems %s" % (verdict, json.dumps(doc["dryrun"].get("problems"))[:300])
    steps = [("apply", want, "apply differs from the real run"),
             ("rollback", original, "rollback differs from the original"),
             ("apply", want, "a second apply differs from the real run")]
    for cmd, expected, what in steps:
        p = airlock(binary, state, tmp, cmd, rid)
        if p.returncode != 0:
            return "%s: status %d: %s" % (cmd, p.returncode, p.stderr[:300])
        got = manifest(dry, owners)
        if got != expected:
            with open(os.path.join(tmp, "want.manifest"), "w") as f:
                f.write(expected)
            with open(os.path.join(tmp, "got.manifest"), "w") as f:
                f.write(got)
            d = subprocess.run(["diff", os.path.join(tmp, "want.manifest"), os.path.join(tmp, "got.manifest")],
                               capture_output=True, text=True, errors="replace", check=False).stdout
            return "%s:\n%s" % (what, "\n".join(d.splitlines()[:8]))
    return None


def main():
    args = sys.argv[1:]
    include_all = "--all" in args
    args = [a for a in args if a != "--all"]
    if len(args) != 2:
        sys.stderr.write("usage: run.py [--all] FIRST LAST\n")
        return 125
    first, last = int(args[0]), int(args[1])
    here = os.path.dirname(os.path.abspath(__file__))
    binary = os.environ.get("AIRLOCK", os.path.join(here, "..", "..", "build-gcc", "airlock"))
    tmp = tempfile.mkdtemp(prefix="airlock-diff.")
    keep = os.environ.get("DIFF_KEEP", os.path.join(tmp, "failures"))
    failed = 0
    progress = bool(os.environ.get("DIFF_PROGRESS"))
    for seed in range(first, last + 1):
        why = one(seed, include_all, binary, tmp)
        if progress:  # one line per seed, for a long run cut short
            print("seed %d: %s" % (seed, "differs" if why else "same"), flush=True)
        if why:
            failed += 1
            sys.stderr.write("seed %d: %s\n" % (seed, why))
            dest = os.path.join(keep, str(seed))
            os.makedirs(dest, exist_ok=True)
            for name in ("base.sh", "script.sh", "want.manifest", "got.manifest"):
                if os.path.exists(os.path.join(tmp, name)):
                    shutil.copy(os.path.join(tmp, name), dest)
    print("seeds %d..%d: %d scripts, %d differ%s" % (first, last, last - first + 1, failed,
                                                     " (--all)" if include_all else ""))
    if failed:
        sys.stderr.write("failures kept in %s\n" % keep)
    else:
        subprocess.run(["chmod", "-R", "u+rwX", tmp], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main())
