"""Inventory values that reach a config file or a kubelet flag are checked as what they are, naming host,
variable and rule (domain/inventory/config_values.py, domain/npu/fabric_plan.py; issue 42)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.unit.domain.test_inventory_validate import base, check, children


def _all_vars(**values: Any) -> dict[str, Any]:
    data = base()
    data["all"]["vars"].update(values)
    return data


def _cp1(**values: Any) -> dict[str, Any]:
    data = base()
    children(data)["kube_control_plane"]["hosts"]["cp1"].update(values)
    return data


def _tor(**values: Any) -> dict[str, Any]:
    data = base()
    children(data)["tor_1"]["vars"].update(values)
    return data


def _fabric(port_format: str) -> dict[str, Any]:
    return _tor(npu_fabric_subnet="192.168.0.0/24", npu_fabric_port_format=port_format)


CASES = [
    ("newline-in-vip-interface", _all_vars(ufc_vip_interface="eth0\n    notify /tmp/x.sh"),
     "host cp1 and more|hosts",
     "ufc_vip_interface 'eth0\\n    notify /tmp/x.sh' is not a network interface name"),
    ("slash-in-lb-interface", _cp1(apiserver_lb_vip_interface="../eth0"), "host cp1",
     "apiserver_lb_vip_interface '../eth0' is not a network interface name"),
    ("server-line-in-ca-file", _all_vars(apiserver_lb_check_ca_file="/ca.crt\n    server evil 6.6.6.6:6443"),
     "hosts", "apiserver_lb_check_ca_file '/ca.crt\\n    server evil 6.6.6.6:6443' is not an absolute path"),
    ("relative-ca-file", _all_vars(apiserver_lb_check_ca_file="ca.crt"), "hosts",
     "apiserver_lb_check_ca_file 'ca.crt' is not an absolute path"),
    ("comma-in-tor-id", _tor(npu_tor_id="tor-1,node-role.kubernetes.io/control-plane="), "hosts npu[1:4]",
     "npu_tor_id 'tor-1,node-role.kubernetes.io/control-plane=' is not a Kubernetes label value"),
    ("comma-in-extra-label", _tor(kube_node_labels={"team": "a,b=c"}), "hosts npu[1:4]",
     "kube_node_labels 'team': 'a,b=c' is not a Kubernetes label value"),
    ("relative-etcd-data-dir", _cp1(etcd_core_data_dir="var/lib/etcd"), "host cp1",
     "etcd_core_data_dir 'var/lib/etcd' is not an absolute path"),
    ("two-clusters-one-data-dir", _cp1(etcd_events_data_dir="/var/lib/etcd-core"), "host cp1",
     "etcd_core_data_dir '/var/lib/etcd-core' and etcd_events_data_dir '/var/lib/etcd-core' are one "
     "directory"),
    ("nested-data-dirs", _cp1(etcd_events_data_dir="/var/lib/etcd-core/events"), "host cp1",
     "are one directory or one inside the other"),
    ("huge-format-width", _fabric("{port:300000000}"), "hosts npu[1:4]",
     "npu_fabric_port_format '{port:300000000}' may use only {port}, {slot} and {chip}"),
    ("format-reaches-into-objects", _fabric("{chip.__class__.__mro__}"), "hosts npu[1:4]",
     "npu_fabric_port_format '{chip.__class__.__mro__}' may use only {port}, {slot} and {chip}"),
    ("format-with-newline", _fabric("Eth1/{port}\nx"), "hosts npu[1:4]", "holds a control character"),
    # the other values and keys that become Node labels through kubelet's comma-separated --node-labels
    ("comma-in-host-arch", _tor(npu_host_arch="huawei-arm,accelerator-type=x"), "hosts npu[1:4]",
     "npu_host_arch 'huawei-arm,accelerator-type=x' is not a Kubernetes label value"),
    ("comma-in-extra-label-key", _tor(kube_node_labels={"accelerator-type=x,team": "a"}), "hosts npu[1:4]",
     "kube_node_labels key 'accelerator-type=x,team' is not a Kubernetes label key"),
    ("extra-labels-as-text", _tor(kube_node_labels="team=a,accelerator-type=x"), "hosts npu[1:4]",
     "kube_node_labels 'team=a,accelerator-type=x' is not a mapping"),
    ("comma-in-tor-label-key", _all_vars(kube_node_tor_label="npu-tor-id,accelerator-type"), "hosts",
     "kube_node_tor_label 'npu-tor-id,accelerator-type' is not a Kubernetes label key"),
    ("comma-in-calico-tor-label", _all_vars(cni_calico_tor_label="tor,x"), "hosts",
     "cni_calico_tor_label 'tor,x' is not a Kubernetes label key"),
    # a format is checked on every host, fabric plan or not, and reported once
    ("huge-width-without-plan", _tor(npu_fabric_port_format="{port:300000000}"), "hosts npu[1:4]",
     "npu_fabric_port_format '{port:300000000}' may use only {port}, {slot} and {chip}"),
    ("attribute-without-plan", _tor(npu_fabric_port_format="{chip.__class__.__mro__}"), "hosts npu[1:4]",
     "npu_fabric_port_format '{chip.__class__.__mro__}' may use only"),
]


@pytest.mark.parametrize(("data", "subject", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_value_is_checked_as_what_it_is(data: dict[str, Any], subject: str, message: str) -> None:
    began = time.monotonic()
    problems, _ = check(data)
    assert time.monotonic() - began < 60  # hang guard: a 300 MB width must not be formatted
    hits = [p for p in problems if message in p]
    assert len(hits) == 1, problems
    assert any(part in hits[0] for part in subject.split("|"))


@pytest.mark.parametrize("data", [
    _all_vars(ufc_vip_interface="bond0.100", apiserver_lb_check_ca_file="/etc/kubernetes/pki/ca.crt"),
    _tor(npu_tor_id="tor-1.rack_2", kube_node_labels={"team": "infra", "example.com/rack": "r1"},
         npu_host_arch="huawei-x86"),
    _all_vars(kube_node_tor_label="example.com/tor", cni_calico_tor_label="example.com/tor"),
    _cp1(etcd_core_data_dir="/data/etcd-core", etcd_events_data_dir="/data/etcd-events"),
    _fabric("Eth1/{slot}/{chip:02d}"),
    _all_vars(ufc_vip_interface="{{ lookup('env', 'IFACE') }}"),
], ids=["interface-and-path", "label-values", "tor-label-key", "own-data-dirs", "short-numeric-spec",
        "templated"])
def test_ordinary_values_pass(data: dict[str, Any]) -> None:
    problems, _ = check(data)
    checked = ("interface", "ca_file", "label value", "label key", "data_dir", "port_format", "mapping")
    assert [p for p in problems if any(word in p for word in checked)] == []
