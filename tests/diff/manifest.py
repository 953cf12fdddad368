#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The manifest of a tree, for tests/diff/run.py and rootcases.py: one line
per entry below DIR (sorted by path bytes, never following a symlink):
type, mode, owner and group (uid:gid as the host sees them), then the
SHA-256 of a file, the target of a symlink, a device's major,minor; a
directory the caller cannot list and a file it cannot read (mode 000 as an
unprivileged caller) say so; then the hard-link groups inside the tree, then the extended attributes (the overlay's own excluded), every
one the kernel lists, the POSIX ACLs among them (system.posix_acl_access,
system.posix_acl_default: their bytes, ids as the host sees them). Paths
and targets are written with every byte outside printable ASCII escaped."""
import hashlib
import os
import stat
import sys


def esc(b):
    return "".join(chr(c) if 0x21 <= c < 0x7f and c != 0x5c else "\\x%02x" % c for c in b)


def manifest(top):
    """The manifest of the tree at top, as text."""
    root = os.fsencode(top)
    lines, inodes, xattrs = [], {}, []
    stack = [b""]
    while stack:
        rel = stack.pop()
        full = os.path.join(root, rel) if rel else root
        try:
            st = os.lstat(full)
        except PermissionError:  # below a directory without x, for an unprivileged caller
            lines.append((rel, "%s unsearchable" % esc(rel)))
            continue
        mode = "%04o" % stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            kind, extra = "dir", ""
            try:
                names = os.listdir(full)
            except PermissionError:
                names, extra = [], "unlistable"
            for name in names:
                stack.append(os.path.join(rel, name) if rel else name)
        elif stat.S_ISREG(st.st_mode):
            try:
                with open(full, "rb") as f:
                    kind, extra = "file", hashlib.sha256(f.read()).hexdigest()
            except PermissionError:
                kind, extra = "file", "unreadable"
            inodes.setdefault(st.st_ino, []).append(rel)
        elif stat.S_ISLNK(st.st_mode):
            kind, extra, mode = "symlink", esc(os.readlink(full)), ""
        elif stat.S_ISFIFO(st.st_mode):
            kind, extra = "fifo", ""
            inodes.setdefault(st.st_ino, []).append(rel)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            kind = "chr" if stat.S_ISCHR(st.st_mode) else "blk"
            extra = "%d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
            inodes.setdefault(st.st_ino, []).append(rel)
        else:
            kind, extra = "other", ""
        lines.append((rel, "%s %s %s %d:%d %s" % (esc(rel) or ".", kind, mode, st.st_uid, st.st_gid, extra)))
        try:
            for name in sorted(os.listxattr(full, follow_symlinks=False)):
                if not name.startswith(("user.overlay.", "trusted.overlay.")):
                    value = os.getxattr(full, name, follow_symlinks=False)
                    xattrs.append((rel, "xattr %s %s %s" % (esc(rel), name, value.hex())))
        except OSError:
            pass
    out = [line for _, line in sorted(lines)]
    for group in sorted(sorted(g) for g in inodes.values() if len(g) > 1):
        out.append("hardlinks " + " ".join(esc(p) for p in group))
    out += [line for _, line in sorted(xattrs)]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(manifest(sys.argv[1]))
