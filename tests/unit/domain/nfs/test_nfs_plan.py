"""The nfs_server role's planner: the role's own defaults give a valid plan once a network is set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ufcctl.domain.nfs.plan import plan_server

ROOT = Path(__file__).resolve().parents[4]
DEFAULTS = yaml.safe_load((ROOT / "roles/nfs_server/defaults/main.yml").read_text())
PREFIX = "nfs_server_"


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
    assert plan.exports_line == "/data 10.0.0.0/16(rw,sync,no_root_squash,no_subtree_check)"
    assert plan.ganesha_server == "" and plan.client_path == "/data"
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
    assert plan.exports_line == "" and plan.client_path == "/data"
    assert "Graceless = true;" in plan.ganesha_server
    assert 'Path = "/srv/nfs";' in plan.ganesha_exports and "Clients = 10.89.74.0/24;" in plan.ganesha_exports
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
    assert kernel.exports_line.splitlines() == [
        "/data 10.0.0.0/16(rw,sync,no_root_squash,no_subtree_check)",
        f"{store} 10.0.0.11{options} 10.0.0.12{options}",
    ]
    dirs = {d.path: (d.mode, d.owner) for d in kernel.layout}
    assert {p: dirs[p] for p in dirs if p.startswith(store)} == {
        p: ("0700", "65534") for p in (store, f"{store}/core", f"{store}/events", f"{store}/pods")}
    ganesha = plan_server(_settings(implementation="ganesha", export_network="10.0.0.0/16",
                                    backup_clients=["10.0.0.11"]))
    assert ganesha.problems == ()
    assert "Export_Id = 2;" in ganesha.ganesha_exports and f'Pseudo = "{store}";' in ganesha.ganesha_exports
    assert "Squash = All_Squash;" in ganesha.ganesha_exports
    assert "Anonymous_Uid = 65534;" in ganesha.ganesha_exports
    # NFSv3 for the store (libnfs 4.0's v4 writes fail), the dataset export keeps v4 only
    data, store_block = ganesha.ganesha_exports.split("EXPORT {")[1:]
    assert "Protocols = 4;" in data and "Protocols = 3;" in store_block
    assert "Protocols = 3, 4;" in ganesha.ganesha_server


@pytest.mark.parametrize("path", ["/data/etcd", "/data"])
def test_a_store_inside_the_dataset_export_is_refused(path: str) -> None:
    plan = plan_server(_settings(export_network="10.0.0.0/16", backup_clients=["10.0.0.11"],
                                 backup_path=path))
    assert any("is inside the dataset export /data" in p for p in plan.problems), plan.problems


def test_no_members_or_no_path_means_no_store() -> None:
    for kw in ({"backup_clients": []}, {"backup_clients": ["10.0.0.11"], "backup_path": ""}):
        plan = plan_server(_settings(export_network="10.0.0.0/16", **kw))
        assert plan.problems == () and len(plan.exports_line.splitlines()) == 1
        assert not any("etcd-backups" in d.path for d in plan.layout)
