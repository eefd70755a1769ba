"""Silent contradictions refused, naming both sides: a host in two ToR or super pod groups, a ToR in two
super pods (domain/inventory/contradictions.py), and `certs renew --only etcd:` (an unset variable) that
meant every cluster (domain/certs/renew.py; issue 42)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.domain.test_inventory_validate import base, check, children
from ufcctl.domain.certs.renew import PlanError, parse_only


def _second_tor() -> dict[str, Any]:
    data = base()
    children(data)["tor_2"] = {"hosts": {"npu4": None}, "vars": {"npu_tor_id": "tor-2", "npu_slice_id": 1}}
    return data


def _second_pod_group() -> dict[str, Any]:
    data = base()
    children(data)["pod_a"] = {"hosts": {"npu[1:4]": None}, "vars": {"npu_super_pod_id": 1}}
    children(data)["pod_b"] = {"hosts": {"npu4": None}, "vars": {"npu_super_pod_id": 2}}
    return data


def _tor_in_two_pods() -> dict[str, Any]:
    data = base()
    children(data)["pod_a"] = {"hosts": {"npu[1:2]": None}, "vars": {"npu_super_pod_id": 1}}
    children(data)["pod_b"] = {"hosts": {"npu[3:4]": None}, "vars": {"npu_super_pod_id": 2}}
    return data


CASES = [
    ("host-in-two-tor-groups", _second_tor, "host npu4",
     "is in groups that set npu_tor_id differently: tor_1 ('tor-1'), tor_2 ('tor-2')"),
    ("host-in-two-super-pod-groups", _second_pod_group, "host npu4",
     "is in groups that set npu_super_pod_id differently: pod_a (1), pod_b (2)"),
    ("tor-in-two-super-pods", _tor_in_two_pods, "npu_tor_id 'tor-1'",
     "is in more than one super pod: 1 (host npu1), 2 (host npu3)"),
]


@pytest.mark.parametrize(("make", "subject", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_contradiction_is_refused_naming_both(make, subject: str, message: str) -> None:
    problems, _ = check(make())
    hits = [p for p in problems if message in p]
    assert hits and subject in hits[0], problems


def test_a_value_set_on_the_host_itself_is_no_contradiction() -> None:
    data = _second_tor()
    children(data)["tor_2"]["hosts"] = {"npu4": {"npu_tor_id": "tor-2"}}
    problems, _ = check(data)
    assert [p for p in problems if "differently" in p] == []


@pytest.mark.parametrize(("values", "message"), [
    (["etcd:"], "no cluster after 'etcd:'"),
    (["etcd: "], "no cluster after 'etcd:'"),
    (["kubeadm", "etcd:"], "no cluster after 'etcd:'"),
], ids=["empty", "blank", "beside-another"])
def test_only_etcd_colon_nothing_is_refused(values: list[str], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_only(values, ["core", "events", "pods"])
