#!/usr/bin/python3
"""netloris.py HOST PORT COUNT SECONDS TARGET MARK: a slow-loris client for
tests/cli/netallow.bats. Opens COUNT connections to the proxy at HOST:PORT
and sends each one the head "CONNECT TARGET HTTP/1.1" one byte a second
(never its end), for SECONDS. Once all are open it creates the file MARK, so
the test knows they are held. Prints "opened N", then, at the end, "closed N"
(how many the proxy had closed meanwhile) and "held N" (still open)."""
import os
import resource
import socket
import sys
import time


def main():
    host, port, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    head = f"CONNECT {sys.argv[5]} HTTP/1.1\r\nHost: {sys.argv[5]}\r\n".encode()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 32 and hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 32), hard))
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.connect((host, port))
        s.setblocking(False)
        socks.append(s)
    print(f"opened {len(socks)}", flush=True)
    with open(sys.argv[6], "w", encoding="utf-8") as f:
        f.write(f"{len(socks)}\n")
    closed = set()
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        byte = head[i % len(head):i % len(head) + 1]
        for n, s in enumerate(socks):
            if n in closed:
                continue
            try:
                s.send(byte)
                if s.recv(4096) == b"":
                    closed.add(n)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(n)
        i += 1
        time.sleep(1)
    print(f"closed {len(closed)}", flush=True)
    print(f"held {len(socks) - len(closed)}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
