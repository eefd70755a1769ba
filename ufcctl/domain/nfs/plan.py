"""From the nfs_server role's variables to what it writes (files, directories), or every problem."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ufcctl.domain.nfs import backup_store, exports, ganesha, layout

IMPLEMENTATIONS = ("kernel", "ganesha")
EXPORT_ID = 1  # the dataset export; 0 is ganesha's own pseudo root
BACKUP_EXPORT_ID = 2  # the etcd snapshot store (backup_store.py), where the inventory has etcd members


@dataclass(frozen=True)
class ServerPlan:
    """What the role's templates read (roles/nfs_server/templates/): kernel, the exports of
    exports.j2; ganesha, the server settings of ganesha.conf.j2 and the EXPORT blocks of
    ganesha-exports.conf.j2."""

    problems: tuple[str, ...]
    kernel_exports: tuple[dict[str, Any], ...] = ()  # kernel: each line of the /etc/exports.d file
    ganesha_server: Mapping[str, Any] = field(default_factory=dict)  # ganesha: ganesha.conf
    ganesha_exports: tuple[dict[str, Any], ...] = ()  # ganesha: the included exports file
    client_path: str = ""  # what clients mount: nfs://<server><client_path>
    layout: tuple[layout.LayoutDir, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "problems": list(self.problems),
            "kernel_exports": list(self.kernel_exports),
            "ganesha_server": dict(self.ganesha_server),
            "ganesha_exports": list(self.ganesha_exports),
            "client_path": self.client_path,
            "layout": [vars(d) for d in self.layout],
        }


def _ints(value: Any) -> tuple[Any, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) if isinstance(v, str) and v.isdigit() else v for v in items)


def _server(s: Mapping[str, Any]) -> ganesha.GaneshaServer:
    return ganesha.GaneshaServer(
        protocols=_ints(s["ganesha_protocols"]),
        transports=tuple(str(t).upper() for t in s["ganesha_transports"]),
        nfs_port=s["ganesha_nfs_port"],
        graceless=bool(s["ganesha_graceless"]),
        grace_period=s["ganesha_grace_period"],
        lease_lifetime=s["ganesha_lease_lifetime"],
        rpc_max_connections=s["ganesha_rpc_max_connections"],
        rpc_ioq_thrdmax=s["ganesha_rpc_ioq_thrdmax"],
        entries_hwmark=s["ganesha_entries_hwmark"],
        krb5=bool(s["ganesha_krb5"]),
        exports_file=s["ganesha_exports_file"],
    )


def plan_server(settings: Mapping[str, Any]) -> ServerPlan:
    """`settings`: the role's variables without the `nfs_server_` prefix."""
    s = settings
    impl = s["implementation"]
    if impl not in IMPLEMENTATIONS:
        allowed = ", ".join(IMPLEMENTATIONS)
        return ServerPlan((f"nfs_server_implementation {impl!r} must be one of {allowed}",))
    path, options = s["export_path"], list(s["export_options"] or [])
    clients = exports.normalize_clients(s["export_network"] or ())
    # the etcd snapshot store: a second export for the members only (nothing without path or members)
    store_path = str(s.get("backup_path") or "").rstrip("/")
    store_clients = exports.normalize_clients(s.get("backup_clients") or ()) if store_path else ()
    store_options = backup_store.options(str(s.get("backup_owner") or "65534"))
    server = export = None
    stores: list[ganesha.GaneshaExport] = []
    if impl == "ganesha":
        server = _server(s)
        export = ganesha.GaneshaExport(EXPORT_ID, path, s["ganesha_pseudo_path"], clients, tuple(options))
        if store_clients:  # NFSv3 (backup_store.py: libnfs's v4 writes fail); the server gains v3, the
            # dataset export keeps the versions it had
            export = replace(export, protocols=tuple(server.protocols))
            server = replace(server, protocols=tuple(sorted({*server.protocols, backup_store.NFS_VERSION})))
            stores = [ganesha.GaneshaExport(BACKUP_EXPORT_ID, store_path, store_path, store_clients,
                                            tuple(store_options), (backup_store.NFS_VERSION,))]
        problems = ganesha.exports_problems([export, *stores]) + ganesha.server_problems(server)
    else:
        problems = exports.export_problems(path, clients, options, "nfs_server_export")
        if store_clients:
            problems += exports.export_problems(store_path, store_clients, store_options, "nfs_server_backup")
    if store_clients and (store_path == path.rstrip("/") or store_path.startswith(path.rstrip("/") + "/")):
        problems.append(f"nfs_server_backup_path {store_path} is inside the dataset export {path}: every "
                        "node could read the etcd snapshots there; choose a directory outside it")
    problems += layout.layout_problems(s["layout"] or [])
    if problems:
        return ServerPlan(tuple(problems))
    dirs = layout.plan_layout(path, s["layout"] or [], str(s["data_owner"]), str(s["data_group"]))
    if store_clients:
        owner = str(s.get("backup_owner") or "65534")
        dirs += tuple(layout.LayoutDir(d, backup_store.DIR_MODE, owner, owner)
                      for d in [store_path, *(f"{store_path}/{c}" for c in backup_store.CLUSTERS)])
    if server is None or export is None:
        lines = [exports.kernel_export(path, clients, options)]
        if store_clients:
            lines.append(exports.kernel_export(store_path, store_clients, store_options))
        return ServerPlan((), kernel_exports=tuple(lines), client_path=path, layout=dirs)
    return ServerPlan(
        (),
        ganesha_server=ganesha.server_values(server),
        ganesha_exports=tuple(ganesha.export_values([export, *stores], server.protocols, server.transports)),
        client_path=export.pseudo,
        layout=dirs,
    )

