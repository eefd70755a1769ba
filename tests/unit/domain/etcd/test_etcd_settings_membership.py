"""Controller-side settings (same defaults and overrides as the role) and member-join planning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.etcd.membership import initial_cluster, plan_join
from ufcctl.domain.etcd.settings import SettingsError, controller_pki_dir, defrag_config

GiB = 1024**3


@pytest.mark.parametrize(
    ("hostvars", "cluster", "expected"),
    [
        pytest.param(
            {},
            "core",
            ("dbSizeFree > 200*1024*1024 || dbQuotaUsage > 0.8", 8 * GiB, 3600.0, False),
            id="role-defaults",
        ),
        pytest.param(
            {"etcd_defrag_rule": "true", "etcd_quota_backend_bytes": "4294967296"},
            "events",
            ("true", 4 * GiB, 3600.0, False),
            id="inventory-values-strings-converted",
        ),
        pytest.param(
            {
                "etcd_defrag_rule": "true",
                "etcd_cluster_overrides": {
                    "pods": {
                        "defrag_rule": "dbQuotaUsage > 0.5",
                        "defrag_move_leader": "yes",
                        "defrag_min_interval": 60,
                    }
                },
            },
            "pods",
            ("dbQuotaUsage > 0.5", 8 * GiB, 60.0, True),
            id="per-cluster-override",
        ),
        pytest.param(
            {"etcd_cluster_overrides": {"pods": {"defrag_rule": "true"}}},
            "core",
            ("dbSizeFree > 200*1024*1024 || dbQuotaUsage > 0.8", 8 * GiB, 3600.0, False),
            id="override-of-another-cluster-ignored",
        ),
        pytest.param(
            {"etcd_defrag_rule": "{{ my_rule }}"},
            "core",
            ("dbSizeFree > 200*1024*1024 || dbQuotaUsage > 0.8", 8 * GiB, 3600.0, False),
            id="unrendered-template-falls-back",
        ),
    ],
)
def test_defrag_config(hostvars: dict[str, Any], cluster: str, expected: tuple[Any, ...]) -> None:
    config = defrag_config(hostvars, cluster)
    s = config.settings
    assert (s.rule.text, s.quota_bytes, s.min_interval_seconds, s.move_leader) == expected


@pytest.mark.parametrize(
    ("hostvars", "error"),
    [
        pytest.param({"etcd_defrag_rule": "dbSize >"}, "etcd_defrag_rule for cluster core", id="bad-rule"),
        pytest.param({"etcd_quota_backend_bytes": "8G"}, "etcd settings for cluster core", id="bad-number"),
    ],
)
def test_defrag_config_errors_name_the_variable(hostvars: dict[str, Any], error: str) -> None:
    with pytest.raises(SettingsError, match=error):
        defrag_config(hostvars, "core")


@pytest.mark.parametrize(
    ("hostvars", "expected"),
    [
        pytest.param({}, "/state/pki/default/etcd", id="default"),
        pytest.param({"ufc_cluster_name": "lab"}, "/state/pki/lab/etcd", id="per-cluster-name"),
        pytest.param({"etcd_pki_controller_dir": "/srv/pki"}, "/srv/pki", id="explicit"),
    ],
)
def test_controller_pki_dir(hostvars: dict[str, Any], expected: str) -> None:
    assert controller_pki_dir(hostvars, Path("/state")) == Path(expected)


MEMBERS = [
    {"ID": "11", "name": "cp1", "peerURLs": ["https://10.0.0.1:2380"]},
    {"ID": "22", "name": "cp2", "peerURLs": ["https://10.0.0.2:2380"]},
]


@pytest.mark.parametrize(
    ("members", "name", "peer", "action", "reason"),
    [
        pytest.param(MEMBERS, "cp3", "https://10.0.0.3:2380", "add", "not a member yet", id="new-member"),
        pytest.param(
            MEMBERS + [{"ID": "33", "peerURLs": ["https://10.0.0.3:2380"]}],
            "cp3",
            "https://10.0.0.3:2380",
            "reuse",
            "never started",
            id="unfinished-add",
        ),
        pytest.param(
            MEMBERS,
            "cp2",
            "https://10.0.0.2:2380",
            "refuse",
            "etcdctl member remove 16",
            id="known-member-without-data",
        ),
        pytest.param(
            MEMBERS, "cp9", "https://10.0.0.2:2380", "refuse", "belongs to member cp2", id="peer-url-taken"
        ),
    ],
)
def test_plan_join(members: list[dict[str, Any]], name: str, peer: str, action: str, reason: str) -> None:
    plan = plan_join(members, name, peer)
    assert plan.action == action and reason in plan.reason


def test_initial_cluster_lists_started_members_and_the_joiner() -> None:
    after_add = MEMBERS + [{"ID": "33", "peerURLs": ["https://10.0.0.3:2380"]}]
    assert initial_cluster(after_add, "cp3", "https://10.0.0.3:2380") == (
        "cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380"
    )
    assert initial_cluster(MEMBERS, "cp3", "https://10.0.0.3:2380").endswith(",cp3=https://10.0.0.3:2380")
