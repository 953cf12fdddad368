#!/usr/bin/env python3
# fuse-stall-write.py PATH SECONDS OFFSET READY: writes 4096 bytes "Z" into
# PATH at OFFSET with one pwrite() whose bytes land SECONDS after the file's
# times moved (a kernel moves mtime and ctime when a write begins, then
# copies): the source buffer is a mapping of a file on a FUSE file system,
# mounted in a user namespace, whose server answers the first read only
# after SECONDS. Creates READY just before the pwrite(). Exits 77 where an
# unprivileged user cannot mount FUSE (no user namespace, no /dev/fuse).
import ctypes, mmap, os, struct, sys, tempfile, threading, time

path, stall, off, ready = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
N = 4096
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
exe_fd = os.open(path, os.O_WRONLY)
if libc.unshare(0x10000000 | 0x00020000) != 0:
    print("unshare: %s" % os.strerror(ctypes.get_errno()), file=sys.stderr)
    sys.exit(77)
open("/proc/self/setgroups", "w").write("deny")
open("/proc/self/uid_map", "w").write("0 %d 1" % uid)
open("/proc/self/gid_map", "w").write("0 %d 1" % gid)
mnt = tempfile.mkdtemp()
try:
    dev = os.open("/dev/fuse", os.O_RDWR)
except OSError as e:
    print("/dev/fuse: %s" % e, file=sys.stderr)
    sys.exit(77)
opts = ("fd=%d,rootmode=40000,user_id=0,group_id=0" % dev).encode()
if libc.mount(b"stall", mnt.encode(), b"fuse", 6, opts) != 0:  # MS_NOSUID|MS_NODEV
    print("mount: %s" % os.strerror(ctypes.get_errno()), file=sys.stderr)
    sys.exit(77)

def attr(ino):
    mode = 0o40755 if ino == 1 else 0o100644
    size = 0 if ino == 1 else N
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0,
                       mode, 1, 0, 0, 0, 4096, 0)

def serve():
    stalled = False
    while True:
        try:
            req = os.read(dev, 1 << 21)
        except OSError:
            return
        ln, op, uniq, node = struct.unpack_from("<IIQQ", req)
        body = req[40:]
        err, out = 0, b""
        if op == 26:  # INIT
            major, minor, ra, flags = struct.unpack_from("<IIII", body)
            out = struct.pack("<IIIIHHIIHHII", 7, 31, ra, 0, 16, 12, 65536, 1, 0, 0, 0, 0) + b"\0" * 24
        elif op == 1:  # LOOKUP
            if body.split(b"\0")[0] == b"f":
                out = struct.pack("<QQQQII", 2, 0, 100, 100, 0, 0) + attr(2)
            else:
                err = -2
        elif op == 3:  # GETATTR
            out = struct.pack("<QII", 100, 0, 0) + attr(node)
        elif op in (14, 27):  # OPEN, OPENDIR
            out = struct.pack("<QII", 0, 0, 0)
        elif op == 15:  # READ
            fh, offset, size = struct.unpack_from("<QQI", body)
            if not stalled:
                stalled = True
                time.sleep(stall)
            out = b"Z" * max(0, min(size, N - offset))
        elif op in (2, 42):  # FORGET, BATCH_FORGET: no reply
            continue
        elif op in (18, 25, 29):  # RELEASE, FLUSH, RELEASEDIR
            pass
        else:
            err = -38
        os.write(dev, struct.pack("<IiQ", 16 + len(out), err, uniq) + out)

threading.Thread(target=serve, daemon=True).start()
src = os.open(os.path.join(mnt, "f"), os.O_RDONLY)
m = mmap.mmap(src, N, mmap.MAP_SHARED, mmap.PROT_READ)
open(ready, "w").close()
t = time.time()
try:
    n = os.pwrite(exe_fd, memoryview(m), off)
    print("wrote %d bytes in %.1f s" % (n, time.time() - t), file=sys.stderr)
finally:
    # Closed while the server still answers: the FUSE file's last close
    # waits for its FLUSH, which a dead server would never answer.
    m.close()
    os.close(src)
    os._exit(0)
