#!/usr/bin/env python3
"""RSS of a real server while N connections each hold a partial request head.

    python3 bench/partial_heads.py BINARY SIZE_KIB [CONNECTIONS]

Starts `BINARY serve` on a fresh database on 127.0.0.1:18599, opens
CONNECTIONS (default 1000) connections that each send SIZE_KIB of a header
line and never finish it, and prints the server's RSS before and while they
are held. Raise `ulimit -n` first for large CONNECTIONS.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

binary, size_kib = sys.argv[1], int(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
workdir = tempfile.mkdtemp(prefix="leasehold-heads-")
server = subprocess.Popen(
    [binary, "serve", "--listen", "127.0.0.1:18599", "--db", f"{workdir}/bench.db"],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)


def rss_mib():
    with open(f"/proc/{server.pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1)) / 1024


try:
    time.sleep(2)
    before = rss_mib()
    head = b"GET /v1/locks HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (size_kib * 1024)
    held = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", 18599))
        conn.setblocking(False)
        try:
            conn.send(head)
        except OSError:
            pass
        held.append(conn)
    time.sleep(3)
    during = rss_mib()
    print(
        f"{count} connections x {size_kib} KiB partial head: "
        f"RSS {before:.1f} MiB -> {during:.1f} MiB (+{during - before:.1f})"
    )
    for conn in held:
        conn.close()
finally:
    server.terminate()
    server.wait()
    subprocess.run(["rm", "-rf", workdir])
