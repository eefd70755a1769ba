"""The nfs_server role's planner: the role's own defaults give a valid plan once a network is set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers.role_templates import render
from ufcctl.domain.nfs.plan import ServerPlan, plan_server

ROOT = Path(__file__).resolve().parents[4]
DEFAULTS = yaml.safe_load((ROOT / "roles/nfs_server/defaults/main.yml").read_text())
PREFIX = "nfs_server_"


HEADER = "# Managed by ufcctl (roles/nfs_server); local edits are overwritten.\n"


def _file(plan: ServerPlan, template: str) -> str:
    """A file of the plan as the role writes it: roles/nfs_server/templates/<template>."""
    return render("nfs_server", template, {"__nfs_server_plan": plan.as_dict()})


def _exports_line(plan: ServerPlan) -> str:
    """The kernel exports file's lines below its header ('' without kernel exports)."""
    if not plan.kernel_exports:
        return ""
    text = _file(plan, "exports.j2")
    assert text.startswith(HEADER) and text.endswith("\n"), text
    return text[len(HEADER) : -1]


def _ganesha_server(plan: ServerPlan) -> str:
    return _file(plan, "ganesha.conf.j2") if plan.ganesha_server else ""


def _ganesha_exports(plan: ServerPlan) -> str:
    return _file(plan, "ganesha-exports.conf.j2") if plan.ganesha_exports else ""


def _settings(**overrides) -> dict:
    settings = {k[len(PREFIX) :]: v for k, v in DEFAULTS.items() if k.startswith(PREFIX)}
    settings["ganesha_pseudo_path"] = settings["export_path"]  # the default is a template of it
    settings["backup_clients"] = []  # the default is a template over the inventory: no etcd members here
    settings.update(overrides)
    return settings


def test_defaults_need_a_network() -> None:
    plan = plan_server(_settings())
    assert plan.problems == (
        "nfs_server_export: no client network; set the nodes' network, e.g. 10.0.0.0/16",
    )
    assert plan.layout == ()


def test_kernel_plan_from_defaults() -> None:
    plan = plan_server(_settings(export_network="10.0.0.0/16"))
    assert plan.problems == ()
    assert _exports_line(plan) == "/data 10.0.0.0/16(rw,sync,no_root_squash,no_subtree_check)"
    assert _ganesha_server(plan) == "" and plan.client_path == "/data"
    assert [d.path for d in plan.layout] == [
        "/data/atlas_dls",
        "/data/atlas_dls/output",
        "/data/atlas_dls/public",
        "/data/atlas_dls/public/code",
        "/data/atlas_dls/public/dataset",
    ]


def test_ganesha_plan_like_the_lab() -> None:
    plan = plan_server(
        _settings(
            implementation="ganesha",
            export_path="/srv/nfs",
            ganesha_pseudo_path="/data",
            export_network=["10.89.74.0/24"],
            ganesha_graceless=True,
        )
    )
    assert plan.problems == ()
    assert _exports_line(plan) == "" and plan.client_path == "/data"
    assert "Graceless = true;" in _ganesha_server(plan)
    exports = _ganesha_exports(plan)
    assert 'Path = "/srv/nfs";' in exports and "Clients = 10.89.74.0/24;" in exports
    assert plan.as_dict()["layout"][0] == {
        "path": "/srv/nfs/atlas_dls",
        "mode": "0755",
        "owner": "1000",
        "group": "1000",
    }


@pytest.mark.parametrize(
    ("overrides", "count"),
    [
        ({"implementation": "knfsd"}, 1),
        ({"export_network": "192.168.200.0/16", "export_options": ["rw"], "layout": [{"path": "/x"}]}, 4),
        (
            {
                "implementation": "ganesha",
                "export_network": "10.0.0.0/8",
                "ganesha_lease_lifetime": 500,
                "ganesha_pseudo_path": "/",
            },
            2,
        ),
    ],
    ids=["unknown-implementation", "every-problem-listed", "ganesha-problems"],
)
def test_problems_are_all_listed(overrides, count) -> None:
    plan = plan_server(_settings(**overrides))
    assert len(plan.problems) == count, plan.problems


def test_the_etcd_snapshot_store_is_a_second_export_for_the_members_only() -> None:
    kernel = plan_server(_settings(export_network="10.0.0.0/16", backup_clients=["10.0.0.11", "10.0.0.12"]))
    assert kernel.problems == ()
    store = "/srv/ufcctl-etcd-backups"
    options = "(rw,sync,all_squash,anonuid=65534,anongid=65534,no_subtree_check,insecure)"
    assert _exports_line(kernel).splitlines() == [
        "/data 10.0.0.0/16(rw,sync,no_root_squash,no_subtree_check)",
        f"{store} 10.0.0.11{options} 10.0.0.12{options}",
    ]
    dirs = {d.path: (d.mode, d.owner) for d in kernel.layout}
    assert {p: dirs[p] for p in dirs if p.startswith(store)} == {
        p: ("0700", "65534") for p in (store, f"{store}/core", f"{store}/events", f"{store}/pods")}
    ganesha = plan_server(_settings(implementation="ganesha", export_network="10.0.0.0/16",
                                    backup_clients=["10.0.0.11"]))
    assert ganesha.problems == ()
    exports = _ganesha_exports(ganesha)
    assert "Export_Id = 2;" in exports and f'Pseudo = "{store}";' in exports
    assert "Squash = All_Squash;" in _ganesha_exports(ganesha)
    assert "Anonymous_Uid = 65534;" in _ganesha_exports(ganesha)
    # NFSv3 for the store (libnfs 4.0's v4 writes fail), the dataset export keeps v4 only
    data, store_block = _ganesha_exports(ganesha).split("EXPORT {")[1:]
    assert "Protocols = 4;" in data and "Protocols = 3;" in store_block
    assert "Protocols = 3, 4;" in _ganesha_server(ganesha)


@pytest.mark.parametrize("path", ["/data/etcd", "/data"])
def test_a_store_inside_the_dataset_export_is_refused(path: str) -> None:
    plan = plan_server(_settings(export_network="10.0.0.0/16", backup_clients=["10.0.0.11"],
                                 backup_path=path))
    assert any("is inside the dataset export /data" in p for p in plan.problems), plan.problems


def test_no_members_or_no_path_means_no_store() -> None:
    for kw in ({"backup_clients": []}, {"backup_clients": ["10.0.0.11"], "backup_path": ""}):
        plan = plan_server(_settings(export_network="10.0.0.0/16", **kw))
        assert plan.problems == () and len(_exports_line(plan).splitlines()) == 1
        assert not any("etcd-backups" in d.path for d in plan.layout)
