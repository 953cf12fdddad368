# SPDX-License-Identifier: MIT
"""What the differential scripts (run.py, rootcases.py) share: the binary,
running it with a state directory of its own, a dry run that declares every
path, sh in a tree, and removing a tree the scripts made (modes 000
included)."""
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def binary():
    """The airlock binary: $AIRLOCK, else the build-gcc build of this tree."""
    return os.environ.get("AIRLOCK", os.path.join(HERE, "..", "..", "build-gcc", "airlock"))


def airlock(binary, state, cwd, *args):
    env = dict(os.environ, AIRLOCK_STATE_DIR=state)
    return subprocess.run([binary, *args], cwd=cwd, env=env, capture_output=True, check=False)


def sh(script, cwd):
    """sh -c script in cwd, output captured, whatever its status."""
    return subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, check=False)


def dryrun(binary, state, cwd, script):
    """`airlock dryrun --json` of sh -c script with every path declared
    (created, modified and deleted): (receipt, verdict, id, the completed
    process); the receipt None when it printed none with a verdict."""
    p = airlock(binary, state, cwd, "dryrun", "--json", "--expect", "**", "--expect-delete", "**",
                "--", "sh", "-c", script)
    try:
        doc = json.loads(p.stdout)
        return doc, doc["dryrun"]["verdict"], str(doc["id"]), p
    except (ValueError, KeyError, TypeError):
        return None, None, None, p


def remove(path):
    """Remove a tree made by a test, unreadable directories included."""
    if os.path.lexists(path):
        subprocess.run(["chmod", "-R", "u+rwX", path], check=False)
        shutil.rmtree(path, ignore_errors=True)
