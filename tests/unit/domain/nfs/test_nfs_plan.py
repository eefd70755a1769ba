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
