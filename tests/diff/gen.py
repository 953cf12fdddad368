#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Random file-system scripts for the differential test of dryrun + apply
(tests/diff/run.py). For one seed it prints two POSIX sh scripts, always the
same for the same seed:

  gen.py SEED base    builds the starting tree in the current directory
  gen.py SEED script  the command under test, run for real in one copy and
                      through airlock dryrun + apply in the other

The script's steps may fail (a rename of a path already gone...): both sides
run the same steps, so they fail alike; the script ends with `true`.

Left out on purpose, each a documented limit of the snapshot (docs/dryrun.md,
"Not built yet"), not of apply: writing to, chmod of or setting attributes
of a file the base tree hard-links (the overlay copies up one name), new hard
links to a file of the base tree (applied as a copy), renaming a directory
that holds a file with attributes (a copy in the snapshot: mv cannot set
them on a read-only copy), device nodes. --all
includes the hard-link steps anyway, to measure them. The workspace root's
mode and user.* extended attributes (set, changed, removed, on files,
directories and the root) are in.

POSIX ACLs, when setfacl is installed: access and default ACLs set,
changed, masked and removed (-m, -x, -b, -k, -d) on files, directories and
the root, in the base tree and in the script, then files and directories
created under a default ACL. Their entries name the caller's uid and gid
(the only ids the quarantine maps), and sometimes 65534 or 4242, which
fail alike in both runs unless they are the caller's. Their choices come
from a second random stream, so a seed's other steps are those it had
before ACLs were generated. Left out, as for user.* attributes: ACLs of a
file the base tree hard-links (the overlay copies up one name); and
renaming a directory that is or holds an object whose ACL may name an id
the quarantine does not map (65534 or 4242, a default ACL's too): the
snapshot copies the directory (EXDEV), and mv cannot set such an ACL on
the copy, says so, and still exits 0, where the real rename keeps it
(docs/dryrun.md, "Not built yet"). setfacl always runs
with -P, so it never follows a symlink (in the base tree it runs on the
host).
"""
import random
import shutil
import sys

# Names: plain, with spaces, a leading dash, UTF-8, and bytes that are not
# UTF-8 (\xff, and U+FFFD spelled out, which must stay apart).
NAMES = [b"a", b"b", b"c", b"d1", b"sub", b"x.txt", b"with space", b"-dash",
         "\u00e9t\u00e9".encode(), b"f\xff", b"f\xef\xbf\xbd", b"n\xfe.o", b"dist",
         b"pkg", b"js", b"e", b".hidden"]
CONTENTS = [b"", b"x\n", b"same\n", b"same\n", b"#!/bin/sh\n", b"longer content\n" * 40]
FILE_MODES = ["600", "644", "755", "700", "444", "640"]
DIR_MODES = ["755", "700", "750", "775"]
XATTR_NAMES = ["user.a", "user.note", "user.mime_type"]
XATTR_VALUES = [b"1", b"two", b"", b"a\x01b\xff", b"x" * 300]
HAVE_SETFACL = shutil.which("setfacl") is not None
ACL_WHO = ["u:$(id -u)", "g:$(id -g)", "u:$(id -u)", "g:$(id -g)", "u:65534", "g:4242"]
ACL_PERMS = ["r", "rw", "rwx", "rx", "-", "w"]


def qraw(data):
    """bytes as one sh word, every byte escaped for printf."""
    return "\"$(printf '%s')\"" % "".join("\\%03o" % b for b in data)


def q(path):
    """a relative path as one sh word, never taken for an option."""
    return qraw(b"./" + path)


def qdata(data):
    return "printf '%s'" % "".join("\\%03o" % b for b in data)


class Gen:
    def __init__(self, seed, include_all):
        self.r = random.Random(seed)
        self.all = include_all
        self.files, self.dirs, self.links = set(), set(), set()
        self.fifos = set()  # never written to or copied: that would block
        self.hardlinked = set()  # base-tree names that share an inode
        self.xattred = set()  # paths given attributes
        self.out = []
        # ACL steps draw from their own stream: the main one, and so every
        # other step of the seed, stays as it was before ACLs were generated
        self.acl_r = random.Random("acl %d" % seed)
        self.defacl = set()  # directories given a default ACL
        self.acl_foreign = set()  # paths whose ACL may name an unmapped id

    def name(self):
        return self.r.choice(NAMES)

    def some(self, pool):
        return self.r.choice(sorted(pool)) if pool else None

    def parent(self):
        # the root, or a known directory, sometimes deep
        if not self.dirs or self.r.random() < 0.3:
            return b""
        return self.some(self.dirs) + b"/"

    def newpath(self):
        # a path the model does not hold yet (else a file over a directory
        # fails in the base and the model goes wrong)
        for _ in range(8):
            p = self.parent() + self.name()
            if all(p not in pool for pool in (self.files, self.dirs, self.links, self.fifos)):
                return p
        return p

    def holds_hardlink(self, path):
        return any(h == path or h.startswith(path + b"/") for h in self.hardlinked)

    def holds_foreign_acl(self, path):
        return any(h == path or h.startswith(path + b"/") for h in self.acl_foreign)

    def holds_xattr(self, path):
        return any(h.startswith(path + b"/") for h in self.xattred)

    def any_path(self):
        pools = [p for p in (self.files, self.dirs, self.links, self.fifos) if p]
        return self.some(self.r.choice(pools)) if pools else self.newpath()

    def emit(self, line):
        self.out.append(line + " 2>/dev/null")

    def forget_under(self, path):
        for pool in (self.files, self.dirs, self.links, self.fifos):
            for p in list(pool):
                if p == path or p.startswith(path + b"/"):
                    pool.discard(p)

    # ---- the base tree ----------------------------------------------------
    def base(self):
        for _ in range(self.r.randint(2, 6)):
            d = self.newpath()
            self.emit("mkdir -p %s" % q(d))
            self.dirs.add(d)
        if self.r.random() < 0.3:  # a deep one
            d = b"/".join([b"deep"] * self.r.randint(5, 40))
            self.emit("mkdir -p %s" % q(d))
            self.dirs.add(d)
        for _ in range(self.r.randint(3, 12)):
            f = self.newpath()
            self.emit("%s > %s" % (qdata(self.r.choice(CONTENTS)), q(f)))
            self.emit("chmod %s %s" % (self.r.choice(FILE_MODES), q(f)))
            self.files.add(f)
        for _ in range(self.r.randint(0, 3)):
            l = self.newpath()
            self.emit("ln -s -- %s %s" % (qraw(self.name()), q(l)))
            self.links.add(l)
        if self.r.random() < 0.3:
            self.emit("chmod %s ." % self.r.choice(DIR_MODES))
        for _ in range(self.r.randint(0, 3)):
            self.xattr(set_only=True)
        if HAVE_SETFACL:
            for _ in range(self.acl_r.randint(0, 3)):
                self.acl(set_only=True)
        if self.files and self.r.random() < 0.4:
            f, l = self.some(self.files), self.newpath()
            self.emit("ln %s %s" % (q(f), q(l)))
            self.files.add(l)
            self.hardlinked.update((f, l))
        return self.out

    def xattr(self, set_only=False):
        """user.* attributes set, changed or removed on a file, a directory
        or the root (never on a hard-linked file: the overlay copies up one
        name)."""
        pool = [b"."] + sorted(self.dirs) + sorted(self.files - self.hardlinked)
        p = self.r.choice(pool)
        name = self.r.choice(XATTR_NAMES)
        self.xattred.add(p)
        if not set_only and self.r.random() < 0.3:
            self.emit("setfattr -h -x %s %s" % (name, q(p)))
        else:
            value = self.r.choice(XATTR_VALUES)
            self.emit("setfattr -h -n %s -v %s %s" % (name, "0x" + value.hex() if value else '""', q(p)))

    def acl(self, set_only=False):
        """A POSIX ACL set, changed or removed on a file, a directory or the
        root, or a file or directory made under a default ACL."""
        r = self.acl_r
        pool = [b"."] + sorted(self.dirs) + sorted(self.files - self.hardlinked)
        p = r.choice(pool)
        is_dir = p == b"." or p in self.dirs
        op = r.choice(["m", "m", "mask", "d", "d"] + ([] if set_only else ["x", "b", "k", "new", "new"]))
        entry = "%s:%s" % (r.choice(ACL_WHO), r.choice(ACL_PERMS))
        if op == "new":
            if not self.defacl:
                return
            d = r.choice(sorted(self.defacl))
            n = (d + b"/" if d != b"." else b"") + r.choice(NAMES)
            if any(n in pool for pool in (self.files, self.dirs, self.links, self.fifos)):
                return
            if d in self.acl_foreign:  # it inherits the default ACL
                self.acl_foreign.add(n)
            if r.random() < 0.5:
                self.emit("mkdir %s" % q(n))
                self.dirs.add(n)
            else:
                self.emit("%s > %s" % (qdata(r.choice(CONTENTS)), q(n)))
                self.files.add(n)
            return
        self.xattred.add(p)
        if op in ("m", "d") and entry.split(":")[1] in ("65534", "4242"):
            self.acl_foreign.add(p)
        if op == "m":
            self.emit("setfacl -P -m %s %s" % (entry, q(p)))
        elif op == "mask":
            self.emit("setfacl -P -m m::%s %s" % (r.choice(ACL_PERMS), q(p)))
        elif op == "d" and is_dir:
            # the owner keeps rwx: a directory it cannot read is no tree to compare
            base = "u::rwx,g::%s,o::%s" % (r.choice(ACL_PERMS), r.choice(ACL_PERMS))
            self.emit("setfacl -P -d -m %s,%s %s" % (base, entry, q(p)))
            self.defacl.add(p)
        elif op == "d":
            self.emit("setfacl -P -m %s %s" % (entry, q(p)))
        elif op == "x":
            self.emit("setfacl -P -x %s %s" % (entry.rsplit(":", 1)[0], q(p)))
        elif op == "b":
            self.emit("setfacl -P -b %s" % q(p))
            self.defacl.discard(p)
        else:
            self.emit("setfacl -P -k %s" % q(p))
            self.defacl.discard(p)

    # ---- the script ---------------------------------------------------------
    def writable(self):
        f = self.some(self.files - (set() if self.all else self.hardlinked))
        return f

    def step(self):
        op = self.r.choice(["create", "write", "append", "truncate", "chmod", "rename", "symlink",
                            "mkdir", "rmdir", "rm", "rmr", "recreate", "typechange", "deep",
                            "link", "fifo", "cp", "tar", "rootchmod", "xattr"])
        if op == "create":
            f = self.newpath()
            self.emit("%s > %s" % (qdata(self.r.choice(CONTENTS)), q(f)))
            self.files.add(f)
        elif op in ("write", "append", "truncate"):
            f = self.writable()
            if f is None:
                return
            if op == "write":
                self.emit("%s > %s" % (qdata(self.r.choice(CONTENTS)), q(f)))
            elif op == "append":
                self.emit("%s >> %s" % (qdata(self.r.choice(CONTENTS)), q(f)))
            else:
                self.emit("truncate -s %d %s" % (self.r.randint(0, 5), q(f)))
        elif op == "chmod":
            if self.r.random() < 0.5 and self.dirs:
                self.emit("chmod %s %s" % (self.r.choice(DIR_MODES), q(self.some(self.dirs))))
            else:
                f = self.writable()
                if f is not None:
                    self.emit("chmod %s %s" % (self.r.choice(FILE_MODES), q(f)))
        elif op == "rename":
            src, dst = self.any_path(), self.newpath()
            # a directory's rename is a copy in the snapshot (the overlay's
            # EXDEV): hard links below it come apart, and mv cannot copy
            # the attributes of a read-only file below it
            if (self.holds_hardlink(src) or self.holds_xattr(src) or
                    (src in self.dirs and self.holds_foreign_acl(src))) and not self.all:
                return
            self.emit("mv -f %s %s" % (q(src), q(dst)))
            # a renamed symlink is still one: a write through it may reach
            # a hard-linked file of the base tree (seed 1247)
            pool = self.fifos if src in self.fifos else self.links if src in self.links else self.files
            self.forget_under(src)
            pool.add(dst)
        elif op == "symlink":
            l = self.newpath()
            self.emit("ln -sfn -- %s %s" % (qraw(self.r.choice([self.name(), b"../" + self.name(), b"/etc/passwd"])), q(l)))
            self.links.add(l)
        elif op == "mkdir":
            d = self.newpath()
            self.emit("mkdir -p %s" % q(d))
            self.dirs.add(d)
        elif op == "rmdir" and self.dirs:
            d = self.some(self.dirs)
            self.emit("rmdir %s" % q(d))
        elif op == "rm":
            p = self.any_path()
            self.emit("rm -f %s" % q(p))
            self.forget_under(p)
        elif op == "rmr" and self.dirs:
            d = self.some(self.dirs)
            self.emit("rm -rf %s" % q(d))
            self.forget_under(d)
        elif op == "recreate" and self.dirs:
            # the build pattern: remove a directory, make it again, fill it
            d = self.some(self.dirs)
            sub = d + b"/" + self.name()
            self.emit("rm -rf %s && mkdir -p %s && %s > %s" % (q(d), q(sub), qdata(self.r.choice(CONTENTS)),
                                                             q(sub + b"/" + self.name())))
            self.forget_under(d)
            self.dirs.update((d, sub))
        elif op == "typechange":
            p = self.any_path()
            if self.holds_hardlink(p) and not self.all:
                return
            if self.r.random() < 0.5:
                self.emit("rm -rf %s && mkdir -p %s" % (q(p), q(p)))
                self.forget_under(p)
                self.dirs.add(p)
            else:
                self.emit("rm -rf %s && %s > %s" % (q(p), qdata(self.r.choice(CONTENTS)), q(p)))
                self.forget_under(p)
                self.files.add(p)
        elif op == "deep":
            d = self.parent() + b"/".join([self.name()] * self.r.randint(3, 30))
            self.emit("mkdir -p %s && %s > %s" % (q(d), qdata(b"deep\n"), q(d + b"/leaf")))
            self.dirs.add(d)
            self.files.add(d + b"/leaf")
        elif op == "link" and self.all:
            f, l = self.some(self.files), self.newpath()
            if f is not None:
                self.emit("ln %s %s" % (q(f), q(l)))
                self.files.add(l)
        elif op == "rootchmod":
            self.emit("chmod %s ." % self.r.choice(DIR_MODES))
        elif op == "xattr":
            self.xattr()
        elif op == "fifo":
            p = self.newpath()
            self.emit("mkfifo %s" % q(p))
            self.fifos.add(p)
        elif op == "cp":
            f = self.some(self.files)
            if f is not None and (f not in self.hardlinked or self.all):
                dst = self.newpath()
                self.emit("cp %s %s && chmod %s %s && rm -f %s" % (q(f), q(dst), self.r.choice(FILE_MODES), q(dst),
                                                                  q(f)))
                self.forget_under(f)
                self.files.add(dst)
        elif op == "tar" and self.dirs:
            d = self.some(self.dirs)
            if self.holds_hardlink(d) and not self.all:
                return
            # rm -rf pkg && tar -xf pkg.tar, with the archive outside
            self.emit("tar -cf \"$TMPDIR/t.tar\" %s && rm -rf %s && tar -xf \"$TMPDIR/t.tar\"" % (q(d), q(d)))

    def script(self):
        self.base()
        self.out = ["set +e", 'TMPDIR=$(mktemp -d)']
        for _ in range(self.r.randint(1, 12)):
            self.step()
            if HAVE_SETFACL and self.acl_r.random() < 0.3:
                self.acl()
        self.out.append('rm -rf "$TMPDIR"')
        self.out.append("true")
        return self.out


def generate(seed, part, include_all=False):
    """The lines of the base tree ("base") or the script ("script")."""
    g = Gen(seed, include_all)
    return g.base() if part == "base" else g.script()


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("base", "script"):
        sys.stderr.write("usage: gen.py SEED base|script [--all]\n")
        return 2
    g = Gen(int(sys.argv[1]), "--all" in sys.argv[3:])
    lines = g.base() if sys.argv[2] == "base" else g.script()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
