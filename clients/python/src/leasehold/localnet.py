"""The networks this host already has: what ``exclude_local=True`` adds to a
reservation's exclusions, so a pool never hands out a subnet that clashes
with one of this host's interfaces (as the Go client's ``ExcludeLocal()``).

Read with the standard library alone: ``ip -j addr`` (iproute2) where it
runs, else Linux's ``/proc/net/route`` (IPv4 networks reached directly) and
``/proc/net/if_inet6`` (IPv6 addresses with their prefix lengths).
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import socket
import struct
import subprocess
from pathlib import Path

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def local_networks() -> list[str]:
    """This host's interface networks (CIDR, host bits cleared), each once."""
    found = _from_ip() or _from_proc()
    seen: dict[str, None] = {}
    for net in found:
        seen.setdefault(str(net), None)
    return list(seen)


def _from_ip() -> list[Network]:
    ip = shutil.which("ip")
    if ip is None:
        return []
    try:
        out = subprocess.run(
            [ip, "-j", "addr"], capture_output=True, text=True, timeout=5, check=True
        ).stdout
        links = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    nets: list[Network] = []
    for link in links if isinstance(links, list) else []:
        for addr in link.get("addr_info", []) if isinstance(link, dict) else []:
            local, plen = addr.get("local"), addr.get("prefixlen")
            if isinstance(local, str) and isinstance(plen, int):
                try:
                    nets.append(ipaddress.ip_interface(f"{local}/{plen}").network)
                except ValueError:
                    continue
    return nets


def _from_proc() -> list[Network]:
    nets: list[Network] = []
    try:
        lines = Path("/proc/net/route").read_text().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        dest, gateway, mask = (int(f, 16) for f in (fields[1], fields[2], fields[7]))
        if gateway or not mask:
            continue  # a route through a router, or the default route
        nets.append(ipaddress.ip_network(f"{_ipv4(dest)}/{_ipv4(mask)}", strict=False))
    try:
        lines = Path("/proc/net/if_inet6").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        addr = ":".join(fields[0][i:i + 4] for i in range(0, 32, 4))
        nets.append(ipaddress.ip_interface(f"{addr}/{int(fields[2], 16)}").network)
    return nets


def _ipv4(value: int) -> str:
    """An IPv4 address as /proc/net/route writes it (little-endian hex)."""
    return socket.inet_ntoa(struct.pack("<I", value))
