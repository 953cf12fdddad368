#!/usr/bin/python3
"""netserve.py LOG SPEC...: the local servers of tests/cli/netallow.bats and
bench/netproxy.sh (docs/network.md, "Test plan"), offline, in one process.

Each SPEC is one of
  http:ADDR:PORT:DIR              files below DIR over HTTP
  https:ADDR:PORT:DIR:CERT:KEY    the same over TLS (CERT holds the chain)
  git:ADDR:PORT:ROOT:CERT:KEY     `git http-backend` over TLS, for the
                                  repositories below ROOT (smart HTTP, read)
  tcp:ADDR:PORT                   a raw TCP listener: answers "hello\\n"
  udp:ADDR:PORT                   a UDP listener: echoes each datagram
ADDR is an IPv4 address or an IPv6 one in brackets. PORT 0 picks a free
port. Every request or connection a server sees is appended to LOG as one
line ("http 127.0.0.2:8080 GET /a Host: x", "tcp 127.0.0.3:7000 accepted",
"udp ... datagram"), so a test can tell that a refused connection never
arrived. Prints one line "ready KIND ADDR PORT" per server once all listen,
then serves until killed."""
import http.server
import os
import socket
import ssl
import subprocess
import sys
import threading

LOG_LOCK = threading.Lock()
LOG_PATH = None


def log(line):
    with LOG_LOCK:
        with open(LOG_PATH, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def split_addr(spec):
    """ADDR:REST with ADDR possibly bracketed; returns (family, addr, rest)."""
    if spec.startswith("["):
        end = spec.index("]")
        return socket.AF_INET6, spec[1:end], spec[end + 2:]
    addr, _, rest = spec.partition(":")
    return socket.AF_INET, addr, rest


class Files(http.server.SimpleHTTPRequestHandler):
    """Static files; the body sent with sendfile(2), so that a benchmark's
    server is not the bottleneck."""

    def log_message(self, *args):
        pass

    def log_request(self, code="-", size="-"):
        log(f"{self.server.kind} {self.server.label} {self.command} {self.path} "
            f"Host: {self.headers.get('Host', '')}")

    def copyfile(self, source, outputfile):
        outputfile.flush()
        try:
            self.connection.sendfile(source)
        except (BrokenPipeError, ConnectionResetError):
            pass


class GitBackend(http.server.BaseHTTPRequestHandler):
    """Smart HTTP through `git http-backend` (CGI)."""

    def log_message(self, *args):
        pass

    def run_backend(self):
        log(f"git {self.server.label} {self.command} {self.path} "
            f"Host: {self.headers.get('Host', '')}")
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(length),
            "REMOTE_ADDR": self.client_address[0],
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": self.server.root,
        }
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True, check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    do_GET = run_backend
    do_POST = run_backend


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def http_server(kind, rest):
    family, addr, rest = split_addr(rest)
    parts = rest.split(":")
    port = int(parts[0])
    handler = GitBackend if kind == "git" else Files
    if kind != "git":
        directory = parts[1]
        handler = type("Dir", (Files,), {"__init__": lambda self, *a, **k: Files.__init__(
            self, *a, directory=directory, **k)})
    Server.address_family = family
    srv = Server((addr, port), handler)
    srv.kind = kind
    if kind == "git":
        srv.root = parts[1]
    if kind in ("https", "git"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(parts[-2], parts[-1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.label = f"{addr}:{srv.server_address[1]}"
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return addr, srv.server_address[1]


def tcp_server(rest):
    family, addr, rest = split_addr(rest)
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(rest)))
    s.listen(128)
    label = f"{addr}:{s.getsockname()[1]}"

    def serve():
        while True:
            c, _ = s.accept()
            log(f"tcp {label} accepted")
            try:
                c.sendall(b"hello\n")
            except OSError:
                pass
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return addr, s.getsockname()[1]


def udp_server(rest):
    family, addr, rest = split_addr(rest)
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, int(rest)))
    label = f"{addr}:{s.getsockname()[1]}"

    def serve():
        while True:
            data, peer = s.recvfrom(65536)
            log(f"udp {label} datagram {len(data)}")
            s.sendto(data, peer)
    threading.Thread(target=serve, daemon=True).start()
    return addr, s.getsockname()[1]


def main():
    global LOG_PATH
    LOG_PATH = sys.argv[1]
    ready = []
    for spec in sys.argv[2:]:
        kind, _, rest = spec.partition(":")
        if kind in ("http", "https", "git"):
            addr, port = http_server(kind, rest)
        elif kind == "tcp":
            addr, port = tcp_server(rest)
        elif kind == "udp":
            addr, port = udp_server(rest)
        else:
            sys.exit(f"netserve.py: unknown server kind {kind!r}")
        ready.append(f"ready {kind} {addr} {port}")
    print("\n".join(ready), flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
