"""nfs-ganesha server and exports files (roles/nfs_server/templates/, fed by the domain's values):
rendered text, range checks, duplicate exports."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.role_templates import render
from ufcctl.domain.nfs.ganesha import (
    GaneshaExport,
    GaneshaServer,
    export_values,
    exports_problems,
    server_problems,
    server_values,
)


def render_server(server: GaneshaServer) -> str:
    """ganesha.conf as the role writes it: templates/ganesha.conf.j2 with the domain's values."""
    values = server_values(server)
    return render("nfs_server", "ganesha.conf.j2", {"__nfs_server_plan": {"ganesha_server": values}})


def render_exports(exports: list[GaneshaExport], protocols: tuple[int, ...],
                   transports: tuple[str, ...]) -> str:
    """The included exports file: templates/ganesha-exports.conf.j2 with the domain's EXPORT blocks."""
    blocks = export_values(exports, protocols, transports)
    return render("nfs_server", "ganesha-exports.conf.j2", {"__nfs_server_plan": {"ganesha_exports": blocks}})

SEED = ("rw", "sync", "no_root_squash", "no_subtree_check")
LAB_EXPORT = GaneshaExport(1, "/srv/nfs", "/data", ("10.89.74.0/24",), SEED)


def test_server_file_has_every_setting_and_includes_the_exports() -> None:
    text = render_server(GaneshaServer(graceless=True, exports_file="/etc/ganesha/x.conf"))
    body = [line.strip() for line in text.splitlines()]
    for expected in (
        "NFS_Port = 2049;",
        "Protocols = 4;",
        "Transports = TCP;",
        "RPC_Max_Connections = 10000;",
        "RPC_Ioq_ThrdMax = 512;",
        "Graceless = true;",
        "Grace_Period = 90;",
        "Lease_Lifetime = 60;",
        "Active_krb5 = false;",
        "Entries_HWMark = 500000;",
    ):
        assert expected in body
    assert body[-1] == '%include "/etc/ganesha/x.conf"'
    assert text.count("{") == text.count("}") == 4


def test_exports_file_grants_access_only_to_the_client_networks() -> None:
    text = render_exports([LAB_EXPORT], (4,), ("TCP",))
    export_part, client_part = text.split("CLIENT {")
    assert "Access_Type = None;" in export_part  # nobody else
    assert 'Path = "/srv/nfs";' in export_part and 'Pseudo = "/data";' in export_part
    assert "Protocols = 4;" in export_part and "SecType = sys;" in export_part
    assert "Clients = 10.89.74.0/24;" in client_part
    assert "Access_Type = RW;" in client_part and "Squash = No_Root_Squash;" in client_part
    assert "Name = VFS;" in client_part
    assert "# kernel-only options, not for ganesha: no_subtree_check, sync" in text
    assert text.count("{") == text.count("}") == 3


def test_anonymous_ids_and_several_clients() -> None:
    export = dataclasses.replace(
        LAB_EXPORT,
        clients=("10.0.0.0/16", "10.1.0.0/16"),
        options=("ro", "sync", "no_subtree_check", "all_squash", "anonuid=7", "anongid=8"),
    )
    text = render_exports([export], (3, 4), ("TCP", "UDP"))
    assert "Clients = 10.0.0.0/16, 10.1.0.0/16;" in text
    assert "Anonymous_Uid = 7;" in text and "Anonymous_Gid = 8;" in text
    assert "Protocols = 3, 4;" in text and "Transports = TCP, UDP;" in text
    assert "Access_Type = RO;" in text and "Squash = All_Squash;" in text


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"protocols": (2,)}, "nfs_server_ganesha_protocols [2]"),
        ({"protocols": ()}, "nfs_server_ganesha_protocols []"),
        ({"transports": ("RDMA",)}, "nfs_server_ganesha_transports"),
        ({"lease_lifetime": 121}, "nfs_server_ganesha_lease_lifetime 121 must be an integer from 0 to 120"),
        ({"grace_period": 181}, "nfs_server_ganesha_grace_period 181 must be an integer from 0 to 180"),
        ({"rpc_max_connections": 16000}, "nfs_server_ganesha_rpc_max_connections 16000 must be"),
        ({"rpc_ioq_thrdmax": 0}, "nfs_server_ganesha_rpc_ioq_thrdmax 0 must be"),
        ({"nfs_port": "2049"}, "nfs_server_ganesha_nfs_port '2049' must be an integer"),
        ({"graceless": False, "grace_period": 30, "lease_lifetime": 60}, "is shorter than"),
        ({"exports_file": "exports.conf"}, "nfs_server_ganesha_exports_file"),
    ],
    ids=[
        "nfs-v2",
        "no-protocol",
        "rdma",
        "lease-range",
        "grace-range",
        "16k-connections",
        "zero-threads",
        "string-port",
        "grace-shorter-than-lease",
        "relative-exports-file",
    ],
)
def test_server_problems(change, fragment) -> None:
    problems = server_problems(dataclasses.replace(GaneshaServer(), **change))
    assert len(problems) == 1 and fragment in problems[0], problems


def test_short_grace_is_fine_when_graceless() -> None:
    assert server_problems(GaneshaServer(graceless=True, grace_period=0)) == []


def test_defaults_are_valid() -> None:
    assert server_problems(GaneshaServer()) == []
    assert exports_problems([LAB_EXPORT]) == []


@pytest.mark.parametrize(
    ("exports", "fragment"),
    [
        ([LAB_EXPORT, dataclasses.replace(LAB_EXPORT, path="/srv/b")], "two exports share export_id 1"),
        (
            [LAB_EXPORT, dataclasses.replace(LAB_EXPORT, export_id=2, path="/srv/b")],
            "two exports share pseudo /data",
        ),
        ([dataclasses.replace(LAB_EXPORT, export_id=0)], "Export_Id 0 must be from 1 to 65535"),
        ([dataclasses.replace(LAB_EXPORT, pseudo="/")], "pseudo path / is ganesha's own NFSv4 root"),
        ([dataclasses.replace(LAB_EXPORT, pseudo="data")], "pseudo path 'data' must be an absolute path"),
        ([dataclasses.replace(LAB_EXPORT, clients=("192.168.200.0/16",))], "did you mean 192.168.0.0/16?"),
    ],
    ids=["same-id", "same-pseudo", "id-zero", "pseudo-root", "pseudo-relative", "client-host-bits"],
)
def test_exports_problems(exports, fragment) -> None:
    problems = exports_problems(exports)
    assert any(fragment in p for p in problems), problems
