"""A Spark session Almanac starts listens on loopback only: the driver's
RPC and block manager do not bind the machine's network address."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any

from almanac.spark.local import LOOPBACK


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def listening_addresses(pid: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the TCP sockets process ``pid`` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(_address(fields[1].split(":")[0]))
    return found


def test_the_session_binds_and_advertises_loopback_only(spark: Any) -> None:
    assert spark.conf.get("spark.driver.host") == LOOPBACK
    assert spark.conf.get("spark.driver.bindAddress") == LOOPBACK
    assert spark.range(3).count() == 3  # the driver's services are up
    jvm = spark.sparkContext._gateway.proc.pid
    addresses = listening_addresses(jvm)
    assert len(addresses) >= 2, "the driver listens (RPC, block manager, gateway)"
    assert all(address.is_loopback for address in addresses), addresses
