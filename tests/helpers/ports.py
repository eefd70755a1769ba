"""Free TCP ports on loopback for programs a test starts itself (the real etcd, kube-apiserver)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """`count` distinct ports nothing listens on now (all held open together while they are picked)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
