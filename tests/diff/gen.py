#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Random file-system scripts for the differential test of dryrun + apply
(tests/diff/run.py). For one seed it prints two POSIX sh scripts, always the
same for the same seed:

  gen.py SEED base [--all] [--wide]    builds the starting tree in the
                                      current directory
  gen.py SEED script [--all] [--wide]  the command under test, run for real
                                      in one copy and through airlock
                                      dryrun + apply in the other

The script's steps may fail (a rename of a path already gone...): both sides
run the same steps, so they fail alike; the script ends with `true`.

Without --wide, left out on purpose, each a documented limit of the snapshot
(docs/dryrun.md, "Not built yet"), not of apply: writing to, chmod of or setting attributes
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

--wide (issue 20) puts every left-out step back in (it implies --all) and
adds, from a third random stream (so that without --wide a seed's lines
are byte for byte what they were):
- in the base tree: link groups of two to four names across directories;
  read-only files (444, 400, 555) with user.* attributes below a directory;
  a set-id file (4755, 2755, 6755, 4700); a foreign owner (chown 1234,
  1234:1234, :4242: only root's succeeds); a read-only (555) directory
  holding a file; as root only, a directory holding a 000 directory (an
  unprivileged caller could not list it, and airlock refuses a run whose
  tree it cannot check for code left for the host);
- in the script: a name joining a group (`ln a c`), leaving it (`rm a`),
  replaced with the same or other bytes (`cp a t && mv -f t a`), `sed -i`
  that matches nothing, `rm a; printf .. > a`, appended to, chmod-ed or
  given an attribute through one name, renamed into another directory; a
  mode and a content change in one step (`printf .. > f && chmod 755 f`,
  and the other order); a directory holding read-only files with
  attributes renamed; `chown 1234 p || true`, `chown $(id -u) p` (and the
  group forms); appending to a set-id file, clearing its bit, `chmod u+s f
  || true`; `mknod d c 1 3 || true`.
With --wide every line names its kind in a trailing comment (`# join`,
`# base-setid`, `# step` for the other steps, `# acl`), which run.py's
--minimize output keeps.
"""
import os
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
    def __init__(self, seed, include_all, wide=False):
        self.r = random.Random(seed)
        self.wide = wide
        self.all = include_all or wide
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
        # --wide steps (issue 20) draw from a third stream, for the same
        # reason: without --wide a seed's script is byte for byte what it was
        self.w = random.Random("wide %d" % seed)
        self.groups = []  # link groups: lists of names of one inode
        self.setid = set()  # base-tree files with a set-id bit
        self.rodirs = set()  # directories holding read-only files with attributes

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

    def emit(self, line, tag=None):
        # a --wide step names its kind in a comment, which run.py --minimize
        # reads back as the cause of a difference
        self.out.append(line + " 2>/dev/null" + ("  # %s" % tag if tag else ""))

    def forget_under(self, path):
        for pool in (self.files, self.dirs, self.links, self.fifos, self.setid, self.rodirs):
            for p in list(pool):
                if p == path or p.startswith(path + b"/"):
                    pool.discard(p)
        for g in self.groups:
            g[:] = [p for p in g if not (p == path or p.startswith(path + b"/"))]

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
        if self.wide:
            for i, line in enumerate(self.out):  # the base's own link pair is a group too
                self.out[i] += "  # " + ("base-group" if line.startswith("ln \"") else "base")
            self.wide_base()
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

    # ---- issue 20's steps (--wide) -------------------------------------------
    def tag_since(self, start, tag):
        """Name the kind of the lines emitted since start (--wide only)."""
        if self.wide:
            for i in range(start, len(self.out)):
                if "  # " not in self.out[i]:
                    self.out[i] += "  # " + tag

    def wide_base(self):
        """Link groups (names in several directories), read-only files with
        attributes below a directory, set-id files, foreign owners (as
        root), a directory with mode 000 and a read-only directory."""
        w = self.w
        for _ in range(w.randint(1, 2)):
            pool = sorted(self.files - self.hardlinked - self.xattred)
            if not pool:
                break
            f = w.choice(pool)
            g = [f]
            for _ in range(w.randint(1, 3)):
                n = self.newpath()
                self.emit("ln %s %s" % (q(f), q(n)), "base-group")
                self.files.add(n)
                g.append(n)
            self.groups.append(g)
            self.hardlinked.update(g)
        if w.random() < 0.6:
            d = self.newpath()
            sub = d + b"/" + w.choice(NAMES)
            self.emit("mkdir -p %s" % q(sub), "base-roxattr")
            for p in (d + b"/" + w.choice(NAMES), sub + b"/" + w.choice(NAMES)):
                if p == sub:
                    continue
                self.emit("%s > %s" % (qdata(w.choice(CONTENTS)), q(p)), "base-roxattr")
                value = w.choice(XATTR_VALUES[:2])
                self.emit("setfattr -h -n %s -v 0x%s %s" % (w.choice(XATTR_NAMES), value.hex(), q(p)), "base-roxattr")
                self.emit("chmod %s %s" % (w.choice(["444", "400", "555"]), q(p)), "base-roxattr")
                self.files.add(p)
                self.xattred.add(p)
            self.dirs.update((d, sub))
            self.rodirs.add(d)
        if w.random() < 0.5:
            f = self.newpath()
            self.emit("%s > %s" % (qdata(b"#!/bin/sh\n"), q(f)), "base-setid")
            self.emit("chmod %s %s" % (w.choice(["4755", "2755", "6755", "4700"]), q(f)), "base-setid")
            self.files.add(f)
            self.setid.add(f)
        if w.random() < 0.4:
            # fails as anyone but root, alike for both runs
            p = w.choice(sorted(self.files | self.dirs))
            self.emit("chown %s %s" % (w.choice(["1234", "1234:1234", ":4242"]), q(p)), "base-owner")
        # as root only: a caller that cannot list it cannot check the tree
        # for code left for the host either, and airlock refuses the run
        if w.random() < 0.25 and os.geteuid() == 0:
            d = self.newpath()
            self.emit("mkdir -p %s/locked && %s > %s/locked/f && chmod 000 %s/locked" % (
                q(d), qdata(b"x\n"), q(d), q(d)), "base-locked")
            self.dirs.add(d)
        if w.random() < 0.25:
            d = self.newpath()
            self.emit("mkdir -p %s && %s > %s/f && chmod 555 %s" % (q(d), qdata(b"x\n"), q(d), q(d)), "base-rodir")
            self.dirs.add(d)

    def wide_step(self):
        w = self.w
        groups = [g for g in self.groups if g]
        op = w.choice(["join", "leave", "replace_same", "replace_diff", "sed", "rmrecreate", "append1",
                       "chmod1", "xattr1", "mvdir", "modecontent", "modecontent", "rodir_mv", "chown_foreign",
                       "chown_self", "setid_append", "setid_chmod", "mknod"])
        if op in ("join", "leave", "replace_same", "replace_diff", "sed", "rmrecreate", "append1", "chmod1",
                  "xattr1", "mvdir"):
            if not groups:
                return
            g = w.choice(groups)
            a = w.choice(g)
            if op == "join":
                c = self.newpath()
                self.emit("ln %s %s" % (q(a), q(c)), op)
                self.files.add(c)
                g.append(c)
                self.hardlinked.add(c)
            elif op == "leave":
                self.emit("rm -f %s" % q(a), op)
                self.forget_under(a)
            elif op in ("replace_same", "replace_diff"):
                t = self.newpath()
                more = "" if op == "replace_same" else " && %s >> %s" % (qdata(b"more\n"), q(t))
                self.emit("cp %s %s%s && mv -f %s %s" % (q(a), q(t), more, q(t), q(a)), op)
                g.remove(a)
            elif op == "sed":
                self.emit("sed -i 's/no such text here//' %s" % q(a), op)
                g.remove(a)
            elif op == "rmrecreate":
                self.emit("rm -f %s; %s > %s" % (q(a), qdata(w.choice(CONTENTS)), q(a)), op)
                g.remove(a)
            elif op == "append1":
                self.emit("%s >> %s" % (qdata(w.choice(CONTENTS[1:])), q(a)), op)
            elif op == "chmod1":
                self.emit("chmod %s %s" % (w.choice(FILE_MODES), q(a)), op)
            elif op == "xattr1":
                self.emit("setfattr -h -n %s -v 0x%s %s" % (w.choice(XATTR_NAMES), w.choice(XATTR_VALUES[:2]).hex(),
                                                           q(a)), op)
                self.xattred.add(a)
            else:  # a name of the group renamed into another directory
                dirs = sorted(d for d in self.dirs if not a.startswith(d + b"/"))
                dst = (w.choice(dirs) + b"/" if dirs and w.random() < 0.8 else b"") + w.choice(NAMES)
                if any(dst in pool for pool in (self.files, self.dirs, self.links, self.fifos)):
                    return
                self.emit("mv -f %s %s" % (q(a), q(dst)), op)
                self.forget_under(a)
                self.files.add(dst)
                g.append(dst)
                self.hardlinked.add(dst)
        elif op == "modecontent":
            f = self.some(self.files)
            if f is None:
                return
            data, mode = qdata(w.choice(CONTENTS)), w.choice(FILE_MODES)
            if w.random() < 0.5:
                self.emit("%s > %s && chmod %s %s" % (data, q(f), mode, q(f)), op)
            else:
                self.emit("chmod %s %s && %s >> %s" % (mode, q(f), data, q(f)), op)
        elif op == "rodir_mv":
            if not self.rodirs:
                return
            d, dst = w.choice(sorted(self.rodirs)), self.newpath()
            self.emit("mv -f %s %s" % (q(d), q(dst)), op)
            self.forget_under(d)
            self.dirs.add(dst)
            self.rodirs.add(dst)
        elif op == "chown_foreign":
            p = self.any_path()
            self.emit("chown %s %s || true" % (w.choice(["1234", "1234:1234", ":4242"]), q(p)), op)
        elif op == "chown_self":
            p = self.any_path()
            self.emit("chown %s %s" % (w.choice(["$(id -u)", ":$(id -g)", "$(id -u):$(id -g)"]), q(p)), op)
        elif op == "setid_append":
            if not self.setid:
                return
            self.emit("%s >> %s" % (qdata(b"echo more\n"), q(w.choice(sorted(self.setid)))), op)
        elif op == "setid_chmod":
            if self.setid and w.random() < 0.5:
                self.emit("chmod %s %s" % (w.choice(["755", "u-s", "g-s"]), q(w.choice(sorted(self.setid)))), op)
            else:
                f = self.some(self.files)
                if f is not None:
                    self.emit("chmod %s %s || true" % (w.choice(["u+s", "g+s"]), q(f)), op)
        else:  # a device the script ignores failing to make
            d = self.newpath()
            self.emit("mknod %s c 1 3 || true" % q(d), op)
            self.fifos.add(d)  # never written to or copied

    def script(self):
        self.base()
        self.out = ["set +e", 'TMPDIR=$(mktemp -d)']
        for _ in range(self.r.randint(1, 12)):
            start = len(self.out)
            self.step()
            self.tag_since(start, "step")
            if HAVE_SETFACL and self.acl_r.random() < 0.3:
                start = len(self.out)
                self.acl()
                self.tag_since(start, "acl")
            if self.wide:
                for _ in range(self.w.choice([0, 1, 1, 2])):
                    self.wide_step()
        self.out.append('rm -rf "$TMPDIR"')
        self.out.append("true")
        return self.out


def generate(seed, part, include_all=False, wide=False):
    """The lines of the base tree ("base") or the script ("script")."""
    g = Gen(seed, include_all, wide)
    return g.base() if part == "base" else g.script()


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("base", "script"):
        sys.stderr.write("usage: gen.py SEED base|script [--all] [--wide]\n")
        return 2
    g = Gen(int(sys.argv[1]), "--all" in sys.argv[3:], "--wide" in sys.argv[3:])
    lines = g.base() if sys.argv[2] == "base" else g.script()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
