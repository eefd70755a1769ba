"""nfs-ganesha configuration: the server file (core, NFSv4, caches) and the exports file it includes.

Two files on purpose: ganesha re-reads EXPORT blocks on SIGHUP (ganesha.nfsd -h: "SIGHUP: Reload
LOG and EXPORT config"), but core and NFSv4 settings only at start. The role reloads when only the
exports file changed and restarts when the server file did. Ranges are those of ganesha 4.3's
ganesha-core-config(8); a value outside them is refused here instead of being clamped by the server.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ufcctl.domain.nfs.exports import export_problems, ganesha_settings, normalize_clients, path_problems

HEADER = "# Managed by ufcctl (roles/nfs_server); local edits are overwritten.\n"
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


def _block(name: str, lines: Iterable[str], indent: str = "") -> list[str]:
    return [f"{indent}{name} {{", *(f"{indent}    {line}" for line in lines), f"{indent}}}"]


def render_server(server: GaneshaServer) -> str:
    """The server file (/etc/ganesha/ganesha.conf); it %includes the exports file."""
    core = [
        f"NFS_Port = {server.nfs_port};",
        f"Protocols = {', '.join(str(p) for p in sorted(server.protocols))};",
        f"Transports = {', '.join(sorted(server.transports))};",
        f"RPC_Max_Connections = {server.rpc_max_connections};",
        f"RPC_Ioq_ThrdMax = {server.rpc_ioq_thrdmax};",
    ]
    nfsv4 = [
        f"Graceless = {str(server.graceless).lower()};",
        f"Grace_Period = {server.grace_period};",
        f"Lease_Lifetime = {server.lease_lifetime};",
    ]
    lines = [
        *_block("NFS_CORE_PARAM", core),
        *_block("NFSV4", nfsv4),
        *_block("NFS_KRB5", [f"Active_krb5 = {str(server.krb5).lower()};"]),
        *_block("MDCACHE", [f"Entries_HWMark = {server.entries_hwmark};"]),
        f'%include "{server.exports_file}"',
    ]
    return HEADER + "\n".join(lines) + "\n"


def render_exports(
    exports: Sequence[GaneshaExport], protocols: Sequence[int], transports: Sequence[str]
) -> str:
    """EXPORT blocks: no access by default, each client network granted what its options say."""
    blocks: list[str] = []
    for export in exports:
        settings = ganesha_settings(export.options)
        client = [f"Clients = {', '.join(normalize_clients(export.clients))};",
                  f"Access_Type = {settings.access_type};",
                  f"Squash = {settings.squash};"]
        body = [
            f"Export_Id = {export.export_id};",
            f'Path = "{export.path}";',
            f'Pseudo = "{export.pseudo}";',
            # Same as the server's, or ganesha logs "A protocol is specified for a CLIENT block
            # that is not enabled in NFS_CORE_PARAM, fixing up" at every start (seen in 4.3).
            f"Protocols = {', '.join(str(p) for p in sorted(export.protocols or protocols))};",
            f"Transports = {', '.join(sorted(transports))};",
            f"SecType = {', '.join(settings.sectype)};",
            "Access_Type = None;",
        ]
        if settings.anonymous_uid is not None:
            body.append(f"Anonymous_Uid = {settings.anonymous_uid};")
        if settings.anonymous_gid is not None:
            body.append(f"Anonymous_Gid = {settings.anonymous_gid};")
        if settings.kernel_only:
            body.insert(0, f"# kernel-only options, not for ganesha: {', '.join(settings.kernel_only)}")
        body += [*_block("CLIENT", client), *_block("FSAL", ["Name = VFS;"])]
        blocks.append("\n".join(_block("EXPORT", body)))
    return HEADER + "\n".join(blocks) + "\n"
