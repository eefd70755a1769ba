"""From the nfs_server role's variables to what it writes (files, directories), or every problem."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.nfs import exports, ganesha, layout

IMPLEMENTATIONS = ("kernel", "ganesha")
EXPORT_ID = 1  # the role's single export; 0 is ganesha's own pseudo root


@dataclass(frozen=True)
class ServerPlan:
    problems: tuple[str, ...]
    exports_line: str = ""  # kernel: the /etc/exports.d line
    ganesha_server: str = ""  # ganesha: ganesha.conf
    ganesha_exports: str = ""  # ganesha: the included exports file
    client_path: str = ""  # what clients mount: nfs://<server><client_path>
    layout: tuple[layout.LayoutDir, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "problems": list(self.problems),
            "exports_line": self.exports_line,
            "ganesha_server": self.ganesha_server,
            "ganesha_exports": self.ganesha_exports,
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
    server = export = None
    if impl == "ganesha":
        server = _server(s)
        export = ganesha.GaneshaExport(EXPORT_ID, path, s["ganesha_pseudo_path"], clients, tuple(options))
        problems = ganesha.exports_problems([export]) + ganesha.server_problems(server)
    else:
        problems = exports.export_problems(path, clients, options, "nfs_server_export")
    problems += layout.layout_problems(s["layout"] or [])
    if problems:
        return ServerPlan(tuple(problems))
    dirs = layout.plan_layout(path, s["layout"] or [], str(s["data_owner"]), str(s["data_group"]))
    if server is None or export is None:
        return ServerPlan((), exports_line=exports.kernel_exports_line(path, clients, options),
                          client_path=path, layout=dirs)
    return ServerPlan(
        (),
        ganesha_server=ganesha.render_server(server),
        ganesha_exports=ganesha.render_exports([export], server.protocols, server.transports),
        client_path=export.pseudo,
        layout=dirs,
    )

