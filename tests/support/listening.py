"""Where this machine's processes listen, read from the kernel (``/proc/net/tcp`` and
``tcp6``): how a test shows a server is exposed beyond loopback without connecting to any of the
machine's other addresses."""

from __future__ import annotations

import ipaddress
from pathlib import Path

LISTEN = "0A"  # the socket state of a listening TCP socket


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # The kernel prints each 32-bit word of the address in the host's (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    # The JVM listens on IPv6 sockets: an IPv4 address shows there as ::ffff:a.b.c.d.
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the sockets listening on TCP ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.append(_address(address))
    return found
