"""nfs-ganesha configuration: the server file (core, NFSv4, caches) and the exports file it includes,
as the values roles/nfs_server/templates/ganesha.conf.j2 and ganesha-exports.conf.j2 read.

Two files on purpose: ganesha re-reads EXPORT blocks on SIGHUP (ganesha.nfsd -h: "SIGHUP: Reload
LOG and EXPORT config"), but core and NFSv4 settings only at start. The role reloads when only the
exports file changed and restarts when the server file did. Ranges are those of ganesha 4.3's
ganesha-core-config(8); a value outside them is refused here instead of being clamped by the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.nfs.exports import export_problems, ganesha_settings, normalize_clients, path_problems

PROTOCOLS = frozenset({3, 4})
TRANSPORTS = frozenset({"TCP", "UDP"})
# name -> (low, high), ganesha-core-config(8) / ganesha-cache-config(8), nfs-ganesha 4.3
RANGES: dict[str, tuple[int, int]] = {
    "nfs_port": (1, 65535),
    "lease_lifetime": (0, 120),
    "grace_period": (0, 180),
    "rpc_max_connections": (1, 10000),
    "rpc_ioq_thrdmax": (1, 1024 * 128),
    "entries_hwmark": (1, 2**32 - 1),
}


@dataclass(frozen=True)
class GaneshaServer:
    """Settings of the server file; names follow the role's variables without the prefix."""

    protocols: tuple[int, ...] = (4,)
    transports: tuple[str, ...] = ("TCP",)
    nfs_port: int = 2049
    graceless: bool = False
    grace_period: int = 90
    lease_lifetime: int = 60
    rpc_max_connections: int = 10000
    rpc_ioq_thrdmax: int = 512
    entries_hwmark: int = 500000
    krb5: bool = False
    exports_file: str = "/etc/ganesha/ufcctl-exports.conf"


@dataclass(frozen=True)
class GaneshaExport:
    export_id: int
    path: str  # directory on the server
    pseudo: str  # NFSv4 path clients use: nfs://server<pseudo>
    clients: tuple[str, ...]
    options: tuple[str, ...]  # exports(5) syntax, translated by exports.ganesha_settings
    protocols: tuple[int, ...] = ()  # this export's NFS versions; () = the server's


def server_problems(server: GaneshaServer) -> list[str]:
    problems = []
    if not server.protocols or set(server.protocols) - PROTOCOLS:
        problems.append(f"nfs_server_ganesha_protocols {list(server.protocols)} must be a list of 3, 4")
    if not server.transports or set(server.transports) - TRANSPORTS:
        problems.append(f"nfs_server_ganesha_transports {list(server.transports)} must be a list of TCP, UDP")
    for name, (low, high) in RANGES.items():
        value = getattr(server, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            problems.append(f"nfs_server_ganesha_{name} {value!r} must be an integer from {low} to {high}")
    if not problems and not server.graceless and server.grace_period < server.lease_lifetime:
        # A client that last renewed just before a restart must still be inside its lease when the
        # grace period ends, or it loses state it was entitled to reclaim (RFC 7530 section 9.6.2).
        problems.append(
            f"nfs_server_ganesha_grace_period {server.grace_period} is shorter than "
            f"nfs_server_ganesha_lease_lifetime {server.lease_lifetime}"
        )
    problems += path_problems(server.exports_file, "nfs_server_ganesha_exports_file")
    return problems


def exports_problems(exports: Sequence[GaneshaExport]) -> list[str]:
    problems: list[str] = []
    for export in exports:
        what = f"nfs_server_export {export.path}"
        problems += export_problems(export.path, export.clients, export.options, what)
        problems += path_problems(export.pseudo, f"{what} pseudo path")
        if export.pseudo == "/":
            problems.append(f"{what}: pseudo path / is ganesha's own NFSv4 root; "
                            "set nfs_server_ganesha_pseudo_path, e.g. /data")
    for field in ("export_id", "pseudo"):
        values = [getattr(e, field) for e in exports]
        for value in sorted({v for v in values if values.count(v) > 1}, key=str):
            problems.append(f"two exports share {field} {value}")
    for export in exports:
        if not isinstance(export.export_id, int) or not 1 <= export.export_id <= 65535:
            # 0 is the pseudo-root export ganesha creates itself
            problems.append(f"export {export.path}: Export_Id {export.export_id!r} must be from 1 to 65535")
    return problems


def server_values(server: GaneshaServer) -> dict[str, Any]:
    """What the server file (/etc/ganesha/ganesha.conf) says; it %includes the exports file."""
    return {
        "nfs_port": server.nfs_port,
        "protocols": sorted(server.protocols),
        "transports": sorted(server.transports),
        "rpc_max_connections": server.rpc_max_connections,
        "rpc_ioq_thrdmax": server.rpc_ioq_thrdmax,
        "graceless": bool(server.graceless),
        "grace_period": server.grace_period,
        "lease_lifetime": server.lease_lifetime,
        "krb5": bool(server.krb5),
        "entries_hwmark": server.entries_hwmark,
        "exports_file": server.exports_file,
    }


def export_values(
    exports: Sequence[GaneshaExport], protocols: Sequence[int], transports: Sequence[str]
) -> list[dict[str, Any]]:
    """The EXPORT blocks: no access by default, each client network granted what its options say.
    An export's protocols default to the server's: a CLIENT block with one the server does not enable
    makes ganesha log "A protocol is specified for a CLIENT block that is not enabled in
    NFS_CORE_PARAM, fixing up" at every start (seen in 4.3)."""
    blocks: list[dict[str, Any]] = []
    for export in exports:
        settings = ganesha_settings(export.options)
        blocks.append({
            "export_id": export.export_id,
            "path": export.path,
            "pseudo": export.pseudo,
            "protocols": sorted(export.protocols or protocols),
            "transports": sorted(transports),
            "sectype": list(settings.sectype),
            "anonymous_uid": settings.anonymous_uid,
            "anonymous_gid": settings.anonymous_gid,
            "kernel_only": list(settings.kernel_only),  # kept as a comment: not for ganesha
            "clients": list(normalize_clients(export.clients)),
            "access_type": settings.access_type,
            "squash": settings.squash,
        })
    return blocks
