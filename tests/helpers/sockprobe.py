#!/usr/bin/python3
"""Unix and TCP socket probes for tests/cli/unixsock.bats, run inside the
quarantine (or on the host, as the listener the command must not reach).
Each probe prints one word: "ok", "err:ENAME" or "timeout"."""
import errno
import os
import socket
import sys
import time


def name(e):
    return "err:" + errno.errorcode.get(e.errno, str(e.errno))


def attempt(fn):
    try:
        fn()
        print("ok")
    except OSError as e:
        print(name(e))


def connect_send(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"ESCAPED\n")
    s.close()


def inside_pair(kind, directory):
    typ = {"stream": socket.SOCK_STREAM, "seqpacket": socket.SOCK_SEQPACKET}[kind]
    path = os.path.join(directory, "srv-%d.sock" % os.getpid())
    srv = socket.socket(socket.AF_UNIX, typ)
    srv.bind(path)
    srv.listen(4)
    cli = socket.socket(socket.AF_UNIX, typ)
    cli.connect(path)
    cli.sendall(b"ping")
    conn, _ = srv.accept()
    if conn.recv(16) != b"ping":
        raise OSError(errno.EIO, "bad data")
    os.unlink(path)


def tcp():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    cli.connect(srv.getsockname())
    cli.sendall(b"ping")
    conn, _ = srv.accept()
    if conn.recv(16) != b"ping":
        raise OSError(errno.EIO, "bad data")


def full_backlog(directory, blocking):
    """A listener that never accepts: the kernel queues backlog+1
    connections, then a nonblocking connect fails with EAGAIN and a
    blocking one waits."""
    path = os.path.join(directory, "full-%d.sock" % os.getpid())
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(0)
    keep = []
    for _ in range(64):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(blocking)
        if blocking:
            print("connecting", flush=True)
        c.connect(path)
        keep.append(c)
    raise OSError(errno.ENOBUFS, "never full")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "connect":
        attempt(lambda: connect_send(args[0]))
    elif mode == "abstract":  # connect to an abstract name
        attempt(lambda: connect_send("\0" + args[0]))
    elif mode == "abstract_inside":  # a server and a client, both here
        def go():
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind("\0" + args[0])
            srv.listen(4)
            connect_send("\0" + args[0])
            conn, _ = srv.accept()
            if conn.recv(16) != b"ESCAPED\n":
                raise OSError(errno.EIO, "bad data")
        attempt(go)
    elif mode == "connect_rel":
        os.chdir(args[0])
        attempt(lambda: connect_send(args[1]))
    elif mode == "opath":
        fd = os.open(args[0], os.O_PATH)
        attempt(lambda: connect_send("/proc/self/fd/%d" % fd))
    elif mode == "dgram":
        def go():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.sendto(b"ESCAPED\n", args[0])
        attempt(go)
    elif mode == "raw":
        attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW))
    elif mode == "pair":
        def go():
            a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            a.sendto(b"ESCAPED\n", args[0])
        attempt(go)
    elif mode == "seqpacket_sendto":
        # a connected seqpacket pair; the destination address is ignored
        def go():
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            a.sendto(b"ESCAPED\n", args[0])
            if b.recv(16) != b"ESCAPED\n":
                raise OSError(errno.EIO, "not delivered to the peer")
        attempt(go)
    elif mode == "stream_sendto":
        def go():
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            a.sendto(b"ESCAPED\n", args[0])
        attempt(go)
    elif mode == "pair_inside":
        attempt(lambda: inside_pair(args[0], args[1]))
    elif mode == "tcp":
        attempt(tcp)
    elif mode == "tcp_nonblock":
        def go():
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.bind(("127.0.0.1", 0))
            srv.listen(4)
            cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            cli.setblocking(False)
            r = cli.connect_ex(srv.getsockname())
            if r not in (0, errno.EINPROGRESS):
                raise OSError(r, "connect_ex")
            port = srv.getsockname()[1]
            srv.close()
            refused = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            r = refused.connect_ex(("127.0.0.1", port))
            if r != errno.ECONNREFUSED:
                raise OSError(r, "expected ECONNREFUSED")
        attempt(go)
    elif mode == "full_nonblock":
        attempt(lambda: full_backlog(args[0], False))
    elif mode == "full_block":
        attempt(lambda: full_backlog(args[0], True))
    elif mode == "listen":  # on the host: log what arrives, one line per datagram/connection
        kind, path, log = args
        typ = socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM
        s = socket.socket(socket.AF_UNIX, typ)
        if path.startswith("@"):  # abstract
            s.bind("\0" + path[1:])
        else:
            s.bind(path)
            os.chmod(path, 0o777)
        if typ == socket.SOCK_STREAM:
            s.listen(16)
        with open(log + ".ready", "w"):
            pass
        while True:
            if typ == socket.SOCK_STREAM:
                c, _ = s.accept()
                data = c.recv(64)
                c.close()
            else:
                data = s.recv(64)
            with open(log, "ab") as f:
                f.write(b"got:" + data)
    else:
        print("unknown mode", mode, file=sys.stderr)
        sys.exit(2)


main()
