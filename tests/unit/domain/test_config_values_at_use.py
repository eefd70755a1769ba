"""Values refused where they are used, not only by `inventory check` (issue 42): the switch port format
before it is formatted (domain/npu/fabric_plan.host_plan), labels before they are joined into kubelet's
comma-separated --node-labels (domain/label_syntax.node_labels_flag, join.join_configuration and the
kube_node filter that builds the worker's JoinConfiguration)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import load_file
from ufcctl.domain import label_syntax
from ufcctl.domain.controlplane import join, kubeadm
from ufcctl.domain.npu import fabric_plan

ROOT = Path(__file__).resolve().parents[3]
HOST = {"npu_accelerator_type": "module-910b-8", "npu_fabric_subnet": "192.168.0.0/24", "npu_tor_id": "tor-1",
        "npu_slice_id": 0}

FORMATS = [
    ("huge-width", "{port:300000000}"),
    ("huge-width-with-fill", "{port:0>300000000}"),
    ("attribute", "{chip.__class__.__mro__}"),
    ("index", "{chip[0]}"),
    ("conversion", "{port!r}"),
    ("unknown-field", "{self}"),
    ("positional", "{}"),
    ("nested-spec", "{port:{chip}}"),
    ("precision", "{port:.300000000}"),
    ("newline", "Eth1/{port}\nx"),
    ("escape", "Eth1/\x1b]52;c;eA==\x07{port}"),
    ("too-long", "E" * 65 + "{port}"),
    ("unbalanced", "{port"),
]


@pytest.mark.parametrize("port_format", [f[1] for f in FORMATS], ids=[f[0] for f in FORMATS])
def test_the_plan_refuses_a_format_before_formatting_it(port_format: str) -> None:
    began = time.monotonic()
    with pytest.raises(fabric_plan.FabricPlanError) as err:
        fabric_plan.host_plan("npu1", {**HOST, "npu_fabric_port_format": port_format})
    assert time.monotonic() - began < 60  # hang guard: a 300 MB width is never built
    assert err.value.var == "npu_fabric_port_format" and "npu1" in str(err.value)


@pytest.mark.parametrize("port_format", ["{port}", "200GE1/0/{port}", "Eth1/{slot}/{chip:02d}", "{port:>3}"])
def test_short_numeric_formats_are_formatted(port_format: str) -> None:
    plan = fabric_plan.host_plan("npu1", {**HOST, "npu_fabric_port_format": port_format})
    assert len(plan) == 8 and all(len(chip.port) <= 64 for chip in plan)


LABELS = [
    ("comma-in-value", {"npu-tor-id": "tor-1,accelerator-type=x"}, "value 'tor-1,accelerator-type=x'"),
    ("equals-in-value", {"team": "a=b"}, "value 'a=b'"),
    ("comma-in-key", {"team,accelerator-type": "x"}, "key 'team,accelerator-type'"),
    ("equals-in-key", {"accelerator-type=x,team": "a"}, "key 'accelerator-type=x,team'"),
    ("newline-in-value", {"team": "a\nb"}, "value 'a\\nb'"),
    ("empty-key", {"": "a"}, "key ''"),
    ("bad-prefix", {"Example..com/x": "a"}, "key 'Example..com/x'"),
    ("long-value", {"team": "a" * 64}, "is not a Kubernetes label value"),
]


@pytest.mark.parametrize(("labels", "named"), [c[1:] for c in LABELS], ids=[c[0] for c in LABELS])
def test_node_labels_are_never_joined_from_a_separator(labels: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match="label") as err:
        label_syntax.node_labels_flag(labels)
    assert named in str(err.value)
    with pytest.raises(ValueError):
        join.join_configuration(name="w1", endpoint="10.0.0.1:8443", token="abcdef.0123456789abcdef",
                                ca_hash="sha256:" + "a" * 64, cri_socket="unix:///run/containerd/containerd.sock",
                                node_ip=None, labels=labels, taints=[])


def test_ordinary_labels_make_the_flag() -> None:
    labels: dict[str, Any] = {"npu-tor-id": "tor-1", "example.com/rack": "r1", "empty": "", "n": 5}
    flag = label_syntax.node_labels_flag(labels)
    assert flag == "empty=,example.com/rack=r1,n=5,npu-tor-id=tor-1"


def _joining(**hostvars: Any) -> dict[str, Any]:
    module = load_file(ROOT / "roles/kube_node/filter_plugins/ufcctl_kube_node.py")
    token = '{"token": "abcdef.0123456789abcdef", "expires": "2999-01-01T00:00:00+00:00"}'
    result: dict[str, Any] = module.ufcctl_kube_node_join({
        "hostvars": {"npu_accelerator_type": "module-910b-8", **hostvars}, "host_arch": "huawei-arm",
        "npu": True, "labels": {}, "tor_label": "npu-tor-id", "token_text": token, "name": "w1",
        "endpoint": "10.0.0.1:8443", "ca_pem": "", "cri_socket": "unix:///run/containerd/containerd.sock",
        "address": "10.0.0.11", "taint": {"key": "k", "value": "v", "effect": "NoSchedule"}})
    return result


def test_a_worker_gets_no_join_configuration_from_an_injected_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeadm, "ca_hash", lambda pem: "sha256:" + "a" * 64)
    bad = _joining(npu_tor_id="tor-1,accelerator-type=module-a3-16")
    assert bad["doc"] is None and bad["secrets"] == []
    assert "npu-tor-id" in bad["problems"][0] and "tor-1,accelerator-type=module-a3-16" in bad["problems"][0]
    good = _joining(npu_tor_id="tor-1")
    assert good["problems"] == [] and "npu-tor-id=tor-1" in str(good["doc"]["nodeRegistration"])
